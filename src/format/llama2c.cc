// llama2.c checkpoint and tokenizer reader, and the GGUF layout of llama.cpp's
// convert-llama2c-to-ggml (key order, names, token types). Formats: see llama2c.h.
#include "format/llama2c.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

namespace unmask::llama2c {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the llama2.c reader assumes a little-endian host");

constexpr uint32_t kMagicV1 = 0x616b3432;  // "ak42"
constexpr uint64_t kHeaderBytesV0 = 7 * 4;
constexpr uint64_t kHeaderBytesV1 = 256;
constexpr uint64_t kF32 = 4;
constexpr uint32_t kNoToken = 0xFFFFFFFF;  // how llama.cpp's converter writes "no token"
constexpr float kRmsEps = 1e-5f;           // llama2.c model.py ModelArgs.norm_eps

int32_t ReadI32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

std::string Bytes(uint64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

// An open regular file: fd and size. NotFound when it cannot be opened, DataLoss when it is not
// a regular file.
struct OpenFile {
  int fd = -1;
  size_t size = 0;
};

StatusOr<OpenFile> OpenRegular(const std::string& path, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return NotFoundError("cannot open " + std::string(what) + " '" + path +
                         "': " + std::generic_category().message(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return DataLossError(path + ": not a regular file (expected a " + std::string(what) + ")");
  }
  return OpenFile{fd, static_cast<size_t>(st.st_size)};
}

Status HeaderError(const std::string& path, const std::string& message) {
  return DataLossError(path + ": not a valid llama2.c checkpoint: " + message);
}

// The offsets of every weight, in file order, for a validated config.
WeightLayout MakeLayout(const Config& c) {
  const uint64_t dim = static_cast<uint64_t>(c.dim);
  const uint64_t hidden = static_cast<uint64_t>(c.hidden_dim);
  const uint64_t layers = static_cast<uint64_t>(c.num_layers);
  const uint64_t kv_dim = static_cast<uint64_t>(c.kv_dim());
  const uint64_t vocab = static_cast<uint64_t>(c.vocab_size);
  WeightLayout w;
  uint64_t offset = c.version == 0 ? kHeaderBytesV0 : kHeaderBytesV1;
  const auto take = [&offset](Region* r, uint64_t num_floats) {
    *r = Region{offset, num_floats * kF32};
    offset += r->num_bytes;
  };
  if (c.version == 0) {
    take(&w.token_embedding, vocab * dim);
    take(&w.rms_att, layers * dim);
    take(&w.wq, layers * dim * dim);
    take(&w.wk, layers * kv_dim * dim);
    take(&w.wv, layers * kv_dim * dim);
    take(&w.wo, layers * dim * dim);
    take(&w.rms_ffn, layers * dim);
    take(&w.w1, layers * hidden * dim);
    take(&w.w2, layers * dim * hidden);
    take(&w.w3, layers * hidden * dim);
    take(&w.rms_final, dim);
    // freq_cis_real and freq_cis_imag [seq_len, head_size / 2] each: unused (run.c skips them).
    offset += static_cast<uint64_t>(c.seq_len) * static_cast<uint64_t>(c.head_size()) * kF32;
  } else {
    take(&w.rms_att, layers * dim);
    take(&w.rms_ffn, layers * dim);
    take(&w.rms_final, dim);
    take(&w.token_embedding, vocab * dim);
    take(&w.wq, layers * dim * dim);
    take(&w.wk, layers * kv_dim * dim);
    take(&w.wv, layers * kv_dim * dim);
    take(&w.wo, layers * dim * dim);
    take(&w.w1, layers * hidden * dim);
    take(&w.w2, layers * dim * hidden);
    take(&w.w3, layers * hidden * dim);
  }
  if (c.shared_classifier) {
    w.wcls = w.token_embedding;
  } else {
    take(&w.wcls, vocab * dim);
  }
  w.file_size = offset;
  return w;
}

// Checks one header field against [1, max].
Status CheckField(const std::string& path, std::string_view name, int64_t value, int64_t max) {
  if (value <= 0 || value > max) {
    return HeaderError(path, "header field " + std::string(name) + " = " + std::to_string(value) +
                                 " is not in [1, " + std::to_string(max) + "]");
  }
  return Status::Ok();
}

// True when `text` is a SentencePiece byte token "<0xXX>" (llama.cpp's converter: sscanf
// "<0x%02hhX>"; here the whole token must match).
bool IsByteToken(std::string_view text) {
  const auto hex = [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'F') || (ch >= 'a' && ch <= 'f');
  };
  return text.size() == 6 && text.substr(0, 3) == "<0x" && hex(text[3]) && hex(text[4]) &&
         text[5] == '>';
}

}  // namespace

std::string Config::ToString() const {
  return "dim " + std::to_string(dim) + ", hidden_dim " + std::to_string(hidden_dim) +
         ", n_layers " + std::to_string(num_layers) + ", n_heads " + std::to_string(num_heads) +
         ", n_kv_heads " + std::to_string(num_kv_heads) + ", vocab_size " +
         std::to_string(vocab_size) +
         (shared_classifier ? " (shared classifier)" : " (separate classifier)") + ", seq_len " +
         std::to_string(seq_len);
}

Checkpoint::~Checkpoint() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(OpenFile file, OpenRegular(path, "llama2.c checkpoint"));
  std::unique_ptr<Checkpoint> c(new Checkpoint());
  c->path_ = path;
  c->size_ = file.size;
  if (file.size > 0) {
    void* m = ::mmap(nullptr, file.size, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(file.fd);
      return DataLossError("cannot map '" + path + "': " + std::generic_category().message(err));
    }
    c->mapping_ = m;
    c->base_ = static_cast<const uint8_t*>(m);
  }
  ::close(file.fd);
  UNMASK_RETURN_IF_ERROR(c->Parse());
  return c;
}

StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::FromBytes(std::vector<uint8_t> bytes,
                                                            std::string name) {
  std::unique_ptr<Checkpoint> c(new Checkpoint());
  c->path_ = std::move(name);
  c->owned_ = std::move(bytes);
  c->base_ = c->owned_.data();
  c->size_ = c->owned_.size();
  UNMASK_RETURN_IF_ERROR(c->Parse());
  return c;
}

Region Checkpoint::LayerSlice(const Region& stacked, int64_t layer_idx) const {
  const uint64_t per_layer = stacked.num_bytes / static_cast<uint64_t>(config_.num_layers);
  return Region{stacked.offset + per_layer * static_cast<uint64_t>(layer_idx), per_layer};
}

Status Checkpoint::Parse() {
  const std::string& p = path_;
  if (size_ < kHeaderBytesV0) {
    return HeaderError(p, "the file has " + Bytes(size_) + ", less than the " +
                              Bytes(kHeaderBytesV0) + " of the llama2.c header");
  }
  if (std::memcmp(base_, "GGUF", 4) == 0) {
    return HeaderError(p, "it is a GGUF file (use it with -m directly)");
  }
  Config c;
  const uint8_t* h = base_;
  if (static_cast<uint32_t>(ReadI32(base_)) == kMagicV1) {
    if (size_ < kHeaderBytesV1) {
      return HeaderError(p, "the file starts with the llama2.c v1 magic \"ak42\" but has " +
                                Bytes(size_) + ", less than its " + Bytes(kHeaderBytesV1) +
                                " header");
    }
    const int32_t version = ReadI32(base_ + 4);
    if (version >= 2) {
      return UnimplementedError(p + ": llama2.c checkpoint version " + std::to_string(version) +
                                " (quantized) is not supported; export it with --version 0 or 1");
    }
    if (version != 1) {
      return HeaderError(p, "unknown version " + std::to_string(version) +
                                " after the \"ak42\" magic (expected 1)");
    }
    c.version = 1;
    h = base_ + 8;
  }
  c.dim = ReadI32(h);
  c.hidden_dim = ReadI32(h + 4);
  c.num_layers = ReadI32(h + 8);
  c.num_heads = ReadI32(h + 12);
  c.num_kv_heads = ReadI32(h + 16);
  const int64_t raw_vocab = ReadI32(h + 20);
  c.seq_len = ReadI32(h + 24);
  if (c.version == 0) {
    // v0: the sign of vocab_size says whether the classifier is shared (positive) or follows.
    c.shared_classifier = raw_vocab > 0;
    c.vocab_size = raw_vocab < 0 ? -raw_vocab : raw_vocab;
  } else {
    const uint8_t shared = base_[36];
    if (shared > 1) {
      return HeaderError(
          p, "shared_classifier byte is " + std::to_string(shared) + ", expected 0 or 1");
    }
    c.shared_classifier = shared == 1;
    c.vocab_size = raw_vocab;
  }
  UNMASK_RETURN_IF_ERROR(CheckField(p, "dim", c.dim, kMaxDim));
  UNMASK_RETURN_IF_ERROR(CheckField(p, "hidden_dim", c.hidden_dim, kMaxDim));
  UNMASK_RETURN_IF_ERROR(CheckField(p, "n_layers", c.num_layers, kMaxLayers));
  UNMASK_RETURN_IF_ERROR(CheckField(p, "n_heads", c.num_heads, kMaxDim));
  UNMASK_RETURN_IF_ERROR(CheckField(p, "n_kv_heads", c.num_kv_heads, kMaxDim));
  UNMASK_RETURN_IF_ERROR(CheckField(p, "vocab_size", c.vocab_size, kMaxDim));
  UNMASK_RETURN_IF_ERROR(CheckField(p, "seq_len", c.seq_len, kMaxSeqLen));
  if (c.dim % c.num_heads != 0) {
    return HeaderError(p, "n_heads (" + std::to_string(c.num_heads) + ") does not divide dim (" +
                              std::to_string(c.dim) + ")");
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return HeaderError(p, "n_kv_heads (" + std::to_string(c.num_kv_heads) +
                              ") does not divide n_heads (" + std::to_string(c.num_heads) + ")");
  }
  if (c.head_size() % 2 != 0) {
    return HeaderError(p, "the head size dim / n_heads = " + std::to_string(c.head_size()) +
                              " is odd (RoPE rotates pairs)");
  }
  config_ = c;
  layout_ = MakeLayout(c);
  if (layout_.file_size != size_) {
    std::string hint;
    const uint64_t classifier = static_cast<uint64_t>(c.vocab_size * c.dim) * kF32;
    if (c.shared_classifier && size_ == layout_.file_size + classifier) {
      hint =
          "; the extra bytes match a separate classifier [vocab_size, dim], which a v0 "
          "header marks with a negative vocab_size";
    } else if (!c.shared_classifier && size_ + classifier == layout_.file_size) {
      hint = "; the file lacks a classifier [vocab_size, dim], which the header's " +
             std::string(c.version == 0 ? "negative vocab_size" : "shared_classifier = 0") +
             " announces";
    }
    return DataLossError(p + ": the file has " + Bytes(size_) + ", but a llama2.c v" +
                         std::to_string(c.version) + " checkpoint with " + c.ToString() + " has " +
                         Bytes(layout_.file_size) +
                         (size_ < layout_.file_size ? " (truncated?)" : "") + hint);
  }
  return Status::Ok();
}

StatusOr<Vocab> ReadTokenizer(const std::string& path, int64_t vocab_size) {
  UNMASK_ASSIGN_OR_RETURN(OpenFile file, OpenRegular(path, "llama2.c tokenizer"));
  std::vector<uint8_t> bytes(file.size);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(file.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(file.fd);
      return DataLossError("reading '" + path + "' failed" +
                           (n < 0 ? ": " + std::generic_category().message(err) : ""));
    }
    done += static_cast<size_t>(n);
  }
  ::close(file.fd);
  return ParseTokenizer(bytes, path, vocab_size);
}

StatusOr<Vocab> ParseTokenizer(const std::vector<uint8_t>& bytes, const std::string& name,
                               int64_t vocab_size) {
  const std::string prefix = name + ": not a valid llama2.c tokenizer: ";
  if (bytes.size() < 4) {
    return DataLossError(prefix + "the file has " + Bytes(bytes.size()) +
                         ", less than the 4-byte max_token_length");
  }
  Vocab v;
  v.max_token_length = ReadI32(bytes.data());
  if (v.max_token_length <= 0) {
    return DataLossError(prefix + "max_token_length is " + std::to_string(v.max_token_length) +
                         ", expected a positive length");
  }
  size_t off = 4;
  while (off < bytes.size()) {
    const std::string where =
        "token #" + std::to_string(v.tokens.size()) + " at offset " + std::to_string(off);
    if (bytes.size() - off < 8) {
      return DataLossError(prefix + where + ": the file ends inside the score and length (" +
                           Bytes(bytes.size() - off) + " left, expected 8)");
    }
    float score;
    std::memcpy(&score, bytes.data() + off, sizeof(score));
    const int32_t len = ReadI32(bytes.data() + off + 4);
    off += 8;
    if (len < 0 || len > v.max_token_length) {
      return DataLossError(
          prefix + where + ": length " + std::to_string(len) +
          " is not in [0, max_token_length = " + std::to_string(v.max_token_length) + "]");
    }
    if (static_cast<size_t>(len) > bytes.size() - off) {
      return DataLossError(prefix + where + ": its " + Bytes(static_cast<uint64_t>(len)) +
                           " run past the end of the file (" + Bytes(bytes.size() - off) +
                           " left)");
    }
    v.tokens.emplace_back(reinterpret_cast<const char*>(bytes.data() + off),
                          static_cast<size_t>(len));
    v.scores.push_back(score);
    off += static_cast<size_t>(len);
  }
  if (static_cast<int64_t>(v.tokens.size()) != vocab_size) {
    return DataLossError(prefix + "it holds " + std::to_string(v.tokens.size()) +
                         " tokens, but the checkpoint's vocab_size is " +
                         std::to_string(vocab_size) + " (a tokenizer of another model?)");
  }
  return v;
}

GgufVocab ToGgufVocab(const Vocab& vocab) {
  GgufVocab g;
  g.tokens.reserve(vocab.tokens.size());
  g.types.reserve(vocab.tokens.size());
  g.scores = vocab.scores;
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    std::string text = vocab.tokens[id];
    TokenType type = TokenType::kNormal;
    if (id == 0) {
      text = "<unk>";
      type = TokenType::kUnknown;
    } else if (id == 1) {
      text = "<s>";  // llama2.c stores "\n<s>\n"
      type = TokenType::kControl;
    } else if (id == 2) {
      text = "</s>";
      type = TokenType::kControl;
    } else if (text.empty()) {
      type = TokenType::kControl;
    } else if (IsByteToken(text)) {
      type = TokenType::kByte;
    }
    std::string escaped;  // SentencePiece spells spaces as U+2581
    escaped.reserve(text.size());
    for (char ch : text) {
      if (ch == ' ') {
        escaped += "\xe2\x96\x81";
      } else {
        escaped += ch;
      }
    }
    g.tokens.push_back(std::move(escaped));
    g.types.push_back(static_cast<int32_t>(type));
  }
  return g;
}

Status BuildGguf(const Checkpoint& checkpoint, const Vocab& vocab, const ConvertOptions& options,
                 gguf::GgufWriter* writer) {
  const Config& c = checkpoint.config();
  if (static_cast<int64_t>(vocab.tokens.size()) != c.vocab_size ||
      vocab.scores.size() != vocab.tokens.size()) {
    return InvalidArgumentError("the tokenizer has " + std::to_string(vocab.tokens.size()) +
                                " tokens, but " + checkpoint.path() + " has vocab_size " +
                                std::to_string(c.vocab_size));
  }
  if (c.vocab_size < 3) {
    return InvalidArgumentError(checkpoint.path() + ": vocab_size " + std::to_string(c.vocab_size) +
                                " is too small for the llama2.c vocabulary (ids 0, 1, 2 are "
                                "<unk>, <s>, </s>)");
  }
  const int64_t context = options.context_length == 0 ? c.seq_len : options.context_length;
  if (context <= 0 || context > kMaxSeqLen) {
    return InvalidArgumentError("context length " + std::to_string(context) + " is not in [1, " +
                                std::to_string(kMaxSeqLen) + "]");
  }
  GgufVocab g = ToGgufVocab(vocab);
  using gguf::Value;
  const auto u32 = [](int64_t v) { return Value::U32(static_cast<uint32_t>(v)); };
  // Keys in llama.cpp's convert-llama2c-to-ggml order.
  writer->Set("tokenizer.ggml.tokens", Value::StringArray(std::move(g.tokens)));
  writer->Set("tokenizer.ggml.scores", Value::F32Array(std::move(g.scores)));
  writer->Set("tokenizer.ggml.token_type", Value::I32Array(std::move(g.types)));
  writer->Set("tokenizer.ggml.model", Value::String("llama"));
  writer->Set("general.architecture", Value::String("llama"));
  writer->Set("general.name", Value::String(options.name));
  writer->Set("tokenizer.ggml.unknown_token_id", Value::U32(0));
  writer->Set("tokenizer.ggml.bos_token_id", Value::U32(1));
  writer->Set("tokenizer.ggml.eos_token_id", Value::U32(2));
  writer->Set("tokenizer.ggml.seperator_token_id", Value::U32(kNoToken));  // gguf-py's spelling
  writer->Set("tokenizer.ggml.padding_token_id", Value::U32(kNoToken));
  writer->Set("llama.context_length", u32(context));
  writer->Set("llama.embedding_length", u32(c.dim));
  writer->Set("llama.feed_forward_length", u32(c.hidden_dim));
  writer->Set("llama.attention.head_count", u32(c.num_heads));
  writer->Set("llama.attention.head_count_kv", u32(c.num_kv_heads));
  writer->Set("llama.block_count", u32(c.num_layers));
  // run.c rotates the whole head (llama.cpp's converter caps this at 64, which only differs for
  // heads wider than 64).
  writer->Set("llama.rope.dimension_count", u32(c.head_size()));
  writer->Set("llama.attention.layer_norm_rms_epsilon", Value::F32(kRmsEps));

  // Tensors: GGUF dims are innermost first, so a row-major [out, in] matrix is {in, out}. Both
  // llama2.c and llama.cpp's `llama` apply RoPE to adjacent pairs, so Q and K are not permuted.
  const WeightLayout& w = checkpoint.layout();
  const auto add = [&](const std::string& name, std::vector<int64_t> dims, const Region& r) {
    writer->AddTensor(name, gguf::GgmlType::kF32, std::move(dims), checkpoint.data(r),
                      static_cast<size_t>(r.num_bytes));
  };
  add("token_embd.weight", {c.dim, c.vocab_size}, w.token_embedding);
  add("output_norm.weight", {c.dim}, w.rms_final);
  add("output.weight", {c.dim, c.vocab_size}, w.wcls);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_q.weight", {c.dim, c.dim}, checkpoint.LayerSlice(w.wq, i));
    add(b + "attn_k.weight", {c.dim, c.kv_dim()}, checkpoint.LayerSlice(w.wk, i));
    add(b + "attn_v.weight", {c.dim, c.kv_dim()}, checkpoint.LayerSlice(w.wv, i));
    add(b + "attn_output.weight", {c.dim, c.dim}, checkpoint.LayerSlice(w.wo, i));
    add(b + "attn_norm.weight", {c.dim}, checkpoint.LayerSlice(w.rms_att, i));
    add(b + "ffn_gate.weight", {c.dim, c.hidden_dim}, checkpoint.LayerSlice(w.w1, i));
    add(b + "ffn_down.weight", {c.hidden_dim, c.dim}, checkpoint.LayerSlice(w.w2, i));
    add(b + "ffn_up.weight", {c.dim, c.hidden_dim}, checkpoint.LayerSlice(w.w3, i));
    add(b + "ffn_norm.weight", {c.dim}, checkpoint.LayerSlice(w.rms_ffn, i));
  }
  return Status::Ok();
}

}  // namespace unmask::llama2c
