#include "hub/pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "hub/digest.h"
#include "hub/hub_api.h"
#include "hub/hub_cache.h"

namespace unmask::hub {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxRepoInfoBytes = size_t{64} << 20;

std::string StripHubPrefix(std::string_view text) {
  for (std::string_view p : {"https://huggingface.co/", "http://huggingface.co/", "huggingface.co/",
                             "https://hf.co/", "hf.co/"}) {
    if (text.rfind(p, 0) == 0) return std::string(text.substr(p.size()));
  }
  return std::string(text);
}

class FileLock {
 public:
  explicit FileLock(const fs::path& path) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the flock
  }
  // Non-blocking first, to say why we wait.
  bool TryLock() { return fd_ < 0 || ::flock(fd_, LOCK_EX | LOCK_NB) == 0; }
  void Lock() {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }

 private:
  int fd_ = -1;
};

uint64_t FileSize(const fs::path& p) {
  std::error_code ec;
  const uint64_t n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

void Emit(const PullOptions& o, PullEvent e) {
  if (o.on_event) o.on_event(e);
}

Status WriteFileAtomic(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return DataLossError("cannot write " + tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) return DataLossError("cannot write " + path.string() + ": " + ec.message());
  return Status::Ok();
}

// snapshots/<commit>/<path> -> ../../(../ per directory of path)blobs/<etag>
Status LinkIntoSnapshot(const fs::path& repo_dir, const std::string& commit, const RepoFile& f) {
  const fs::path link = repo_dir / "snapshots" / commit / f.path;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec)
    return DataLossError("cannot create " + link.parent_path().string() + ": " + ec.message());
  std::string target = "../../";
  for (char c : f.path) {
    if (c == '/') target += "../";
  }
  target += "blobs/" + f.etag;
  const fs::path tmp = link.string() + ".tmp" + std::to_string(::getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (ec) return DataLossError("cannot link " + link.string() + ": " + ec.message());
  fs::rename(tmp, link, ec);
  if (ec) return DataLossError("cannot link " + link.string() + ": " + ec.message());
  return Status::Ok();
}

Status VerifyBlob(const fs::path& blob, const RepoFile& f) {
  Digest d(f.lfs ? DigestKind::kSha256 : DigestKind::kGitBlobSha1, f.size);
  UNMASK_RETURN_IF_ERROR(HashFilePrefix(blob.string(), f.size, &d));
  if (FileSize(blob) != f.size) return DataLossError(f.path + ": size differs from the hub's");
  const std::string got = d.HexFinal();
  if (got != f.etag) {
    return DataLossError(f.path + ": checksum mismatch (" +
                         std::string(f.lfs ? "sha256" : "git sha1") + " expected " + f.etag +
                         ", got " + got + ")");
  }
  return Status::Ok();
}

// A network failure worth retrying: not an interrupt, not a certificate the client refuses.
bool IsTransient(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition && s.message() != "interrupted" &&
         s.message().find("not trusted") == std::string::npos;
}

double BackoffSeconds(const PullOptions& o, int attempt,
                      const std::map<std::string, std::string>& h) {
  double s = o.retry_base_s * static_cast<double>(1 << std::min(attempt, 6));
  if (auto it = h.find("retry-after"); it != h.end()) {
    char* end = nullptr;
    const double ra = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && ra >= 0) s = std::max(s, ra);
  }
  return std::min(s, 30.0);
}

// Downloads one file into its blob (resuming blobs/<etag>.incomplete). Returns the bytes that
// were already on disk.
StatusOr<uint64_t> FetchFile(const RepoInfo& info, const RepoFile& f, const fs::path& repo_dir,
                             const std::string& endpoint, const HttpOptions& http,
                             const PullOptions& o) {
  const fs::path blob = repo_dir / "blobs" / f.etag;
  const fs::path part = blob.string() + ".incomplete";
  const std::string url = ResolveUrl(endpoint, info.repo, info.commit, f.path);
  int failures = 0;
  bool restarted_after_mismatch = false;
  uint64_t reused = FileSize(part);
  for (;;) {
    uint64_t offset = FileSize(part);
    if (offset > f.size) {  // not a prefix of this file
      fs::remove(part);
      offset = 0;
    }
    std::FILE* out = std::fopen(part.c_str(), offset > 0 ? "r+b" : "wb");
    if (out == nullptr) return DataLossError("cannot write " + part.string());
    std::fseek(out, static_cast<long>(offset), SEEK_SET);
    Digest digest(f.lfs ? DigestKind::kSha256 : DigestKind::kGitBlobSha1, f.size);
    if (offset > 0) {
      Status s = HashFilePrefix(part.string(), offset, &digest);
      if (!s.ok()) {
        std::fclose(out);
        return s;
      }
    }
    std::unique_ptr<Digest> fresh;
    Digest* d = &digest;
    PullEvent progress{PullEvent::Kind::kFileProgress, f.path, offset, f.size, 0, ""};
    StatusOr<DownloadResult> r = HttpDownload(
        url, http, offset, out, [&](const char* p, size_t n) { d->Update(p, n); },
        [&] {
          fresh = std::make_unique<Digest>(f.lfs ? DigestKind::kSha256 : DigestKind::kGitBlobSha1,
                                           f.size);
          d = fresh.get();
          offset = 0;
          reused = 0;
        },
        [&](uint64_t written) {
          progress.done = offset + written;
          Emit(o, progress);
        });
    std::fclose(out);
    if (!r.ok()) {
      if (r.status().message() == "interrupted" || r.status().code() == StatusCode::kDataLoss) {
        return r.status().message() == "interrupted"
                   ? FailedPreconditionError("interrupted: " + std::to_string(FileSize(part)) +
                                             " bytes of " + f.path +
                                             " kept; run the same pull again to resume")
                   : r.status();
      }
      if (!IsTransient(r.status())) return r.status();
      const bool progressed = FileSize(part) > offset;
      failures = progressed ? 1 : failures + 1;
      if (failures >= o.max_attempts) {
        return FailedPreconditionError(r.status().message() + " (" + std::to_string(failures) +
                                       " attempts; " + std::to_string(FileSize(part)) +
                                       " bytes kept: run the same pull again to resume)");
      }
      Emit(o, {PullEvent::Kind::kNote, f.path, 0, 0, 0,
               r.status().message() + "; resuming (attempt " + std::to_string(failures + 1) + ")"});
      std::this_thread::sleep_for(std::chrono::duration<double>(BackoffSeconds(o, failures, {})));
      continue;
    }
    const long status = r->status;
    if (status == 416 && offset == f.size) {
      // Complete already: verify below.
    } else if (status == 416) {
      fs::remove(part);
      continue;
    } else if (status != 200 && status != 206) {
      const std::string msg =
          HubErrorMessage(status, r->headers, r->body_start, info.repo + "/" + f.path);
      if (status == 429 || status >= 500 || status == 408) {
        failures += 1;
        if (failures >= o.max_attempts) return FailedPreconditionError(msg);
        Emit(o, {PullEvent::Kind::kNote, f.path, 0, 0, 0, msg + "; retrying"});
        std::this_thread::sleep_for(
            std::chrono::duration<double>(BackoffSeconds(o, failures, r->headers)));
        continue;
      }
      return status == 404 ? NotFoundError(msg) : FailedPreconditionError(msg);
    }
    const uint64_t have = FileSize(part);
    if (have < f.size) {  // the connection ended early without an error: resume
      failures = r->written > 0 ? 1 : failures + 1;
      if (failures >= o.max_attempts) {
        return FailedPreconditionError(url + ": the transfer keeps ending early (" +
                                       std::to_string(have) + " of " + std::to_string(f.size) +
                                       " bytes kept: run the same pull again to resume)");
      }
      Emit(o, {PullEvent::Kind::kNote, f.path, 0, 0, 0, "the transfer ended early; resuming"});
      continue;
    }
    std::string got;
    if (status == 416) {
      Digest whole(f.lfs ? DigestKind::kSha256 : DigestKind::kGitBlobSha1, f.size);
      UNMASK_RETURN_IF_ERROR(HashFilePrefix(part.string(), f.size, &whole));
      got = whole.HexFinal();
    } else {
      got = d->HexFinal();
    }
    if (have != f.size || got != f.etag) {
      fs::remove(part);
      if (!restarted_after_mismatch) {
        restarted_after_mismatch = true;
        Emit(o, {PullEvent::Kind::kNote, f.path, 0, 0, 0,
                 "checksum mismatch; downloading the file again from its start"});
        reused = 0;
        continue;
      }
      return DataLossError(info.repo + "/" + f.path + ": checksum mismatch (" +
                           std::string(f.lfs ? "sha256" : "git sha1") + " expected " + f.etag +
                           ", got " + got + ", " + std::to_string(have) + " of " +
                           std::to_string(f.size) + " bytes); the download was deleted");
    }
    std::error_code ec;
    fs::rename(part, blob, ec);
    if (ec) return DataLossError("cannot rename " + part.string() + ": " + ec.message());
    return reused;
  }
}

}  // namespace

bool LooksLikeModelReference(std::string_view text, const Catalog& catalog) {
  if (catalog.Find(text) != nullptr) return true;
  std::string t = StripHubPrefix(text);
  const size_t colon = t.find(':');
  if (colon != std::string::npos) t.resize(colon);
  // A mistyped file name is a missing file, not a repository.
  for (std::string_view ext : {".gguf", ".safetensors", ".json", ".bin"}) {
    if (t.size() > ext.size() && t.compare(t.size() - ext.size(), ext.size(), ext) == 0) {
      return false;
    }
  }
  return IsValidRepoId(t);
}

StatusOr<ModelReference> ParseModelReference(std::string_view text, const Catalog& catalog) {
  ModelReference ref;
  ref.text = std::string(text);
  if (const CatalogEntry* e = catalog.Find(text); e != nullptr) {
    ref.entry = e;
    ref.repo = e->repo;
    ref.revision = e->revision;
    return ref;
  }
  std::string t = StripHubPrefix(text);
  const size_t colon = t.find(':');
  if (colon != std::string::npos) {
    ref.quant = t.substr(colon + 1);
    t.resize(colon);
    if (ref.quant.empty() || ref.quant.size() > 32) {
      return InvalidArgumentError("'" + std::string(text) +
                                  "': an empty or long quantization name");
    }
  }
  if (!IsValidRepoId(t)) {
    return InvalidArgumentError("'" + std::string(text) +
                                "' is neither a catalogue name (see 'unmask list --catalog') nor a "
                                "Hugging Face id org/name");
  }
  ref.repo = t;
  ref.entry = catalog.FindRepo(t);
  if (ref.entry != nullptr) ref.revision = ref.entry->revision;
  return ref;
}

StatusOr<PullResult> Pull(const ModelReference& ref, const PullOptions& options) {
  const std::string cache = CacheDir(options.cache_dir);
  const std::string endpoint = options.endpoint.empty() ? HubEndpoint() : options.endpoint;
  HttpOptions http = options.http;
  if (http.token.empty()) http.token = HubToken();
  PullResult result;
  result.repo = ref.repo;
  result.revision = !options.revision.empty() ? options.revision
                    : !ref.revision.empty()   ? ref.revision
                                              : "main";
  if (!IsValidRevision(result.revision)) {
    return InvalidArgumentError("--revision '" + result.revision + "' is not a valid revision");
  }

  const std::string info_url = RepoInfoUrl(endpoint, ref.repo, result.revision);
  StatusOr<HttpResponse> resp = InternalError("no request made");
  for (int attempt = 1;; ++attempt) {
    resp = HttpGet(info_url, http, kMaxRepoInfoBytes);
    const bool transient =
        !resp.ok() ? IsTransient(resp.status()) : resp->status == 429 || resp->status >= 500;
    if (!transient || attempt >= options.max_attempts) break;
    Emit(options, {PullEvent::Kind::kNote, "", 0, 0, 0,
                   (resp.ok() ? "HTTP " + std::to_string(resp->status) : resp.status().message()) +
                       "; retrying"});
    std::this_thread::sleep_for(std::chrono::duration<double>(BackoffSeconds(
        options, attempt, resp.ok() ? resp->headers : std::map<std::string, std::string>{})));
  }
  if (!resp.ok()) return resp.status();
  if (resp->status != 200) {
    const std::string msg =
        HubErrorMessage(resp->status, resp->headers, resp->body, ref.repo + " at " + endpoint);
    return resp->status == 404 ? NotFoundError(msg) : FailedPreconditionError(msg);
  }
  UNMASK_ASSIGN_OR_RETURN(RepoInfo info, ParseRepoInfo(resp->body, ref.repo));
  result.commit = info.commit;

  std::vector<std::string> include = options.include;
  if (include.empty() && ref.entry != nullptr) include = ref.entry->include;
  UNMASK_ASSIGN_OR_RETURN(std::vector<RepoFile> files,
                          SelectFiles(info, include, options.exclude, ref.quant));
  // The catalogue's pins must agree with the hub (a pinned revision does not change; a branch
  // that moved is said so instead of fetching something else than what was pinned).
  if (ref.entry != nullptr) {
    for (const PinnedFile& p : ref.entry->files) {
      auto it = std::find_if(info.files.begin(), info.files.end(),
                             [&](const RepoFile& f) { return f.path == p.path; });
      if (it == info.files.end()) {
        return InvalidArgumentError("the catalogue pins " + p.path + " of " + ref.entry->name +
                                    ", which " + ref.repo + "@" + result.revision +
                                    " does not have");
      }
      if ((!p.sha256.empty() && it->lfs && it->etag != p.sha256) ||
          (p.size != 0 && it->size != p.size)) {
        return InvalidArgumentError("the hub's " + p.path + " of " + ref.repo + "@" +
                                    result.revision + " differs from the catalogue's pin (sha256 " +
                                    p.sha256 + ", " + std::to_string(p.size) +
                                    " bytes; the hub has " + it->etag + ", " +
                                    std::to_string(it->size) + " bytes)");
      }
      if (!p.sha256.empty() && !it->lfs) {
        // A small file pinned by sha256: checked after its download.
      }
    }
  }

  const fs::path repo_dir = fs::path(cache) / RepoFolderName(ref.repo);
  std::error_code ec;
  fs::create_directories(repo_dir / "blobs", ec);
  if (ec)
    return DataLossError("cannot create " + (repo_dir / "blobs").string() + ": " + ec.message());

  uint64_t to_fetch = 0;
  for (const RepoFile& f : files) {
    if (FileSize(repo_dir / "blobs" / f.etag) != f.size ||
        !fs::exists(repo_dir / "blobs" / f.etag)) {
      to_fetch +=
          f.size - std::min(f.size, FileSize(repo_dir / "blobs" / (f.etag + ".incomplete")));
    }
  }
  struct statvfs vfs {};
  if (::statvfs((repo_dir / "blobs").c_str(), &vfs) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (free_bytes < to_fetch) {
      return ResourceExhaustedError("not enough disk space in " + cache + ": " +
                                    FormatBytes(to_fetch) + " to download, " +
                                    FormatBytes(free_bytes) + " free");
    }
  }
  Emit(options, {PullEvent::Kind::kResolved, info.commit, 0, to_fetch, 0, ""});

  for (const RepoFile& f : files) {
    const fs::path blob = repo_dir / "blobs" / f.etag;
    FileLock lock(fs::path(cache) / ".locks" / RepoFolderName(ref.repo) / (f.etag + ".lock"));
    if (!lock.TryLock()) {
      Emit(options, {PullEvent::Kind::kNote, f.path, 0, 0, 0,
                     "another process is downloading this file; waiting for it"});
      lock.Lock();
    }
    Emit(options, {PullEvent::Kind::kFileStart, f.path, 0, f.size, 0, ""});
    uint64_t reused = 0;
    bool have = fs::exists(blob) && FileSize(blob) == f.size;
    if (have && options.verify_existing) {
      Status v = VerifyBlob(blob, f);
      if (!v.ok()) {
        Emit(options,
             {PullEvent::Kind::kNote, f.path, 0, 0, 0, v.message() + "; downloading it again"});
        fs::remove(blob, ec);
        have = false;
      }
    }
    if (have) {
      reused = f.size;
    } else {
      UNMASK_ASSIGN_OR_RETURN(reused, FetchFile(info, f, repo_dir, endpoint, http, options));
    }
    // A small file the catalogue pins by sha256 (the hub names it by its git sha1).
    if (ref.entry != nullptr) {
      for (const PinnedFile& p : ref.entry->files) {
        if (p.path != f.path || p.sha256.empty() || f.lfs) continue;
        Digest d(DigestKind::kSha256, f.size);
        UNMASK_RETURN_IF_ERROR(HashFilePrefix(blob.string(), f.size, &d));
        const std::string got = d.HexFinal();
        if (got != p.sha256) {
          fs::remove(blob, ec);
          return DataLossError(f.path + ": sha256 " + got + " differs from the catalogue's pin " +
                               p.sha256 + "; the file was deleted");
        }
      }
    }
    UNMASK_RETURN_IF_ERROR(LinkIntoSnapshot(repo_dir, info.commit, f));
    result.reused_bytes += reused;
    result.downloaded_bytes += f.size - reused;
    Emit(options, {PullEvent::Kind::kFileDone, f.path, f.size, f.size, reused, ""});
  }
  if (result.revision != info.commit) {
    UNMASK_RETURN_IF_ERROR(WriteFileAtomic(repo_dir / "refs" / result.revision, info.commit));
  }
  result.files = files.size();
  result.snapshot_path = (repo_dir / "snapshots" / info.commit).string();
  return result;
}

}  // namespace unmask::hub
