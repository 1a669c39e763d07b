// The sampling settings a model's authors recommend, as files carry them: llama.cpp's GGUF keys
// general.sampling.{temp, top_k, top_p, min_p, penalty_repeat, penalty_last_n}, and Hugging Face's
// generation_config.json (temperature, top_k, top_p, min_p, repetition_penalty, do_sample), which
// the HF importer writes as those GGUF keys (so `unmask convert --hf` carries them too). The server
// uses them as the defaults of requests that set none (vLLM's generation-config behaviour).
#ifndef UNMASK_MODEL_SAMPLING_DEFAULTS_H_
#define UNMASK_MODEL_SAMPLING_DEFAULTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/gguf.h"

namespace unmask {

struct SamplingDefaults {
  std::optional<double> temperature;     // general.sampling.temp (0: greedy)
  std::optional<int64_t> top_k;          // general.sampling.top_k (0: off)
  std::optional<double> top_p;           // general.sampling.top_p
  std::optional<double> min_p;           // general.sampling.min_p
  std::optional<double> repeat_penalty;  // general.sampling.penalty_repeat
  std::optional<int64_t> repeat_last_n;  // general.sampling.penalty_last_n (-1: all)
  bool empty() const {
    return !temperature && !top_k && !top_p && !min_p && !repeat_penalty && !repeat_last_n;
  }
};

// The defaults in `file`'s metadata (absent keys stay unset). Errors: InvalidArgument naming the
// key for a value of the wrong type or out of range (temp < 0, top_p outside (0, 1], min_p
// outside [0, 1], top_k < 0, penalty_repeat <= 0, penalty_last_n < -1).
StatusOr<SamplingDefaults> ReadSamplingDefaults(const gguf::GgufFile& file);

// Appends the general.sampling.* keys of `dir`/generation_config.json to `md` (nothing when the
// file is absent). do_sample false (transformers' greedy decoding) is written as temp 0.
// Errors: InvalidArgument naming the file and the key for a value of the wrong type.
Status AppendGenerationConfigSampling(const std::string& dir, std::vector<gguf::MetadataEntry>* md);

}  // namespace unmask

#endif  // UNMASK_MODEL_SAMPLING_DEFAULTS_H_
