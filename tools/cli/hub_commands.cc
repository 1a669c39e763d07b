#include "cli/hub_commands.h"

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/cli_util.h"
#include "common/interrupt.h"
#include "common/suggest.h"
#include "common/terminal.h"
#include "hub/catalog.h"
#include "hub/hub_api.h"
#include "hub/hub_cache.h"
#include "hub/pull.h"

namespace unmask::tools {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

std::string Short(const std::string& commit) { return commit.substr(0, 12); }

// The download progress line: "model.safetensors [=====>   ] 1.2 GB/16.0 GB 48.3 MB/s ETA 5m";
// without a terminal, a line per finished file and one every 10 s.
class DownloadProgress {
 public:
  void On(const hub::PullEvent& e) {
    using K = hub::PullEvent::Kind;
    const auto now = Clock::now();
    switch (e.kind) {
      case K::kResolved:
        std::fprintf(stderr, "unmask pull: commit %s, %s to download\n", Short(e.path).c_str(),
                     hub::FormatBytes(e.total).c_str());
        break;
      case K::kFileStart:
        start_ = now;
        last_print_ = now;
        first_ = 0;
        have_first_ = false;
        break;
      case K::kFileProgress: {
        if (!have_first_) {
          first_ = e.done;
          have_first_ = true;
        }
        const double secs = std::chrono::duration<double>(now - start_).count();
        const double rate = secs > 0.2 ? static_cast<double>(e.done - first_) / secs : 0.0;
        std::string text = hub::FormatBytes(e.done) + "/" + hub::FormatBytes(e.total);
        if (rate > 0) {
          text += " " + hub::FormatBytes(static_cast<uint64_t>(rate)) + "/s";
          const double eta = static_cast<double>(e.total - std::min(e.total, e.done)) / rate;
          char buf[32];
          std::snprintf(buf, sizeof buf, " ETA %.0fs", eta);
          text += buf;
        }
        if (StderrIsTerminal()) {
          if (std::chrono::duration<double>(now - last_draw_).count() >= 0.1) {
            Draw(e.path, e.done, e.total, text);
            last_draw_ = now;
          }
        } else if (std::chrono::duration<double>(now - last_print_).count() >= 10) {
          std::fprintf(stderr, "unmask pull: %s %s\n", e.path.c_str(), text.c_str());
          last_print_ = now;
        }
        break;
      }
      case K::kFileDone:
        Clear();
        std::fprintf(stderr, "unmask pull: %-40s %10s %s\n", e.path.c_str(),
                     hub::FormatBytes(e.total).c_str(),
                     e.reused == e.total ? "(in the cache)"
                     : e.reused > 0 ? ("(resumed after " + hub::FormatBytes(e.reused) + ")").c_str()
                                    : "");
        break;
      case K::kNote:
        Clear();
        PrintWarning((e.path.empty() ? "" : e.path + ": ") + e.note);
        break;
    }
  }
  void Clear() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    drawn_ = false;
  }

 private:
  void Draw(const std::string& path, uint64_t done, uint64_t total, const std::string& text) {
    const int width = 24;
    const int filled = total > 0 ? static_cast<int>(width * static_cast<double>(done) / total) : 0;
    std::string bar(static_cast<size_t>(std::min(filled, width)), '=');
    if (filled < width) bar += '>';
    bar.resize(width, ' ');
    std::string line = path + " [" + bar + "] " + text;
    const int max = TerminalWidth() - 1;
    if (max > 0 && static_cast<int>(line.size()) > max) line.resize(static_cast<size_t>(max));
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

  Clock::time_point start_, last_print_, last_draw_;
  uint64_t first_ = 0;
  bool have_first_ = false;
  bool drawn_ = false;
};

// ParseModelReference with "(did you mean llada:8b-instruct?)" on a misspelt catalogue name.
StatusOr<hub::ModelReference> ParseReference(const std::string& text, const hub::Catalog& c) {
  StatusOr<hub::ModelReference> r = hub::ParseModelReference(text, c);
  if (r.ok()) return r;
  std::vector<std::string> names;
  for (const hub::CatalogEntry& e : c.models) names.push_back(e.name);
  const std::string close = ClosestName(text, names);
  if (close.empty()) return r;
  return InvalidArgumentError(r.status().message() + " (did you mean " + close + "?)");
}

// The catalogue name of a cached repo, or "".
std::string NameOf(const hub::Catalog& c, const std::string& repo) {
  const hub::CatalogEntry* e = c.FindRepo(repo);
  return e != nullptr ? e->name : "";
}

void AddCacheDirFlag(CLI::App& app, std::string* dir) {
  app.add_option("--cache-dir", *dir,
                 "the model cache (default: $HF_HUB_CACHE, $HF_HOME/hub, else "
                 "~/.cache/huggingface/hub: the folder huggingface-cli and transformers use)")
      ->type_name("DIR");
}

}  // namespace

void PullCommand::AddTo(CLI::App& app) {
  app.add_option("model", name,
                 "a catalogue name (llada:8b-instruct; 'unmask list --catalog' lists them), a "
                 "Hugging Face id (GSAI-ML/LLaDA-8B-Instruct), or a GGUF repo with its "
                 "quantization (org/name-GGUF:Q4_K_M)")
      ->required();
  app.add_option("--revision", revision,
                 "branch, tag or commit (default: the catalogue's, else main)");
  app.add_option("--include", include,
                 "fetch only the files matching this glob (repeatable; e.g. '*.json' "
                 "'*Q8_0.gguf'); default: config, tokenizer and safetensors weights, or the "
                 "GGUF of the chosen quantization");
  app.add_option("--exclude", exclude, "skip the files matching this glob (repeatable)");
  AddCacheDirFlag(app, &cache_dir);
  app.add_option("--endpoint", endpoint,
                 "the hub's URL (default: $HF_ENDPOINT, else https://huggingface.co; a mirror)")
      ->type_name("URL");
  app.add_option("--ca-cert", ca_cert,
                 "PEM file of the CAs to trust (default: $SSL_CERT_FILE, $CURL_CA_BUNDLE, else "
                 "the system's)")
      ->type_name("FILE");
  app.add_flag("--verify", verify,
               "re-hash the files that are already in the cache (slow for large models)");
}

int PullCommand::Run() const {
  StatusOr<hub::Catalog> catalog = hub::LoadCatalog();
  if (!catalog.ok()) return FailWith("unmask pull", catalog.status());
  StatusOr<hub::ModelReference> ref = ParseReference(name, *catalog);
  if (!ref.ok()) return FailWith("unmask pull", ref.status(), 2);
  hub::PullOptions o;
  o.cache_dir = cache_dir;
  o.endpoint = endpoint;
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  o.revision = revision;
  o.include = include;
  o.exclude = exclude;
  o.http.ca_file = ca_cert;
  o.verify_existing = verify;
  CatchInterrupt();
  o.http.cancelled = [] { return Interrupted(); };
  DownloadProgress progress;
  o.on_event = [&](const hub::PullEvent& e) { progress.On(e); };
  std::fprintf(stderr, "unmask pull: %s%s from %s\n", ref->repo.c_str(),
               ref->entry != nullptr && ref->entry->name == name ? (" (" + name + ")").c_str() : "",
               (o.endpoint.empty() ? hub::HubEndpoint() : o.endpoint).c_str());
  StatusOr<hub::PullResult> r = hub::Pull(*ref, o);
  progress.Clear();
  if (!r.ok()) return FailWith("unmask pull", r.status());
  std::fprintf(stderr,
               "unmask pull: %s@%s (%s): %zu files, %s downloaded, %s already here\n"
               "unmask pull: run it with: unmask chat -m %s\n",
               r->repo.c_str(), r->revision.c_str(), Short(r->commit).c_str(), r->files,
               hub::FormatBytes(r->downloaded_bytes).c_str(),
               hub::FormatBytes(r->reused_bytes).c_str(), name.c_str());
  std::printf("%s\n", r->snapshot_path.c_str());
  return 0;
}

void ListCommand::AddTo(CLI::App& app) {
  app.add_flag("--catalog", catalog,
               "list the catalogue (short names 'unmask pull' knows) instead of the cache");
  app.add_flag("--json", json, "print JSON on stdout");
  AddCacheDirFlag(app, &cache_dir);
}

int ListCommand::Run() const {
  StatusOr<hub::Catalog> cat = hub::LoadCatalog();
  if (!cat.ok()) return FailWith("unmask list", cat.status());
  const std::string cache = hub::CacheDir(cache_dir);
  const std::vector<hub::CachedRepo> repos = hub::ListCache(cache);
  if (catalog) {
    Json out = Json::array();
    if (!json) std::printf("%-26s %-40s %-8s %s\n", "NAME", "REPO", "PULLED", "DESCRIPTION");
    for (const hub::CatalogEntry& e : cat->models) {
      bool pulled = false;
      for (const hub::CachedRepo& r : repos) {
        pulled =
            pulled || (hub::FindSnapshot(r, e.revision).has_value() && cat->FindRepo(r.repo) == &e);
      }
      if (json) {
        out.push_back({{"name", e.name},
                       {"repo", e.repo},
                       {"revision", e.revision},
                       {"pulled", pulled},
                       {"description", e.description},
                       {"defaults", e.DefaultsAsFlags()}});
      } else {
        std::printf("%-26s %-40s %-8s %s\n", e.name.c_str(), e.repo.c_str(), pulled ? "yes" : "-",
                    e.description.c_str());
      }
    }
    if (json) std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  Json out = Json::array();
  if (!json) {
    if (repos.empty()) {
      std::fprintf(stderr,
                   "unmask list: no models in %s (fetch one with 'unmask pull NAME'; "
                   "'unmask list --catalog' lists the names)\n",
                   cache.c_str());
      return 0;
    }
    std::printf("%-26s %-40s %-13s %9s  %s\n", "NAME", "REPO", "COMMIT", "SIZE", "STATE");
  }
  for (const hub::CachedRepo& r : repos) {
    const std::string nm = NameOf(*cat, r.repo);
    if (r.snapshots.empty()) {
      if (json) {
        out.push_back({{"name", nm},
                       {"repo", r.repo},
                       {"path", r.path},
                       {"commit", nullptr},
                       {"size_bytes", r.blob_bytes},
                       {"complete", false}});
      } else {
        std::printf("%-26s %-40s %-13s %9s  %s\n", nm.empty() ? "-" : nm.c_str(), r.repo.c_str(),
                    "-", hub::FormatBytes(r.blob_bytes).c_str(), "partial download");
      }
      continue;
    }
    for (const hub::CachedSnapshot& s : r.snapshots) {
      std::string state = s.complete ? "ok" : "missing files";
      if (!s.refs.empty()) {
        std::string refs;
        for (const std::string& x : s.refs) refs += (refs.empty() ? "" : ",") + x;
        state += " (" + refs + ")";
      }
      if (r.incomplete_bytes > 0) state += ", partial download pending";
      if (json) {
        out.push_back({{"name", nm},
                       {"repo", r.repo},
                       {"path", s.path},
                       {"commit", s.commit},
                       {"refs", s.refs},
                       {"files", s.files},
                       {"size_bytes", s.size_bytes},
                       {"complete", s.complete}});
      } else {
        std::printf("%-26s %-40s %-13s %9s  %s\n", nm.empty() ? "-" : nm.c_str(), r.repo.c_str(),
                    Short(s.commit).c_str(), hub::FormatBytes(s.size_bytes).c_str(), state.c_str());
      }
    }
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

void ShowCommand::AddTo(CLI::App& app) {
  app.add_option("model", name, "a catalogue name or a Hugging Face id")->required();
  app.add_flag("--json", json, "print JSON on stdout");
  AddCacheDirFlag(app, &cache_dir);
}

int ShowCommand::Run() const {
  StatusOr<hub::Catalog> cat = hub::LoadCatalog();
  if (!cat.ok()) return FailWith("unmask show", cat.status());
  StatusOr<hub::ModelReference> ref = ParseReference(name, *cat);
  if (!ref.ok()) return FailWith("unmask show", ref.status(), 2);
  const std::string cache = hub::CacheDir(cache_dir);
  std::optional<hub::CachedRepo> repo = hub::FindCachedRepo(cache, ref->repo);
  const hub::CatalogEntry* e = ref->entry;
  const std::string revision = ref->revision.empty() ? "main" : ref->revision;
  std::optional<hub::CachedSnapshot> snap;
  if (repo) snap = hub::FindSnapshot(*repo, revision);
  if (json) {
    Json out = {{"name", e != nullptr ? e->name : ""}, {"repo", ref->repo}, {"revision", revision}};
    if (e != nullptr) {
      out["description"] = e->description;
      out["license"] = e->license;
      out["source"] = e->source;
      out["include"] = e->include;
      Json files = Json::array();
      for (const hub::PinnedFile& p : e->files) {
        files.push_back({{"path", p.path}, {"size", p.size}, {"sha256", p.sha256}});
      }
      out["pinned_files"] = files;
      Json d = Json::object();
      for (const auto& [k, v] : e->defaults) d[k] = v;
      out["defaults"] = d;
      out["defaults_source"] = e->defaults_source;
      out["catalogue"] = cat->origin;
    }
    out["pulled"] = snap.has_value();
    if (snap) {
      out["path"] = snap->path;
      out["commit"] = snap->commit;
      out["files"] = snap->files;
      out["size_bytes"] = snap->size_bytes;
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("name         %s\n", e != nullptr ? e->name.c_str() : "(not in the catalogue)");
  std::printf("repo         %s @ %s\n", ref->repo.c_str(), revision.c_str());
  if (e != nullptr) {
    if (!e->description.empty()) std::printf("description  %s\n", e->description.c_str());
    if (!e->license.empty()) std::printf("license      %s\n", e->license.c_str());
    if (!e->source.empty()) std::printf("source       %s\n", e->source.c_str());
    if (e->size_bytes > 0)
      std::printf("size         about %s\n", hub::FormatBytes(e->size_bytes).c_str());
    std::printf("defaults     %s\n",
                e->defaults.empty() ? "(unmask's)" : e->DefaultsAsFlags().c_str());
    if (!e->defaults_source.empty())
      std::printf("             from %s\n", e->defaults_source.c_str());
    if (e->files.empty()) {
      std::printf(
          "checksums    not pinned: verified against the hub's sha256 / git sha1 at pull\n");
    } else {
      for (const hub::PinnedFile& p : e->files) {
        std::printf("pinned       %s %s %s\n", p.path.c_str(),
                    p.size > 0 ? hub::FormatBytes(p.size).c_str() : "-",
                    p.sha256.empty() ? "-" : p.sha256.c_str());
      }
    }
    std::printf("catalogue    %s\n", cat->origin.c_str());
  }
  if (snap) {
    std::printf("pulled       %s (commit %s, %zu files, %s)\n", snap->path.c_str(),
                Short(snap->commit).c_str(), snap->files.size(),
                hub::FormatBytes(snap->size_bytes).c_str());
  } else {
    std::printf("pulled       no ('unmask pull %s')\n", name.c_str());
  }
  return 0;
}

void RmCommand::AddTo(CLI::App& app) {
  app.add_option("models", names, "catalogue names or Hugging Face ids to delete from the cache")
      ->required();
  AddCacheDirFlag(app, &cache_dir);
}

int RmCommand::Run() const {
  StatusOr<hub::Catalog> cat = hub::LoadCatalog();
  if (!cat.ok()) return FailWith("unmask rm", cat.status());
  const std::string cache = hub::CacheDir(cache_dir);
  int rc = 0;
  for (const std::string& n : names) {
    StatusOr<hub::ModelReference> ref = ParseReference(n, *cat);
    if (!ref.ok()) {
      rc = FailWith("unmask rm", ref.status(), 2);
      continue;
    }
    StatusOr<uint64_t> freed = hub::RemoveCachedRepo(cache, ref->repo);
    if (!freed.ok()) {
      rc = FailWith("unmask rm", freed.status());
      continue;
    }
    std::fprintf(stderr, "unmask rm: deleted %s (%s freed)\n", ref->repo.c_str(),
                 hub::FormatBytes(*freed).c_str());
  }
  return rc;
}

}  // namespace unmask::tools
