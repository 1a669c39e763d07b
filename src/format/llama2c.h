// llama2.c checkpoints (karpathy/llama2.c) and their conversion to GGUF in llama.cpp's layout.
//
// Checkpoint formats (export.py; run.c reads v0 and the first 256 bytes of v1 the same way):
//  - v0 ("legacy"): 7 int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
//    seq_len, where a negative vocab_size means a separate classifier follows the weights; then
//    f32 token_embedding [vocab, dim], rms_att [L, dim], wq [L, dim, dim], wk [L, kv_dim, dim],
//    wv [L, kv_dim, dim], wo [L, dim, dim], rms_ffn [L, dim], w1 [L, hidden, dim],
//    w2 [L, dim, hidden], w3 [L, hidden, dim], rms_final [dim], two unused RoPE tables
//    [seq_len, head_size / 2] each, then wcls [vocab, dim] when not shared.
//  - v1: u32 magic 0x616b3432 ("ak42"), int32 version 1, the 7 int32 (vocab_size positive), a
//    uint8 shared_classifier flag, zeros up to byte 256; then f32 rms_att, rms_ffn, rms_final,
//    token_embedding, wq, wk, wv, wo, w1, w2, w3 and wcls when not shared (no RoPE tables).
//    Version 2 (Q8_0) is reported as Unimplemented.
// kv_dim = dim * n_kv_heads / n_heads; head_size = dim / n_heads. All little-endian.
//
// tokenizer.bin: int32 max_token_length, then per token: f32 score, int32 length, bytes. The
// number of tokens is not stored; it must equal the checkpoint's vocab_size.
//
// Every size is checked before it is used: a checkpoint whose header is implausible (a
// dimension <= 0 or above the limits below, heads that do not divide dim, kv heads that do not
// divide heads, an odd head size) or whose file size differs from the size the header implies,
// and a tokenizer that is truncated or holds a different number of tokens, give a DataLoss
// status whose message names the file and what was expected; never a crash or a read past the
// end.
#ifndef UNMASK_FORMAT_LLAMA2C_H_
#define UNMASK_FORMAT_LLAMA2C_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/gguf.h"

namespace unmask::llama2c {

// Limits of the header fields (far above real checkpoints; they keep every product in int64).
inline constexpr int64_t kMaxDim = int64_t{1} << 20;  // dim, hidden_dim, heads, vocab
inline constexpr int64_t kMaxLayers = 4096;
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 24;

// The checkpoint's hyper-parameters (header), validated.
struct Config {
  int version = 0;  // 0 (legacy) or 1 ("ak42")
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t vocab_size = 0;  // always positive here
  int64_t seq_len = 0;
  bool shared_classifier = true;  // the classifier is the token embedding

  int64_t head_size() const { return dim / num_heads; }
  int64_t kv_dim() const { return dim * num_kv_heads / num_heads; }
  // Human-readable header, e.g. "dim 64, hidden_dim 172, n_layers 5, ...".
  std::string ToString() const;
};

// Byte offset and size of one f32 tensor inside the checkpoint.
struct Region {
  uint64_t offset = 0;
  uint64_t num_bytes = 0;
};

// Where each weight lies in the file. Per-layer tensors are stacked: layer i of `wq` starts at
// wq.offset + i * wq.num_bytes / num_layers.
struct WeightLayout {
  Region token_embedding;  // [vocab, dim]
  Region rms_att;          // [L, dim]
  Region wq;               // [L, dim, dim]
  Region wk;               // [L, kv_dim, dim]
  Region wv;               // [L, kv_dim, dim]
  Region wo;               // [L, dim, dim]
  Region rms_ffn;          // [L, dim]
  Region w1;               // [L, hidden, dim]
  Region w2;               // [L, dim, hidden]
  Region w3;               // [L, hidden, dim]
  Region rms_final;        // [dim]
  Region wcls;             // [vocab, dim]; == token_embedding when shared
  uint64_t file_size = 0;  // the size the header implies
};

// A parsed checkpoint. The file is memory-mapped (read-only), nothing is copied; immutable after
// Open, so const methods may be called from several threads.
class Checkpoint {
 public:
  // Errors: NotFound (cannot open), DataLoss (malformed, see the file comment), Unimplemented
  // (version 2 or later).
  static StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& path);
  // Parses an in-memory image (tests); `name` stands for the path in messages.
  static StatusOr<std::unique_ptr<Checkpoint>> FromBytes(std::vector<uint8_t> bytes,
                                                         std::string name = "<memory>");
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  const std::string& path() const { return path_; }
  const Config& config() const { return config_; }
  const WeightLayout& layout() const { return layout_; }
  // Bytes of a region (valid for the lifetime of the Checkpoint).
  const uint8_t* data(const Region& r) const { return base_ + r.offset; }
  // Layer `layer_idx` of a stacked per-layer region.
  Region LayerSlice(const Region& stacked, int64_t layer_idx) const;

 private:
  Checkpoint() = default;
  Status Parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;
  std::vector<uint8_t> owned_;
  Config config_;
  WeightLayout layout_;
};

// A llama2.c tokenizer.bin, as stored (token bytes with plain spaces).
struct Vocab {
  int32_t max_token_length = 0;
  std::vector<std::string> tokens;  // [vocab_size]
  std::vector<float> scores;        // [vocab_size]
};

// Reads a tokenizer.bin for a checkpoint of `vocab_size` tokens. NotFound when the file cannot
// be read; DataLoss when it is truncated, a length is negative or longer than max_token_length,
// or it holds a number of tokens other than vocab_size.
StatusOr<Vocab> ReadTokenizer(const std::string& path, int64_t vocab_size);
StatusOr<Vocab> ParseTokenizer(const std::vector<uint8_t>& bytes, const std::string& name,
                               int64_t vocab_size);

// llama.cpp token types (llama_token_type), as written to tokenizer.ggml.token_type.
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// The GGUF form of a llama2.c (SentencePiece) vocabulary, as llama.cpp's
// convert-llama2c-to-ggml writes it: ids 0/1/2 become "<unk>" (unknown), "<s>", "</s>"
// (control), an empty token is control, "<0xXX>" is a byte token, every other token is normal;
// spaces become U+2581 ("▁"). Scores are kept bit for bit.
struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};
GgufVocab ToGgufVocab(const Vocab& vocab);

struct ConvertOptions {
  std::string name = "llama";  // general.name (llama.cpp's converter writes "llama")
  // llama.context_length; 0: the checkpoint's seq_len (the length it was trained with).
  int64_t context_length = 0;
};

// Fills `writer` with the GGUF of a llama2.c checkpoint in llama.cpp's `llama` layout: the
// metadata keys, in the order llama.cpp's convert-llama2c-to-ggml writes them, and 3 + 9 * L F32
// tensors whose data points into `checkpoint` (which must outlive the write). A shared
// classifier is written as output.weight, a copy of token_embd.weight, as llama.cpp does.
// InvalidArgument when vocab and checkpoint disagree on the vocabulary size, the vocabulary
// has fewer than 3 tokens (ids 0/1/2 are unk/bos/eos), or context_length is out of range.
Status BuildGguf(const Checkpoint& checkpoint, const Vocab& vocab, const ConvertOptions& options,
                 gguf::GgufWriter* writer);

}  // namespace unmask::llama2c

#endif  // UNMASK_FORMAT_LLAMA2C_H_
