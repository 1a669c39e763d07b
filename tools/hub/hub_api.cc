#include "hub/hub_api.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "hub/catalog.h"
#include "hub/digest.h"
#include "hub/hub_http.h"

namespace unmask::hub {
namespace {

using json = nlohmann::json;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool Matches(const std::string& pattern, const std::string& path) {
  return fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
}

std::string ReadToken(const std::string& path) {
  std::ifstream in(path);
  std::string t;
  std::getline(in, t);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  return t;
}

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

std::string HubEndpoint() {
  std::string e = "https://huggingface.co";
  if (const char* v = std::getenv("HF_ENDPOINT"); v != nullptr && *v != '\0') e = v;
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::string HubToken() {
  if (const char* v = std::getenv("HF_TOKEN"); v != nullptr && *v != '\0') return v;
  if (const char* v = std::getenv("HF_TOKEN_PATH"); v != nullptr && *v != '\0') return ReadToken(v);
  if (const char* v = std::getenv("HF_HOME"); v != nullptr && *v != '\0') {
    return ReadToken(std::string(v) + "/token");
  }
  if (const char* v = std::getenv("HOME"); v != nullptr && *v != '\0') {
    return ReadToken(std::string(v) + "/.cache/huggingface/token");
  }
  return "";
}

std::string RepoInfoUrl(const std::string& endpoint, const std::string& repo,
                        const std::string& revision) {
  return endpoint + "/api/models/" + repo + "/revision/" + UrlEncodePath(revision, false) +
         "?blobs=true";
}

std::string ResolveUrl(const std::string& endpoint, const std::string& repo,
                       const std::string& commit, const std::string& path) {
  return endpoint + "/" + repo + "/resolve/" + commit + "/" + UrlEncodePath(path, true);
}

StatusOr<RepoInfo> ParseRepoInfo(std::string_view json_text, const std::string& repo) {
  const std::string where = "the hub's answer for " + repo + ": ";
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const std::exception& e) {
    return DataLossError(where + "not JSON (" + e.what() + ")");
  }
  if (!doc.is_object()) return DataLossError(where + "not an object");
  RepoInfo info;
  info.repo = repo;
  if (!doc.contains("sha") || !doc["sha"].is_string() ||
      !IsHex(doc["sha"].get<std::string>(), 40)) {
    return DataLossError(where + "no commit (sha)");
  }
  info.commit = Lower(doc["sha"].get<std::string>());
  if (!doc.contains("siblings") || !doc["siblings"].is_array()) {
    return DataLossError(where + "no file list (siblings)");
  }
  std::set<std::string> seen;
  for (const json& s : doc["siblings"]) {
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) {
      return DataLossError(where + "a file without rfilename");
    }
    RepoFile f;
    f.path = s["rfilename"].get<std::string>();
    if (!IsSafeRepoPath(f.path)) {
      return DataLossError(where + "unsafe file path '" + f.path + "' refused");
    }
    if (!seen.insert(f.path).second) return DataLossError(where + f.path + " listed twice");
    if (s.contains("lfs") && s["lfs"].is_object()) {
      const json& l = s["lfs"];
      if (!l.contains("sha256") || !l["sha256"].is_string() ||
          !IsHex(l["sha256"].get<std::string>(), 64) || !l.contains("size") ||
          !l["size"].is_number_unsigned()) {
        return DataLossError(where + f.path + ": LFS metadata without sha256 and size");
      }
      f.lfs = true;
      f.etag = Lower(l["sha256"].get<std::string>());
      f.size = l["size"].get<uint64_t>();
    } else {
      if (!s.contains("blobId") || !s["blobId"].is_string() ||
          !IsHex(s["blobId"].get<std::string>(), 40) || !s.contains("size") ||
          !s["size"].is_number_unsigned()) {
        return DataLossError(where + f.path + ": no blobId and size (cannot be verified)");
      }
      f.etag = Lower(s["blobId"].get<std::string>());
      f.size = s["size"].get<uint64_t>();
    }
    info.files.push_back(std::move(f));
  }
  return info;
}

std::string HubErrorMessage(long status, const std::map<std::string, std::string>& headers,
                            std::string_view body, const std::string& what) {
  std::string code;
  if (auto it = headers.find("x-error-code"); it != headers.end()) code = it->second;
  std::string message;
  if (auto it = headers.find("x-error-message"); it != headers.end()) message = it->second;
  if (message.empty()) {
    try {
      json j = json::parse(body);
      if (j.is_object() && j.contains("error") && j["error"].is_string()) {
        message = j["error"].get<std::string>();
      }
    } catch (const std::exception&) {
    }
  }
  std::string out = what + ": HTTP " + std::to_string(status);
  if (code == "GatedRepo" || status == 401 || status == 403) {
    out += code == "GatedRepo" || status == 403
               ? " (a gated or private repository: accept its terms on the model page and set "
                 "HF_TOKEN to a token of that account)"
               : " (not found, or private: set HF_TOKEN if it is yours)";
  } else if (code == "RepoNotFound") {
    out += " (no such repository)";
  } else if (code == "RevisionNotFound") {
    out += " (no such revision: a branch, tag or commit of the repository)";
  } else if (code == "EntryNotFound") {
    out += " (no such file in the repository)";
  } else if (status == 404) {
    out += " (not found)";
  } else if (status == 429 || status >= 500) {
    out += " (the hub is busy or failing: try again later)";
  }
  if (!message.empty()) out += ": " + message.substr(0, 300);
  return out;
}

std::string GgufQuantName(std::string_view file_name) {
  std::string name = BaseName(file_name);
  if (!EndsWith(Lower(name), ".gguf")) return "";
  name.resize(name.size() - 5);
  // A split file: "...-Q4_K_M-00001-of-00003".
  const size_t of = Lower(name).rfind("-of-");
  if (of != std::string::npos && of >= 6 && name[of - 6] == '-') name.resize(of - 6);
  const size_t sep = name.find_last_of("-.");
  if (sep == std::string::npos) return "";
  const std::string q = name.substr(sep + 1);
  const std::string u = Upper(q);
  const bool looks = !u.empty() && (u[0] == 'Q' || u.rfind("IQ", 0) == 0 || u == "F16" ||
                                    u == "BF16" || u == "F32" || u.rfind("TQ", 0) == 0);
  return looks ? u : "";
}

StatusOr<std::vector<RepoFile>> SelectFiles(const RepoInfo& info,
                                            const std::vector<std::string>& include,
                                            const std::vector<std::string>& exclude,
                                            const std::string& quant) {
  std::vector<RepoFile> out;
  bool has_safetensors = false;
  std::vector<const RepoFile*> ggufs;
  for (const RepoFile& f : info.files) {
    const std::string l = Lower(f.path);
    has_safetensors = has_safetensors || EndsWith(l, ".safetensors");
    if (EndsWith(l, ".gguf") && BaseName(l).rfind("mmproj", 0) != 0) ggufs.push_back(&f);
  }
  if (!include.empty()) {
    for (const RepoFile& f : info.files) {
      for (const std::string& p : include) {
        if (Matches(p, f.path)) {
          out.push_back(f);
          break;
        }
      }
    }
  } else if (has_safetensors || ggufs.empty()) {
    static const char* const kOtherWeights[] = {".bin",     ".pt",   ".pth",  ".ckpt", ".h5",
                                                ".msgpack", ".onnx", ".gguf", ".ot",   ".tflite"};
    for (const RepoFile& f : info.files) {
      const std::string l = Lower(f.path);
      bool other = l == ".gitattributes";
      for (const char* ext : kOtherWeights) other = other || EndsWith(l, ext);
      if (!other) out.push_back(f);
    }
  } else {
    std::set<std::string> quants;
    for (const RepoFile* g : ggufs) quants.insert(GgufQuantName(g->path));
    std::string want = Upper(quant);
    if (want.empty()) {
      if (ggufs.size() == 1 || quants.size() == 1) {
        want = *quants.begin();
      } else if (quants.count("Q4_K_M") != 0) {
        want = "Q4_K_M";
      } else {
        std::string list;
        for (const std::string& q : quants) list += (list.empty() ? "" : ", ") + q;
        return InvalidArgumentError(info.repo + " has several GGUF files: name one as " +
                                    info.repo + ":QUANT (" + list + ") or give --include");
      }
    } else if (quants.count(want) == 0) {
      std::string list;
      for (const std::string& q : quants) list += (list.empty() ? "" : ", ") + q;
      return InvalidArgumentError(info.repo + " has no " + want + " GGUF (it has " + list + ")");
    }
    for (const RepoFile& f : info.files) {
      const std::string l = Lower(f.path);
      if (EndsWith(l, ".gguf")) {
        if (BaseName(l).rfind("mmproj", 0) != 0 && GgufQuantName(f.path) == want) out.push_back(f);
      } else if (l != ".gitattributes" && !EndsWith(l, ".bin") && !EndsWith(l, ".safetensors")) {
        out.push_back(f);
      }
    }
  }
  std::vector<RepoFile> kept;
  for (RepoFile& f : out) {
    bool drop = false;
    for (const std::string& p : exclude) drop = drop || Matches(p, f.path);
    if (!drop) kept.push_back(std::move(f));
  }
  if (kept.empty()) {
    return InvalidArgumentError("no file of " + info.repo + " matches the selection (" +
                                std::to_string(info.files.size()) + " files in the repository)");
  }
  return kept;
}

}  // namespace unmask::hub
