#include "cli/diffusion_output.h"
#include "common/moe_report.h"

#include <cstdio>
#include <vector>

namespace unmask::tools {

int PrintDiffusionResult(const LoadedModel& lm, const std::string& path,
                         std::span<const int32_t> prompt_ids, std::span<const int32_t> output,
                         const GenerationStats& stats, double load_ms, double tokenize_ms,
                         nlohmann::json params, bool json) {
  const Model& m = *lm.model;
  const Tokenizer& tok = *lm.tokenizer;
  // The text ends at the first end-of-generation token (EOS or EOT), as an OpenAI completion does:
  // a base model trained on packed documents may start a new one after it. output_ids keep all.
  size_t text_end = 0;
  while (text_end < output.size() && output[text_end] != tok.special().eos &&
         output[text_end] != tok.special().eot) {
    ++text_end;
  }
  const std::string text =
      tok.DecodeContinuation(prompt_ids.empty() ? kNoToken : prompt_ids.back(),
                             output.subspan(0, text_end), /*skip_special=*/true);
  if (json) {
    nlohmann::json j;
    j["text"] = text;
    j["finish_reason"] = text_end < output.size() ? "stop" : "length";
    j["prompt_ids"] = std::vector<int32_t>(prompt_ids.begin(), prompt_ids.end());
    j["output_ids"] = std::vector<int32_t>(output.begin(), output.end());
    j["nfe"] = stats.nfe;
    j["forward_positions"] = stats.forward_positions;
    j["tokens_per_second"] = stats.tokens_per_second();
    j["tokens_per_forward"] = stats.tokens_per_forward();
    j["gflops_per_second"] = stats.gflops_per_second();
    j["flops"] = stats.flops;
    j["bytes"] = stats.bytes;
    j["arithmetic_intensity"] = stats.arithmetic_intensity();
    if (m.config().is_moe()) j["moe"] = MoeJson(m.config(), stats);
    j["timings"] = {{"load_ms", load_ms},
                    {"tokenize_ms", tokenize_ms},
                    {"generate_ms", stats.total_ms},
                    {"forward_ms", stats.forward_ms},
                    {"decode_ms", stats.decode_ms}};
    j["model"] = {{"path", path},
                  {"architecture", m.config().architecture},
                  {"parameters", m.config().NumParameters()}};
    j["params"] = std::move(params);
    j["backend"] = m.backend().Describe();
    // Token text may hold invalid UTF-8 (byte-level pieces): replace it instead of throwing.
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s\n", text.c_str());
    std::fprintf(stderr,
                 "%lld tokens in %.2f s: %.2f tokens/s | %lld forwards (%.2f tokens/forward) | "
                 "forward %.0f GFLOP/s | %s\n",
                 static_cast<long long>(stats.generated_tokens), stats.total_ms / 1000.0,
                 stats.tokens_per_second(), static_cast<long long>(stats.nfe),
                 stats.tokens_per_forward(), stats.gflops_per_second(),
                 m.backend().Describe().c_str());
    if (m.config().is_moe()) {
      std::fprintf(stderr, "%s\n", MoeSummary(m.config(), stats).c_str());
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace unmask::tools
