// Medusa draft heads (Cai et al. 2024, "Medusa: Simple LLM Inference Acceleration Framework with
// Multiple Decoding Heads", arXiv:2401.10774; FasterDecoding/Medusa, medusa_model.py): K extra
// heads on the base model's last hidden state. With h_t the base model's final hidden state at
// position t after its output RMSNorm (the row its output projection maps to the logits of token
// t+1; Workspace::last_normed), head k (k = 1..K) predicts token t+1+k:
//
//   r = h_t;  for each of the head's residual blocks j:  r = r + SiLU(W_kj r + b_kj)
//   logits_k = W_out r                                    [n_draft]
//
// W_out is the base model's output projection restricted to a draft vocabulary (the rows of
// `medusa.draft_vocab`, the whole vocabulary when absent), stored in the heads file as
// `medusa.output.weight`: unmask's trainer (scripts/train/train_medusa.py) copies it from the base
// head and keeps it frozen, so the heads are tied to the base head by value (Medusa-1's heads
// start from the base head; freezing it leaves only the residual blocks to train). A draft
// vocabulary of the most frequent tokens (EAGLE-3 and FR-Spec shrink the draft head the same way)
// keeps the K projections cheap for a large vocabulary; verification by the base model keeps the
// output exact whatever the heads propose.
//
// File: GGUF, general.architecture "medusa", beside the base model as BASE.medusa.gguf (where
// `--spec medusa` looks for it; `--draft-heads FILE` names another). Metadata:
//   medusa.head_count        K >= 1
//   medusa.layer_count       residual blocks per head, >= 1
//   medusa.embedding_length  the base model's hidden size
//   medusa.vocab_size        the base model's vocabulary size
//   medusa.draft_vocab       optional int array: the draft vocabulary's base ids, distinct, in
//                            [0, vocab_size)
// Tensors (f32, f16 or bf16): medusa.blk.{k}.res.{j}.weight [hidden, hidden] and .bias [hidden]
// for k in [0, K), j in [0, layer_count); medusa.output.weight [n_draft, hidden].
#ifndef UNMASK_MODEL_MEDUSA_HEADS_H_
#define UNMASK_MODEL_MEDUSA_HEADS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/gguf.h"
#include "model/config.h"
#include "ops/linear.h"

namespace unmask {

// Scratch of one caller of MedusaHeads::Predict (one per drafter).
struct MedusaScratch {
  std::vector<float> r;       // [heads, hidden]
  std::vector<float> t;       // [hidden]
  std::vector<float> logits;  // [heads, n_draft]
};

// One head's greedy guess: the base-vocabulary id of its most likely draft token and that token's
// probability under the head's softmax over the draft vocabulary.
struct MedusaGuess {
  int32_t token = -1;
  double prob = 0;
};

class MedusaHeads {
 public:
  // Reads the heads of `path` for a base model of configuration `base`.
  // Errors: NotFound / DataLoss for an unreadable or malformed file; InvalidArgument (naming the
  // key or tensor) for another architecture, a hidden size or vocabulary that is not the base
  // model's, a draft id outside the vocabulary or repeated, a missing tensor or a wrong shape.
  static StatusOr<std::unique_ptr<MedusaHeads>> Load(const std::string& path,
                                                     const ModelConfig& base);
  // The same from an open file (tests, fuzzing).
  static StatusOr<std::unique_ptr<MedusaHeads>> FromFile(std::unique_ptr<gguf::GgufFile> file,
                                                         const ModelConfig& base);

  int32_t head_count() const { return static_cast<int32_t>(heads_.size()); }
  int32_t layer_count() const { return layers_; }
  int64_t hidden_size() const { return hidden_; }
  int64_t draft_vocab_size() const { return static_cast<int64_t>(draft_ids_.size()); }
  const std::string& path() const { return path_; }
  // FLOPs of one head's prediction (2 per multiply-accumulate).
  double flops_per_head() const;
  // Bytes of the heads' weights.
  size_t weight_bytes() const { return weight_bytes_; }

  // Head `k` (0-based: head 0 predicts the token after the next) on `h` [hidden], greedily.
  // Thread-compatible (separate scratch per caller). Errors: InvalidArgument for k outside
  // [0, head_count()) or h of another size.
  Status Predict(std::span<const float> h, int32_t k, MedusaScratch& scratch,
                 MedusaGuess* out) const;
  // Heads 0..n-1 on `h` at once: the same guesses as n Predict calls, with the output projection
  // read once for all n rows (the drafter's call; n <= 16). `out` gets n guesses.
  // Errors: InvalidArgument for n outside [1, min(head_count(), 16)] or h of another size.
  Status PredictChain(std::span<const float> h, int32_t n, MedusaScratch& scratch,
                      std::vector<MedusaGuess>* out) const;

 private:
  struct Block {
    LinearWeight w;
    std::vector<float> b;
  };
  MedusaHeads() = default;
  // Heads k0..k0+n-1 on `h`: their residual streams into scratch.r [n, hidden], then their
  // logits [n, n_draft] and greedy guesses.
  Status Run(std::span<const float> h, int32_t k0, int32_t n, MedusaScratch& scratch,
             MedusaGuess* out) const;

  std::string path_;
  std::unique_ptr<gguf::GgufFile> file_;  // the weights' storage (kOnTheFly references it)
  int64_t hidden_ = 0;
  int32_t layers_ = 0;
  std::vector<std::vector<Block>> heads_;  // [K][layer_count]
  LinearWeight output_;                    // [n_draft, hidden]
  std::vector<int32_t> draft_ids_;         // [n_draft] base ids of the output's rows
  size_t weight_bytes_ = 0;
};

// BASE.medusa.gguf for BASE.gguf (a folder: FOLDER/medusa.gguf): where heads are looked for when
// no --draft-heads is given.
std::string MedusaHeadsPathFor(const std::string& model_path);

}  // namespace unmask

#endif  // UNMASK_MODEL_MEDUSA_HEADS_H_
