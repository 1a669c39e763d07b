#include "hub/hub_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "hub/catalog.h"

namespace unmask::hub {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string ReadSmallFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

CachedSnapshot ReadSnapshot(const fs::path& dir) {
  CachedSnapshot snap;
  snap.commit = dir.filename().string();
  snap.path = dir.string();
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    if (it->is_directory(ec)) continue;
    snap.files.push_back(fs::relative(p, dir, ec).generic_string());
    std::error_code ec2;
    const uint64_t size = fs::file_size(p, ec2);  // follows the symlink to its blob
    if (ec2) {
      snap.complete = false;
    } else {
      snap.size_bytes += size;
    }
  }
  std::sort(snap.files.begin(), snap.files.end());
  if (snap.files.empty()) snap.complete = false;
  return snap;
}

CachedRepo ReadRepo(const fs::path& dir, const std::string& repo) {
  CachedRepo r;
  r.repo = repo;
  r.path = dir.string();
  std::error_code ec;
  for (fs::directory_iterator it(dir / "blobs", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    const uint64_t size = it->file_size(ec2);
    if (ec2) continue;
    if (it->path().extension() == ".incomplete") {
      r.incomplete_bytes += size;
    }
    r.blob_bytes += size;
  }
  for (fs::directory_iterator it(dir / "snapshots", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory()) r.snapshots.push_back(ReadSnapshot(it->path()));
  }
  for (fs::recursive_directory_iterator it(dir / "refs", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_directory()) continue;
    const std::string commit = ReadSmallFile(it->path());
    const std::string ref = fs::relative(it->path(), dir / "refs").generic_string();
    for (CachedSnapshot& s : r.snapshots) {
      if (s.commit == commit) s.refs.push_back(ref);
    }
  }
  std::sort(r.snapshots.begin(), r.snapshots.end(),
            [](const CachedSnapshot& a, const CachedSnapshot& b) { return a.commit < b.commit; });
  return r;
}

}  // namespace

std::string CacheDir(const std::string& override_dir) {
  if (!override_dir.empty()) return override_dir;
  if (std::string v = Env("HF_HUB_CACHE"); !v.empty()) return v;
  if (std::string v = Env("HF_HOME"); !v.empty()) return v + "/hub";
  if (std::string v = Env("XDG_CACHE_HOME"); !v.empty()) return v + "/huggingface/hub";
  std::string home = Env("HOME");
  if (home.empty()) home = "/tmp";
  return home + "/.cache/huggingface/hub";
}

std::string RepoFolderName(const std::string& repo) {
  std::string out = "models--";
  for (char c : repo) {
    if (c == '/') {
      out += "--";
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> RepoFromFolderName(const std::string& folder) {
  static const std::string kPrefix = "models--";
  if (folder.rfind(kPrefix, 0) != 0) return std::nullopt;
  const std::string rest = folder.substr(kPrefix.size());
  const size_t sep = rest.find("--");
  if (sep == std::string::npos) return std::nullopt;
  std::string repo = rest.substr(0, sep) + "/" + rest.substr(sep + 2);
  if (!IsValidRepoId(repo)) return std::nullopt;
  return repo;
}

std::vector<CachedRepo> ListCache(const std::string& cache_dir) {
  std::vector<CachedRepo> out;
  std::error_code ec;
  for (fs::directory_iterator it(cache_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory()) continue;
    std::optional<std::string> repo = RepoFromFolderName(it->path().filename().string());
    if (!repo) continue;
    out.push_back(ReadRepo(it->path(), *repo));
  }
  std::sort(out.begin(), out.end(),
            [](const CachedRepo& a, const CachedRepo& b) { return Lower(a.repo) < Lower(b.repo); });
  return out;
}

std::optional<CachedRepo> FindCachedRepo(const std::string& cache_dir, const std::string& repo) {
  const fs::path exact = fs::path(cache_dir) / RepoFolderName(repo);
  std::error_code ec;
  if (fs::is_directory(exact, ec)) return ReadRepo(exact, repo);
  for (CachedRepo& r : ListCache(cache_dir)) {
    if (Lower(r.repo) == Lower(repo)) return std::move(r);
  }
  return std::nullopt;
}

std::optional<CachedSnapshot> FindSnapshot(const CachedRepo& repo, const std::string& revision) {
  for (const CachedSnapshot& s : repo.snapshots) {
    if (!s.complete) continue;
    if (std::find(s.refs.begin(), s.refs.end(), revision) != s.refs.end()) return s;
  }
  const bool hex_prefix = revision.size() >= 7 && revision.size() <= 40 &&
                          std::all_of(revision.begin(), revision.end(), [](char c) {
                            return std::isxdigit(static_cast<unsigned char>(c)) != 0;
                          });
  if (hex_prefix) {
    for (const CachedSnapshot& s : repo.snapshots) {
      if (s.complete && s.commit.rfind(Lower(revision), 0) == 0) return s;
    }
  }
  return std::nullopt;
}

StatusOr<uint64_t> RemoveCachedRepo(const std::string& cache_dir, const std::string& repo) {
  std::optional<CachedRepo> r = FindCachedRepo(cache_dir, repo);
  if (!r) return NotFoundError(repo + " is not in the cache " + cache_dir);
  std::error_code ec;
  fs::remove_all(r->path, ec);
  if (ec) return InternalError("cannot remove " + r->path + ": " + ec.message());
  fs::remove_all(fs::path(cache_dir) / ".locks" / fs::path(r->path).filename(), ec);
  return r->blob_bytes;
}

std::string FormatBytes(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < 1000) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else if (b < 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  } else if (b < 1e9) {
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  }
  return buf;
}

}  // namespace unmask::hub
