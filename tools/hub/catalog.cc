#include "hub/catalog.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hub/digest.h"

namespace unmask::hub {
namespace {

using json = nlohmann::ordered_json;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// "family:tag", both parts of [a-z0-9._-], 1..64 characters each.
bool IsValidName(std::string_view name) {
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos || name.find(':', colon + 1) != std::string_view::npos) {
    return false;
  }
  const std::string_view parts[2] = {name.substr(0, colon), name.substr(colon + 1)};
  for (std::string_view p : parts) {
    if (p.empty() || p.size() > 64) return false;
    for (char c : p) {
      if (!IsNameChar(c)) return false;
    }
  }
  return true;
}

bool IsFlagName(std::string_view key) {
  if (key.empty() || key.size() > 64 || key.front() == '-') return false;
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A JSON scalar as the word a command line would carry.
StatusOr<std::string> FlagValue(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return std::string(v.get<bool>() ? "true" : "false");
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) {
    std::ostringstream os;
    os << v.get<double>();
    return os.str();
  }
  return InvalidArgumentError("a default must be a string, number or boolean");
}

Status ParseEntry(const json& m, CatalogEntry* e) {
  if (!m.is_object()) return InvalidArgumentError("an entry is not an object");
  auto str = [&](const char* key, std::string* out, bool required) -> Status {
    if (!m.contains(key)) {
      return required ? InvalidArgumentError(std::string(key) + " is missing") : Status::Ok();
    }
    if (!m[key].is_string()) return InvalidArgumentError(std::string(key) + " is not a string");
    *out = m[key].get<std::string>();
    return Status::Ok();
  };
  UNMASK_RETURN_IF_ERROR(str("name", &e->name, true));
  if (!IsValidName(e->name)) {
    return InvalidArgumentError("name '" + e->name + "' is not family:tag of [a-z0-9._-]");
  }
  UNMASK_RETURN_IF_ERROR(str("repo", &e->repo, true));
  if (!IsValidRepoId(e->repo)) {
    return InvalidArgumentError("repo '" + e->repo + "' is not a Hugging Face id org/name");
  }
  e->revision = "main";
  UNMASK_RETURN_IF_ERROR(str("revision", &e->revision, false));
  if (!IsValidRevision(e->revision)) {
    return InvalidArgumentError("revision '" + e->revision + "' is not a valid revision");
  }
  UNMASK_RETURN_IF_ERROR(str("description", &e->description, false));
  UNMASK_RETURN_IF_ERROR(str("license", &e->license, false));
  UNMASK_RETURN_IF_ERROR(str("source", &e->source, false));
  UNMASK_RETURN_IF_ERROR(str("defaults_source", &e->defaults_source, false));
  if (m.contains("include")) {
    if (!m["include"].is_array()) return InvalidArgumentError("include is not a list");
    for (const json& p : m["include"]) {
      if (!p.is_string() || p.get<std::string>().empty()) {
        return InvalidArgumentError("include holds something other than a pattern");
      }
      e->include.push_back(p.get<std::string>());
    }
  }
  if (m.contains("files")) {
    if (!m["files"].is_array()) return InvalidArgumentError("files is not a list");
    for (const json& f : m["files"]) {
      if (!f.is_object() || !f.contains("path") || !f["path"].is_string()) {
        return InvalidArgumentError("a file has no path");
      }
      PinnedFile p;
      p.path = f["path"].get<std::string>();
      if (!IsSafeRepoPath(p.path)) return InvalidArgumentError("unsafe file path '" + p.path + "'");
      if (f.contains("size")) {
        if (!f["size"].is_number_unsigned()) {
          return InvalidArgumentError(p.path + ": size is not a byte count");
        }
        p.size = f["size"].get<uint64_t>();
      }
      if (f.contains("sha256")) {
        if (!f["sha256"].is_string() || !IsHex(f["sha256"].get<std::string>(), 64)) {
          return InvalidArgumentError(p.path + ": sha256 is not 64 hexadecimal digits");
        }
        p.sha256 = Lower(f["sha256"].get<std::string>());
      }
      e->files.push_back(std::move(p));
    }
  }
  if (m.contains("size_bytes")) {
    if (!m["size_bytes"].is_number_unsigned()) {
      return InvalidArgumentError("size_bytes is not a byte count");
    }
    e->size_bytes = m["size_bytes"].get<uint64_t>();
  }
  if (m.contains("defaults")) {
    if (!m["defaults"].is_object()) return InvalidArgumentError("defaults is not an object");
    for (const auto& [key, value] : m["defaults"].items()) {
      if (!IsFlagName(key)) {
        return InvalidArgumentError("default '" + key +
                                    "' is not a flag name (such as block-length)");
      }
      StatusOr<std::string> v = FlagValue(value);
      if (!v.ok()) return InvalidArgumentError("default '" + key + "': " + v.status().message());
      e->defaults.emplace_back(key, *v);
    }
  }
  return Status::Ok();
}

}  // namespace

std::string CatalogEntry::DefaultsAsFlags() const {
  std::string out;
  for (const auto& [key, value] : defaults) {
    if (!out.empty()) out += ' ';
    out += "--" + key + ' ' + value;
  }
  return out;
}

const CatalogEntry* Catalog::Find(std::string_view name) const {
  for (const CatalogEntry& e : models) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const CatalogEntry* Catalog::FindRepo(std::string_view repo) const {
  const std::string want = Lower(repo);
  for (const CatalogEntry& e : models) {
    if (Lower(e.repo) == want) return &e;
  }
  return nullptr;
}

StatusOr<Catalog> ParseCatalog(std::string_view text, std::string origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const std::exception& e) {
    return InvalidArgumentError(origin + ": not JSON (" + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("catalog_version") ||
      !doc["catalog_version"].is_number_integer()) {
    return InvalidArgumentError(origin + ": catalog_version is missing");
  }
  if (doc["catalog_version"].get<int64_t>() != kCatalogVersion) {
    return InvalidArgumentError(origin + ": catalog_version " + doc["catalog_version"].dump() +
                                " (this unmask reads version " + std::to_string(kCatalogVersion) +
                                ")");
  }
  if (!doc.contains("models") || !doc["models"].is_array()) {
    return InvalidArgumentError(origin + ": models is not a list");
  }
  Catalog catalog;
  catalog.origin = origin;
  std::set<std::string> names;
  for (size_t i = 0; i < doc["models"].size(); ++i) {
    CatalogEntry e;
    Status s = ParseEntry(doc["models"][i], &e);
    if (!s.ok()) {
      return InvalidArgumentError(origin + ": models[" + std::to_string(i) + "]" +
                                  (e.name.empty() ? "" : " (" + e.name + ")") + ": " + s.message());
    }
    if (!names.insert(e.name).second) {
      return InvalidArgumentError(origin + ": name '" + e.name + "' appears twice");
    }
    catalog.models.push_back(std::move(e));
  }
  return catalog;
}

StatusOr<Catalog> LoadCatalog() {
  const char* env = std::getenv("UNMASK_CATALOG");
  if (env == nullptr || *env == '\0')
    return ParseCatalog(kBuiltinCatalogJson, "built-in catalogue");
  std::ifstream in(env, std::ios::binary);
  if (!in) return NotFoundError("cannot read $UNMASK_CATALOG file " + std::string(env));
  std::ostringstream os;
  os << in.rdbuf();
  if (os.str().size() > (size_t{16} << 20)) {
    return InvalidArgumentError(std::string(env) + ": a catalogue over 16 MiB");
  }
  return ParseCatalog(os.str(), env);
}

bool IsValidRepoId(std::string_view repo) {
  const size_t slash = repo.find('/');
  if (slash == std::string_view::npos || repo.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  for (std::string_view p : {repo.substr(0, slash), repo.substr(slash + 1)}) {
    if (p.empty() || p.size() > 96) return false;
    if (p.front() == '.' || p.front() == '-' || p.back() == '.' || p.back() == '-') return false;
    if (p.find("--") != std::string_view::npos || p.find("..") != std::string_view::npos) {
      return false;
    }
    for (char c : p) {
      const bool ok =
          std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      if (!ok) return false;
    }
  }
  return true;
}

bool IsValidRevision(std::string_view revision) {
  if (revision.empty() || revision.size() > 255 || revision.front() == '/' ||
      revision.find("..") != std::string_view::npos) {
    return false;
  }
  for (char c : revision) {
    if (c <= ' ' || c >= 127 || c == '\\' || c == '?' || c == '#' || c == '%') return false;
  }
  return true;
}

bool IsSafeRepoPath(std::string_view path) {
  if (path.empty() || path.size() > 1024 || path.front() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return false;
  }
  return true;
}

}  // namespace unmask::hub
