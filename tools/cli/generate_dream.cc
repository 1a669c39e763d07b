// `unmask generate` with a Dream model: Dream's reference sampler (decode/decoder_dream.h), one
// full forward per step, with --alg, --eps, --alg-temp, and the shared --steps, --gen-length,
// --temperature, --seed, --top-p, --top-k. Block-decoder flags (--block-length, --cache,
// --commit, ...) select the block decoder instead (generate_command.cc), with shifted logits.
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "cli/diffusion_output.h"
#include "cli/generate_command.h"
#include "common/cli_util.h"
#include "common/terminal.h"
#include "decode/decoder_dream.h"
#include "engine/generate_dream.h"

namespace unmask::tools {
namespace {

int Fail(const Status& s) {
  PrintError("unmask generate", s.message());
  return 1;
}

bool Given(const GenerateCommand& cmd, const char* name) {
  const CLI::Option* o = cmd.cli != nullptr ? cmd.cli->get_option_no_throw(name) : nullptr;
  return o != nullptr && o->count() > 0;
}

// Flags of the block decoder (decode/decoder_diffusion.h: blocks, remasking, CFG, caches, commit
// rules). On a Dream model any of them selects that decoder (with shifted logits, as Fast-dLLM's
// Dream path) instead of Dream's reference sampler.
constexpr const char* kBlockDecoderOnly[] = {"--block-length",
                                             "--remasking",
                                             "--cfg-scale",
                                             "--logits-eos-inf",
                                             "--confidence-eos-eot-inf",
                                             "--cache",
                                             "--prefix-look",
                                             "--after-look",
                                             "--commit",
                                             "--threshold",
                                             "--factor",
                                             "--low-threshold",
                                             "--credit-alpha",
                                             "--credit-beta",
                                             "--credit-gamma",
                                             "--early-stop"};
constexpr const char* kDreamSamplerOnly[] = {"--alg", "--eps", "--alg-temp", "--top-k", "--top-p"};

}  // namespace

bool WantsBlockDecoder(const GenerateCommand& cmd) {
  for (const char* name : kBlockDecoderOnly) {
    if (Given(cmd, name)) return true;
  }
  return false;
}

Status CheckDreamFlags(const GenerateCommand& cmd, bool is_dream, const std::string& path,
                       const std::string& architecture) {
  if (is_dream && WantsBlockDecoder(cmd)) {
    for (const char* name : kDreamSamplerOnly) {
      if (Given(cmd, name)) {
        return InvalidArgumentError(std::string(name) +
                                    " applies to Dream's reference sampler, but the block-decoder "
                                    "flags given (--block-length, --cache, --commit, ...) select "
                                    "the block decoder");
      }
    }
    return Status::Ok();
  }
  if (is_dream) {
    // The live canvas is drawn from the block decoder's state only.
    if (Given(cmd, "--visual")) {
      return InvalidArgumentError(
          "--visual is not available with Dream's reference sampler (give a block-decoder flag "
          "such as --block-length to use the block decoder)");
    }
    return Status::Ok();
  }
  for (const char* name : {"--alg", "--eps", "--alg-temp"}) {
    if (Given(cmd, name)) {
      return InvalidArgumentError(std::string(name) + " applies to Dream models; " + path +
                                  " is a '" + architecture + "' model");
    }
  }
  return Status::Ok();
}

int RunDreamGeneration(const GenerateCommand& cmd, LoadedModel& loaded, const std::string& path,
                       const std::vector<int32_t>& ids, bool used_chat, double load_ms,
                       double tokenize_ms) {
  const Model& m = *loaded.model;
  const Tokenizer& tok = *loaded.tokenizer;
  DreamParams params;
  params.gen_length = cmd.diffusion.params.gen_length;
  params.steps = cmd.diffusion.params.steps;
  params.temperature = cmd.diffusion.params.temperature;
  params.seed = cmd.diffusion.params.seed;
  params.eps = cmd.dream.eps;
  params.alg_temp = cmd.dream.alg_temp;
  params.alg = *DreamAlgFromName(cmd.dream.alg);  // checked by the flag's IsMember
  // The AR defaults (top-k 40, top-p 0.95) are not Dream's: off unless given.
  params.top_k = Given(cmd, "--top-k") ? cmd.ar.sampling.top_k : 0;
  params.top_p = Given(cmd, "--top-p") ? cmd.ar.sampling.top_p : 1.0;
  auto dec_or = DreamDecoder::Create(params, tok.special().mask, m.config().shift_logits, ids,
                                     m.config().context_length, m.config().vocab_size);
  if (!dec_or.ok()) return Fail(dec_or.status());
  DreamDecoder& dec = *dec_or;

  Workspace ws;
  ProgressLine progress("generating");
  const auto gen_start = std::chrono::steady_clock::now();
  auto on_step = [&](const DreamDecoder& d, const DreamStepResult& r) {
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - gen_start).count();
    const int64_t committed =
        params.gen_length -
        (d.num_masked() > params.gen_length ? params.gen_length : d.num_masked());
    char info[120];
    std::snprintf(info, sizeof(info), "step %lld/%lld  %.2f tokens/s",
                  static_cast<long long>(r.step + 1), static_cast<long long>(params.steps),
                  secs > 0 ? static_cast<double>(committed) / secs : 0.0);
    progress.Update(d.Done() ? params.gen_length : committed, params.gen_length, info);
  };
  auto stats_or = RunDream(m, dec, ws, on_step);
  progress.Finish();
  if (!stats_or.ok()) return Fail(stats_or.status());
  const nlohmann::json j = {{"gen_length", params.gen_length},
                            {"steps", params.steps},
                            {"alg", std::string(DreamAlgName(params.alg))},
                            {"eps", params.eps},
                            {"alg_temp", params.alg_temp},
                            {"temperature", params.temperature},
                            {"top_p", params.top_p},
                            {"top_k", params.top_k},
                            {"seed", params.seed},
                            {"shift_logits", m.config().shift_logits},
                            {"chat", used_chat}};
  return PrintDiffusionResult(loaded, path, ids, dec.generated(), *stats_or, load_ms, tokenize_ms,
                              j, cmd.json);
}

}  // namespace unmask::tools
