// The Hugging Face folder import with a fuzzed config.json (and, when the input holds a second
// part after a NUL byte, a fuzzed model.safetensors.index.json) beside the real tensors of one of
// the project's tiny checkpoints: architecture dispatch, every config key's type and range checks,
// the MoE routing keys, and the shape checks of the tensors against the config.
// Input: one byte choosing the checkpoint, then config.json [, NUL, index.json].
// Seeds: tests/data/hf/*/config.json behind their checkpoint's byte (scripts/fuzz.sh).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "model/hf_import.h"

namespace {

// The checkpoints, in the order of the selector byte (scripts/fuzz.sh writes the same order).
const char* const kCheckpoints[] = {
    "tests/data/hf/qwen3-tiny",          "tests/data/hf/qwen2-tiny",
    "tests/data/hf/sdar-tiny-f32",       "tests/data/hf/fastdllm-v2-tiny",
    "tests/data/hf/qwen3-moe-tiny",      "tests/data/hf/llada-moe-tiny-f32",
    "tests/data/hf/llada2-tiny-bf16",    "tests/data/hf/sdar-moe-tiny-bf16",
    "models/unmask-tinystories-block-hf"};
constexpr size_t kNum = sizeof(kCheckpoints) / sizeof(kCheckpoints[0]);

// One scratch folder per checkpoint, holding links to its files except config.json (and the
// index, rewritten per input when the checkpoint is sharded).
struct Folders {
  std::vector<std::string> dirs;
  std::vector<bool> sharded;
  Folders() {
    namespace fs = std::filesystem;
    const std::string root = unmask::fuzz::ScratchDir("hf");
    for (size_t i = 0; i < kNum; ++i) {
      const std::string dir = root + "/" + std::to_string(i);
      fs::create_directory(dir);
      bool has_index = false;
      for (const auto& e : fs::directory_iterator(unmask::fuzz::SourcePath(kCheckpoints[i]))) {
        const std::string name = e.path().filename().string();
        if (name == "config.json") continue;
        if (name == "model.safetensors.index.json") has_index = true;
        fs::create_symlink(e.path(), dir + "/" + name);
      }
      dirs.push_back(dir);
      sharded.push_back(has_index);
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Folders folders;
  if (size < 1) return 0;
  const size_t which = data[0] % kNum;
  const auto parts = unmask::fuzz::SplitNul(data + 1, size - 1, 2);
  const std::string& dir = folders.dirs[which];
  unmask::fuzz::WriteFile(dir + "/config.json", parts[0]);
  const std::string index = dir + "/model.safetensors.index.json";
  if (folders.sharded[which] && parts.size() == 2) {
    std::filesystem::remove(index);
    unmask::fuzz::WriteFile(index, parts[1]);
  }
  auto view = unmask::ImportHfCheckpoint(dir, /*with_tokenizer=*/false);
  if (!view.ok() && view.status().message().empty())
    unmask::fuzz::Fail("an error without a message");
  if (folders.sharded[which] && parts.size() == 2) {
    // Back to the real index for the next input.
    std::filesystem::remove(index);
    std::filesystem::create_symlink(unmask::fuzz::SourcePath(std::string(kCheckpoints[which]) +
                                                             "/model.safetensors.index.json"),
                                    index);
  }
  return 0;
}
