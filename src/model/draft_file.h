// What the draft-head files of speculative decoding (Medusa heads, an EAGLE draft layer; GGUF
// files beside the base model) share: bounded integer keys and the optional draft vocabulary.
#ifndef UNMASK_MODEL_DRAFT_FILE_H_
#define UNMASK_MODEL_DRAFT_FILE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/gguf.h"

namespace unmask {

// The integer `key` of `f`, in [lo, hi]. Errors (naming the file and the key): NotFound /
// InvalidArgument from the file, InvalidArgument for a value outside the range.
StatusOr<int64_t> GetBoundedInt(const gguf::GgufFile& f, const std::string& key, int64_t lo,
                                int64_t hi);

// The draft vocabulary of a heads file: the base-vocabulary ids of the draft output's rows, read
// from the int array `key` (EAGLE-3 / FR-Spec's reduced draft vocabulary), or every id in
// [0, vocab) when the key is absent. Errors: InvalidArgument for an empty array, an id outside
// [0, vocab) or a repeated id.
StatusOr<std::vector<int32_t>> ReadDraftVocab(const gguf::GgufFile& f, const std::string& key,
                                              int64_t vocab);

// Where a draft file of `kind` ("medusa", "eagle") for the model at `model_path` is looked for:
// BASE.KIND.gguf beside BASE.gguf, or FOLDER/KIND.gguf inside a Hugging Face folder.
std::string DraftFilePathFor(const std::string& model_path, const std::string& kind);

// The kind of a draft-heads file: its general.architecture ("medusa" or "eagle").
// Errors: the file's (NotFound, DataLoss); InvalidArgument for any other architecture (naming it:
// a model file given where heads were expected, say).
StatusOr<std::string> DraftFileKind(const std::string& path);

// The index of the largest of `logits` (the first one on ties, as greedy decoding) and its
// softmax probability (max-subtracted, in double; 0 when the row holds no finite mass).
struct ArgMaxProb {
  int64_t index = 0;
  double prob = 0;
};
ArgMaxProb ArgMaxWithProb(std::span<const float> logits);

}  // namespace unmask

#endif  // UNMASK_MODEL_DRAFT_FILE_H_
