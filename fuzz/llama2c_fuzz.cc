// llama2.c import on arbitrary bytes: the checkpoint header (7 int32 config fields, the sign of
// vocab_size as the shared-classifier flag), the weight layout against the file size, and the
// tokenizer.bin parser; when both parse, the GGUF conversion's checks.
// Input: checkpoint bytes [, "\0\0\0\0SEP", tokenizer.bin bytes]. Seeds: written by scripts/fuzz.sh
// from the llama2.c files the tests generate (tests/format/llama2c_test.cc builds them in memory
// too).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "format/gguf.h"
#include "format/llama2c.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask;
  // A 4-NUL separator: the checkpoint itself is full of zero bytes.
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t sep = all.find(std::string_view("\0\0\0\0SEP", 7));
  const std::string_view ckpt = all.substr(0, sep);
  const std::string_view vocab_bytes =
      sep == std::string_view::npos ? std::string_view() : all.substr(sep + 7);
  auto checkpoint =
      llama2c::Checkpoint::FromBytes(std::vector<uint8_t>(ckpt.begin(), ckpt.end()), "fuzz.bin");
  if (!checkpoint.ok()) return 0;
  const llama2c::Config& c = (*checkpoint)->config();
  const llama2c::WeightLayout& l = (*checkpoint)->layout();
  if (l.file_size > ckpt.size()) fuzz::Fail("the layout reaches past the file");
  for (const llama2c::Region& r : {l.token_embedding, l.rms_att, l.wq, l.wk, l.wv, l.wo, l.rms_ffn,
                                   l.w1, l.w2, l.w3, l.rms_final, l.wcls}) {
    if (r.offset > l.file_size || r.num_bytes > l.file_size - r.offset) {
      fuzz::Fail("a weight region reaches past the file");
    }
  }
  // vocab_size from the checkpoint (what `unmask convert` passes).
  auto vocab = llama2c::ParseTokenizer(std::vector<uint8_t>(vocab_bytes.begin(), vocab_bytes.end()),
                                       "tokenizer.bin", c.vocab_size);
  if (!vocab.ok()) return 0;
  gguf::GgufWriter writer;
  (void)llama2c::BuildGguf(**checkpoint, *vocab, llama2c::ConvertOptions{}, &writer);
  return 0;
}
