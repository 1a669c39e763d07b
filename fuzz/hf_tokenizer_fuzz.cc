// The Hugging Face tokenizer folder on fuzzed files: tokenizer.json (model, vocabulary, merges,
// added tokens, normalizer, pre-tokenizer and decoder pipelines), then a fixed text encoded and
// decoded with whatever tokenizer it describes.
// Input: tokenizer.json [, NUL, tokenizer_config.json]. Seeds: the tokenizer.json files of
// tests/data/hf and models/ (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_hf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace unmask;
  static const std::string dir = fuzz::ScratchDir("hftok");
  const auto parts = fuzz::SplitNul(data, size, 2);
  fuzz::WriteFile(dir + "/tokenizer.json", parts[0]);
  const std::string config = dir + "/tokenizer_config.json";
  if (parts.size() == 2) {
    fuzz::WriteFile(config, parts[1]);
  } else {
    std::filesystem::remove(config);
  }
  auto tok = LoadHfTokenizer(dir);
  if (!tok.ok()) {
    if (tok.status().message().empty()) fuzz::Fail("an error without a message");
    return 0;
  }
  const std::string text = "Hello world, <|im_start|>user 12345 \xc3\xa9\xe4\xb8\xad!\n\n  x\xff";
  for (bool special : {false, true}) {
    std::vector<TokenId> ids = (*tok)->Encode(text, special, special);
    for (TokenId id : ids) {
      if (id < 0 || id >= (*tok)->vocab_size()) fuzz::Fail("Encode gave an id out of range");
    }
    (void)(*tok)->Decode(ids, !special);
  }
  return 0;
}
