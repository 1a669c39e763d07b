// GGUF reader on arbitrary bytes: header, metadata (nested arrays included) and tensor infos, then
// what the loader reads from the metadata: the model config and the tokenizer (a vocabulary read
// from fuzzed metadata), which then encodes and decodes a fixed text; and, for a file that says
// it holds Medusa heads, the heads loader (for a base model of the file's own sizes, up to 4096)
// and every head's prediction; if it holds an EAGLE draft layer, the layer's loader (for a
// causal base of the file's own sizes) and a context pass and a tree pass through it.
// Seeds: the project's GGUF files (tests/data/models, models/*.gguf cut to their header) and a
// small Medusa heads file (scripts/fuzz_seeds.py).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "fuzz_util.h"
#include "model/config.h"
#include "model/eagle_head.h"
#include "model/medusa_heads.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask;
  auto file = gguf::GgufFile::FromBytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
  if (!file.ok()) {
    if (file.status().message().empty()) fuzz::Fail("an error without a message");
    return 0;
  }
  const gguf::GgufFile& f = **file;
  for (const gguf::MetadataEntry& e : f.metadata()) (void)e.value.ToString();
  for (const gguf::TensorInfo& t : f.tensors()) {
    (void)t.ShapeString();
    if (t.num_bytes > f.file_size() || t.offset > f.file_size() ||
        f.data_offset() + t.offset + t.num_bytes > f.file_size()) {
      fuzz::Fail("tensor " + t.name + " reaches past the end of the file");
    }
  }
  (void)ReadModelConfig(f);
  auto tok = Tokenizer::FromGguf(f);
  if (tok.ok()) {
    const std::string text = "Hello world, <|im_start|> 12345 \xc3\xa9\xe4\xb8\xad!\n\n  x";
    for (bool special : {false, true}) {
      std::vector<TokenId> ids = (*tok)->Encode(text, special, special);
      for (TokenId id : ids) {
        if (id < 0 || id >= (*tok)->vocab_size()) fuzz::Fail("Encode gave an id out of range");
        (void)(*tok)->TokenBytes(id);
      }
      (void)(*tok)->Decode(ids, special);
      (void)(*tok)->DecodeContinuation(ids.empty() ? kNoToken : ids[0], ids, special);
    }
  }
  if (auto arch = f.GetString("general.architecture"); arch.ok() && *arch == "medusa") {
    auto hidden = f.GetInt("medusa.embedding_length");
    auto vocab = f.GetInt("medusa.vocab_size");
    if (hidden.ok() && vocab.ok() && *hidden >= 1 && *hidden <= 4096 && *vocab >= 1 &&
        *vocab <= 4096) {
      ModelConfig base;
      base.hidden_size = *hidden;
      base.vocab_size = *vocab;
      auto again = gguf::GgufFile::FromBytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
      auto heads = MedusaHeads::FromFile(std::move(again).value(), base);
      if (!heads.ok() && heads.status().message().empty()) {
        fuzz::Fail("a heads error without a message");
      }
      if (heads.ok()) {
        const std::vector<float> h(static_cast<size_t>(*hidden), 0.5f);
        MedusaScratch scratch;
        for (int32_t k = 0; k < (*heads)->head_count(); ++k) {
          MedusaGuess g;
          if (!(*heads)->Predict(h, k, scratch, &g).ok()) fuzz::Fail("Predict failed on a head");
          if (g.token < 0 || g.token >= *vocab) fuzz::Fail("a head guessed an id out of range");
        }
      }
    }
  }
  if (auto arch = f.GetString("general.architecture"); arch.ok() && *arch == "eagle") {
    auto hidden = f.GetInt("eagle.embedding_length");
    auto vocab = f.GetInt("eagle.vocab_size");
    auto heads = f.GetInt("eagle.attention.head_count");
    if (hidden.ok() && vocab.ok() && heads.ok() && *hidden >= 1 && *hidden <= 1024 && *vocab >= 1 &&
        *vocab <= 4096 && *heads >= 1 && *hidden % *heads == 0) {
      ModelConfig base;  // a causal base model of the file's own sizes
      base.hidden_size = *hidden;
      base.vocab_size = *vocab;
      base.attention = AttentionKind::kCausal;
      base.context_length = 16;
      base.rope_dim = 0;  // head_dim (the loader refuses an odd one)
      auto again = gguf::GgufFile::FromBytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
      auto layer = EagleHead::FromFile(std::move(again).value(), base);
      if (!layer.ok() && layer.status().message().empty()) {
        fuzz::Fail("a draft-layer error without a message");
      }
      if (layer.ok() && (*layer)->draft_vocab_size() <= 4096) {
        // Three context rows, then a tree of two children of the context, as the drafter runs.
        auto kv = (*layer)->MakeKvCache(16);
        if (!kv.ok()) fuzz::Fail("MakeKvCache failed");
        EagleWorkspace ws;
        const auto d = static_cast<size_t>(*hidden);
        const std::vector<float> embed(3 * d, 0.25f), feats(3 * d, -0.5f);
        const int32_t pos[3] = {0, 1, 2}, tree_pos[2] = {3, 3}, parents[2] = {-1, -1};
        if (!(*layer)->Forward(embed, feats, pos, {}, 0, *kv, ws).ok()) {
          fuzz::Fail("Forward failed on the context");
        }
        if (!(*layer)
                 ->Forward(std::span(embed).first(2 * d), std::span(feats).first(2 * d), tree_pos,
                           parents, 3, *kv, ws)
                 .ok()) {
          fuzz::Fail("Forward failed on a tree");
        }
        for (int64_t i = 0; i < (*layer)->draft_vocab_size(); ++i) {
          const int32_t id = (*layer)->draft_id(i);
          if (id < 0 || id >= *vocab) fuzz::Fail("a draft id out of the vocabulary");
        }
      }
    }
  }
  return 0;
}
