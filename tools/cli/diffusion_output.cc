#include "cli/diffusion_output.h"
#include "common/moe_report.h"

#include <cstdio>
#include <vector>

namespace unmask::tools {

int PrintDiffusionResult(const LoadedModel& lm, const std::string& path,
                         std::span<const int32_t> prompt_ids, const DiffusionResult& result,
                         const GenerationStats& stats, double load_ms, double tokenize_ms,
                         nlohmann::json params, bool json) {
  const Model& m = *lm.model;
  const std::string& text = result.text;
  const std::span<const int32_t> output = result.output;
  if (json) {
    nlohmann::json j;
    j["text"] = text;
    j["finish_reason"] = result.finish;
    if (!result.suffix.empty()) j["suffix"] = result.suffix;
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
    std::printf("%s%s\n", result.text_printed ? "" : text.c_str(), result.suffix.c_str());
    std::fflush(stdout);  // the text before the statistics on a shared terminal
    if (result.finish == "interrupted") std::fprintf(stderr, "interrupted (Ctrl-C)\n");
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
  return result.finish == "interrupted" ? 130 : 0;
}

}  // namespace unmask::tools
