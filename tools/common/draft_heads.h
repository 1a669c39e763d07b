// Draft heads of speculative decoding for the CLI and the server: Medusa heads or an EAGLE draft
// layer, from --draft-heads FILE or found beside the model (MODEL.medusa.gguf, MODEL.eagle.gguf).
#ifndef UNMASK_TOOLS_COMMON_DRAFT_HEADS_H_
#define UNMASK_TOOLS_COMMON_DRAFT_HEADS_H_

#include <memory>
#include <string>

#include "core/status.h"
#include "decode/decoder_factory.h"
#include "model/eagle_head.h"
#include "model/medusa_heads.h"
#include "model/model.h"

namespace unmask::tools {

struct DraftHeads {
  std::string kind;  // "medusa" or "eagle"
  std::string path;
  std::unique_ptr<MedusaHeads> medusa;
  std::unique_ptr<EagleHead> eagle;

  // Points `options` at these heads for drafting on `base` (the model the decoder runs).
  void Use(const Model& base, double p_min, DecodeOptions& options) const;
};

// The heads of `kind` for the model at `model_path`: from `path`, or when it is empty from
// beside the model. Errors: NotFound (naming where they were looked for and how to train them)
// when there are none; the loaders' errors for a file of another model or a malformed one;
// InvalidArgument for a file of the other kind.
StatusOr<DraftHeads> LoadDraftHeads(const std::string& kind, const std::string& path,
                                    const std::string& model_path, const ModelConfig& base);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_DRAFT_HEADS_H_
