#include "server/draft_files.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "model/draft_file.h"
#include "model/eagle_head.h"
#include "model/medusa_heads.h"

namespace unmask::server {
namespace {

struct Named {
  std::string id;  // empty: the only AR model
  std::string file;
};

bool IsFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// "MODEL_ID=FILE" when the part before an '=' is a served model's id (the first such '=' whose
// FILE exists, else the first such '=' unless the whole value is a file), else "FILE": a path or
// an id with '=' in it still works.
Named Split(const std::string& value, const std::vector<std::unique_ptr<ServedModel>>& models) {
  std::optional<Named> first;
  for (size_t eq = value.find('='); eq != std::string::npos; eq = value.find('=', eq + 1)) {
    const std::string id = value.substr(0, eq);
    for (const auto& m : models) {
      if (m->id != id) continue;
      Named n{id, value.substr(eq + 1)};
      if (IsFile(n.file)) return n;
      if (!first) first = n;
    }
  }
  if (first && !IsFile(value)) return *first;
  return {"", value};
}

std::string ArIds(const std::vector<std::unique_ptr<ServedModel>>& models) {
  std::string out;
  for (const auto& m : models) {
    if (!m->diffusion()) out += (out.empty() ? "" : ", ") + m->id;
  }
  return out.empty() ? "none" : out;
}

Status Load(ServedModel& m, const std::string& kind, const std::string& file) {
  const ModelConfig& base = m.loaded->model->config();
  if (kind == "medusa") {
    auto heads = MedusaHeads::Load(file, base);
    if (!heads.ok()) return heads.status().WithContext("Medusa heads of " + m.id);
    m.medusa_heads = std::move(heads).value();
    std::fprintf(stderr, "unmask serve: %s: Medusa heads %s (%d heads)\n", m.id.c_str(),
                 file.c_str(), m.medusa_heads->head_count());
  } else {
    auto eagle = EagleHead::Load(file, base);
    if (!eagle.ok()) return eagle.status().WithContext("EAGLE draft layer of " + m.id);
    m.eagle_head = std::move(eagle).value();
    std::fprintf(stderr, "unmask serve: %s: EAGLE draft layer %s (draft vocabulary %lld)\n",
                 m.id.c_str(), file.c_str(),
                 static_cast<long long>(m.eagle_head->draft_vocab_size()));
  }
  return Status::Ok();
}

}  // namespace

Status LoadDraftFiles(const std::vector<std::string>& named,
                      std::vector<std::unique_ptr<ServedModel>>& models) {
  // (model id, kind) -> the file --draft-heads names.
  std::map<std::pair<std::string, std::string>, std::string> files;
  for (const std::string& value : named) {
    Named n = Split(value, models);
    if (n.file.empty()) return InvalidArgumentError("--draft-heads " + value + ": no file");
    std::error_code ec;
    if (n.id.empty() && value.find('=') != std::string::npos &&
        !std::filesystem::exists(value, ec)) {
      return InvalidArgumentError("--draft-heads " + value + ": no model '" +
                                  value.substr(0, value.find('=')) +
                                  "' is served (AR models: " + ArIds(models) + ")");
    }
    if (n.id.empty()) {
      int ar = 0;
      for (const auto& m : models) {
        if (!m->diffusion()) {
          ++ar;
          n.id = m->id;
        }
      }
      if (ar != 1) {
        return InvalidArgumentError("--draft-heads " + value +
                                    ": give the model it is for as MODEL_ID=FILE (AR models "
                                    "served: " +
                                    ArIds(models) + ")");
      }
    } else {
      for (const auto& m : models) {
        if (m->id == n.id && m->diffusion()) {
          return InvalidArgumentError("--draft-heads " + value + ": " + n.id +
                                      " is a diffusion model; draft heads are for AR models (" +
                                      ArIds(models) + ")");
        }
      }
    }
    auto kind = DraftFileKind(n.file);
    if (!kind.ok()) return kind.status().WithContext("--draft-heads " + value);
    const auto key = std::make_pair(n.id, *kind);
    if (files.count(key) != 0) {
      return InvalidArgumentError("--draft-heads: two " + *kind + " files for " + n.id + " (" +
                                  files[key] + ", " + n.file + ")");
    }
    files[key] = n.file;
  }
  for (auto& m : models) {
    if (m->diffusion()) continue;
    for (const std::string kind : {"medusa", "eagle"}) {
      std::string file;
      if (auto it = files.find({m->id, kind}); it != files.end()) {
        file = it->second;
      } else {
        // Beside the model: a file that is there but does not load stops the start, like a bad
        // model would.
        const std::string beside = DraftFilePathFor(m->path, kind);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(beside, ec)) continue;
        file = beside;
      }
      UNMASK_RETURN_IF_ERROR(Load(*m, kind, file));
    }
  }
  return Status::Ok();
}

Status CheckDraftFilesExist(const std::vector<std::string>& named) {
  for (const std::string& value : named) {
    bool found = IsFile(value);
    for (size_t eq = value.find('='); !found && eq != std::string::npos;
         eq = value.find('=', eq + 1)) {
      found = IsFile(value.substr(eq + 1));
    }
    if (!found) {
      std::error_code ec;
      return InvalidArgumentError(
          "--draft-heads " + value +
          (std::filesystem::exists(value, ec) ? ": not a regular file" : ": no such file") +
          " (give FILE or MODEL_ID=FILE)");
    }
  }
  return Status::Ok();
}

}  // namespace unmask::server
