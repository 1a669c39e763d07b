#include "draft_heads.h"

#include <filesystem>

#include "model/draft_file.h"

namespace unmask::tools {

void DraftHeads::Use(const Model& base, double p_min, DecodeOptions& options) const {
  if (medusa) {
    options.medusa_heads = medusa.get();
    options.medusa.p_min = p_min;
  }
  if (eagle) {
    options.eagle_head = eagle.get();
    options.eagle_base = &base;
    options.eagle.p_min = p_min;
  }
}

StatusOr<DraftHeads> LoadDraftHeads(const std::string& kind, const std::string& path,
                                    const std::string& model_path, const ModelConfig& base) {
  DraftHeads h;
  h.kind = kind;
  h.path = path.empty() ? DraftFilePathFor(model_path, kind) : path;
  if (path.empty() && !std::filesystem::exists(h.path)) {
    return NotFoundError("no " + kind + " heads at " + h.path + " (train them with " +
                         "scripts/train/train_" + kind + ".py, or name a file with --draft-heads)");
  }
  UNMASK_ASSIGN_OR_RETURN(const std::string found, DraftFileKind(h.path));
  if (found != kind) {
    return InvalidArgumentError(h.path + " holds " + found + " heads, not " + kind + " heads");
  }
  if (kind == "medusa") {
    UNMASK_ASSIGN_OR_RETURN(h.medusa, MedusaHeads::Load(h.path, base));
  } else {
    UNMASK_ASSIGN_OR_RETURN(h.eagle, EagleHead::Load(h.path, base));
  }
  return h;
}

}  // namespace unmask::tools
