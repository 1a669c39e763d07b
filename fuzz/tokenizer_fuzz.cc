// Tokenizer encode / decode on arbitrary bytes with the project's vocabularies: SentencePiece-style
// (the twins' GGUF vocabulary, byte fallback) and byte-level BPE with a Hugging Face pipeline
// (tests/data/hf/tokenizers/qwen-style: NFC, regex pre-tokenizer, added tokens), and decoding of
// arbitrary id sequences.
// Input: one flags byte (vocabulary, add_special, parse_special, skip_special, decode mode), then
// the text (or, in decode mode, little-endian int32 ids).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_hf.h"

namespace {

std::vector<std::unique_ptr<unmask::Tokenizer>> LoadAll() {
  using namespace unmask;
  std::vector<std::unique_ptr<Tokenizer>> all;
  for (const char* path :
       {"models/unmask-tinystories-llada.gguf", "tests/data/models/llada-tiny-mha-tied-f32.gguf"}) {
    auto file = gguf::GgufFile::Open(fuzz::SourcePath(path));
    if (!file.ok()) fuzz::Fail(file.status().ToString());
    auto tok = Tokenizer::FromGguf(**file);
    if (!tok.ok()) fuzz::Fail(tok.status().ToString());
    all.push_back(std::move(tok).value());
  }
  for (const char* dir :
       {"tests/data/hf/tokenizers/qwen-style", "models/unmask-tinystories-block-hf"}) {
    auto tok = LoadHfTokenizer(fuzz::SourcePath(dir));
    if (!tok.ok()) fuzz::Fail(tok.status().ToString());
    all.push_back(std::move(tok).value());
  }
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask;
  static const std::vector<std::unique_ptr<Tokenizer>> tokenizers = LoadAll();
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const Tokenizer& tok = *tokenizers[(flags & 3) % tokenizers.size()];
  const bool add_special = (flags & 4) != 0;
  const bool parse_special = (flags & 8) != 0;
  const bool skip_special = (flags & 16) != 0;
  const bool decode_mode = (flags & 32) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<TokenId> ids;
  if (decode_mode) {
    ids.resize(text.size() / 4);
    if (!ids.empty()) std::memcpy(ids.data(), text.data(), ids.size() * 4);
  } else {
    ids = tok.Encode(text, add_special, parse_special);
    for (TokenId id : ids) {
      if (id < 0 || id >= tok.vocab_size()) fuzz::Fail("Encode gave an id out of range");
    }
  }
  const std::string decoded = tok.Decode(ids, skip_special);
  const TokenId previous = ids.empty() ? kNoToken : ids.front();
  (void)tok.DecodeContinuation(previous, ids, skip_special, (flags & 64) != 0);
  std::string bytes;
  for (TokenId id : ids) {
    bytes += tok.TokenBytes(id);
    (void)tok.TokenText(id);
    (void)tok.IsControl(id);
  }
  // Re-encoding what was decoded must not fail either (the server encodes stop strings and
  // continuation text this way).
  (void)tok.Encode(decoded, false, false);
  return 0;
}
