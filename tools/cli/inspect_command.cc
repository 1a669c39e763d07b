#include "cli/inspect_command.h"

#include <cstdio>
#include <map>

#include "common/cli_util.h"
#include "format/gguf.h"
#include "model/config.h"
#include "model/eagle_head.h"
#include "model/hf_import.h"
#include "model/medusa_heads.h"
#include "tokenizer/tokenizer.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask inspect";

// Text from the file as printed: control bytes escaped (a NUL cut a line short; an escape sequence
// would reach the terminal).
std::string Shown(std::string_view text) { return EscapeControl(text); }

std::string Human(double n) {
  const char* units[] = {"", "K", "M", "B", "T"};
  int u = 0;
  while (n >= 1000 && u < 4) {
    n /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u ? "%.2f%s" : "%.0f%s", n, units[u]);
  return buf;
}

void PrintToken(const Tokenizer& tok, const char* name, int32_t id) {
  if (id < 0) {
    std::printf("  %-6s (none)\n", name);
  } else {
    std::printf("  %-6s %d '%s'\n", name, id, Shown(tok.TokenText(id)).c_str());
  }
}

// A Medusa or EAGLE file loaded on its own, as generate would load it for a target model whose
// hidden size and vocabulary are the ones the file declares: every tensor and shape is checked,
// only the fit to a real target is left to generate. One line: what loaded, or why not.
std::string CheckDraftFile(const std::string& path, const gguf::GgufFile& f,
                           const std::string& arch) {
  ModelConfig target;
  target.architecture = "llama";
  target.attention = AttentionKind::kCausal;
  const auto hidden = f.GetInt(arch + ".embedding_length");
  const auto vocab = f.GetInt(arch + ".vocab_size");
  target.hidden_size = hidden.ok() ? *hidden : 0;
  target.vocab_size = vocab.ok() ? *vocab : 0;
  target.context_length = 4096;
  // The loaders' messages speak of "the base model": here it is that assumed target.
  const std::string against = " (checked against a target of hidden size " +
                              std::to_string(target.hidden_size) + " and vocabulary " +
                              std::to_string(target.vocab_size) + ", as the file declares)";
  auto file = gguf::GgufFile::Open(path);
  if (!file.ok()) return "does not load: " + file.status().message();
  if (arch == "medusa") {
    auto heads = MedusaHeads::FromFile(std::move(file).value(), target);
    if (!heads.ok()) return "does not load: " + heads.status().message() + against;
    return "loads: " + std::to_string((*heads)->head_count()) + " heads, draft vocabulary " +
           std::to_string((*heads)->draft_vocab_size()) + ", " +
           Human(static_cast<double>((*heads)->weight_bytes())) + "B of weights";
  }
  auto eagle = EagleHead::FromFile(std::move(file).value(), target);
  if (!eagle.ok()) return "does not load: " + eagle.status().message() + against;
  return "loads: draft vocabulary " + std::to_string((*eagle)->draft_vocab_size()) + ", " +
         Human(static_cast<double>((*eagle)->weight_bytes())) + "B of weights";
}

}  // namespace

void InspectCommand::AddTo(CLI::App& app) {
  app.add_option("model", path, "GGUF file")->required()->type_name("MODEL.gguf");
  app.add_flag("--metadata", metadata, "also list every metadata key and value");
  app.add_flag("--no-tensors", no_tensors, "do not list the tensors");
}

int InspectCommand::Run() const {
  auto file_or = OpenModelFile(path);
  if (!file_or.ok()) return FailWith(kWho, file_or.status());
  const gguf::GgufFile& f = **file_or;
  std::printf("file: %s\n  GGUF v%u, %zu metadata keys, %zu tensors, %.1f MiB, alignment %llu\n",
              path.c_str(), f.version(), f.metadata().size(), f.tensors().size(),
              static_cast<double>(f.file_size()) / (1 << 20),
              static_cast<unsigned long long>(f.alignment()));

  // Medusa heads and EAGLE draft layers are parts of another model's speculative decoding.
  const auto arch = f.GetString("general.architecture");
  const bool draft_file = arch.ok() && (*arch == "medusa" || *arch == "eagle");
  auto config_or = ReadModelConfig(f);
  if (draft_file) {
    std::printf(
        "architecture: %s (%s for speculative decoding of an autoregressive model: unmask "
        "generate -m TARGET.gguf --spec %s --draft-heads %s; found beside TARGET.gguf as "
        "TARGET.%s.gguf)\n",
        Shown(*arch).c_str(), *arch == "medusa" ? "draft heads" : "a draft layer",
        Shown(*arch).c_str(), path.c_str(), Shown(*arch).c_str());
    for (const gguf::MetadataEntry& e : f.metadata()) {
      if (e.key.rfind(*arch + ".", 0) == 0) {
        std::printf("  %s = %s\n", Shown(e.key).c_str(), Shown(e.value.ToString()).c_str());
      }
    }
    std::printf("  %s (whether it fits a target model is checked when generate loads it)\n",
                Shown(CheckDraftFile(path, f, *arch)).c_str());
  } else if (config_or.ok()) {
    ModelConfig c = *config_or;
    if (const auto* e = f.FindTensor("token_embd.weight"); e && e->dims.size() == 2) {
      c.vocab_size = e->dims[1];
    }
    c.tied_output = f.FindTensor("output.weight") == nullptr;
    std::printf("architecture: %s%s%s\n", Shown(c.architecture).c_str(),
                c.name.empty() ? "" : "  name: ", Shown(c.name).c_str());
    const std::string attention =
        c.attention == AttentionKind::kBidirectional ? "bidirectional (diffusion)"
        : c.attention == AttentionKind::kBlockCausal
            ? "block-causal (block diffusion, block_length " + std::to_string(c.block_length) + ")"
            : "causal (autoregressive)";
    std::printf("  attention %s, %s%s\n", attention.c_str(),
                c.tied_output ? "output tied to token_embd" : "separate output weight",
                c.shift_logits ? ", shifted logits" : "");
    std::printf("  hidden %lld, layers %lld, heads %lld, kv heads %lld, head dim %lld, ffn %lld\n",
                static_cast<long long>(c.hidden_size), static_cast<long long>(c.num_layers),
                static_cast<long long>(c.num_heads), static_cast<long long>(c.num_kv_heads),
                static_cast<long long>(c.head_dim), static_cast<long long>(c.ffn_size));
    std::printf("  vocab %lld, context %lld, rms eps %g, rope base %g, rope dim %lld (%s)\n",
                static_cast<long long>(c.vocab_size), static_cast<long long>(c.context_length),
                static_cast<double>(c.rms_eps), c.rope_base, static_cast<long long>(c.rope_dim),
                c.rope_layout == RopeLayout::kInterleaved ? "interleaved" : "neox");
    std::printf("  parameters %s (%lld)\n", Human(static_cast<double>(c.NumParameters())).c_str(),
                static_cast<long long>(c.NumParameters()));
    if (c.is_moe()) {
      const MoeRouting& r = c.routing;
      std::printf("  mixture of experts: %lld experts of width %lld, top-%lld, %s%s%s, scale %g",
                  static_cast<long long>(c.num_experts), static_cast<long long>(c.expert_ffn_size),
                  static_cast<long long>(r.top_k),
                  r.gating == MoeGating::kSoftmax ? "softmax" : "sigmoid",
                  r.normalize ? ", renormalised" : "",
                  r.num_groups > 1 ? (", groups " + std::to_string(r.groups_used) + " of " +
                                      std::to_string(r.num_groups))
                                         .c_str()
                                   : "",
                  static_cast<double>(r.scale));
      if (c.shared_expert_ffn_size > 0) {
        std::printf(", shared expert width %lld", static_cast<long long>(c.shared_expert_ffn_size));
      }
      if (c.leading_dense_layers > 0) {
        std::printf(", %lld leading dense layer(s)",
                    static_cast<long long>(c.leading_dense_layers));
      }
      std::printf("\n  active parameters per position %s (%lld)\n",
                  Human(static_cast<double>(c.ActiveParameters())).c_str(),
                  static_cast<long long>(c.ActiveParameters()));
    }
  } else {
    std::printf("architecture: not runnable by unmask: %s\n",
                Shown(config_or.status().message()).c_str());
  }

  auto tok_or = Tokenizer::FromGguf(f);
  if (draft_file) {
    std::printf("tokenizer: the target model's\n");
  } else if (tok_or.ok()) {
    const Tokenizer& tok = **tok_or;
    std::printf("tokenizer: %s%s%s, %d tokens, add_bos %s\n", Shown(tok.model_name()).c_str(),
                tok.pre_name().empty() ? "" : " / pre ", Shown(tok.pre_name()).c_str(),
                tok.vocab_size(), tok.special().add_bos ? "true" : "false");
    PrintToken(tok, "bos", tok.special().bos);
    PrintToken(tok, "eos", tok.special().eos);
    PrintToken(tok, "eot", tok.special().eot);
    PrintToken(tok, "pad", tok.special().pad);
    PrintToken(tok, "mask", tok.special().mask);
    std::printf("  chat template: %s\n",
                tok.chat_template().empty()
                    ? "(none)"
                    : (std::to_string(tok.chat_template().size()) + " characters").c_str());
  } else {
    std::printf("tokenizer: unavailable: %s\n", Shown(tok_or.status().message()).c_str());
  }

  if (metadata) {
    std::printf("metadata:\n");
    for (const gguf::MetadataEntry& e : f.metadata()) {
      std::printf("  %s = %s\n", Shown(e.key).c_str(), Shown(e.value.ToString()).c_str());
    }
  }
  int64_t params = 0;
  std::map<std::string, int64_t> by_type;
  for (const gguf::TensorInfo& t : f.tensors()) {
    params += t.num_elements();
    const auto info = gguf::GetGgmlTypeInfo(static_cast<uint32_t>(t.type));
    by_type[std::string(info ? info->name : "?")] += t.num_elements();
  }
  if (!no_tensors) {
    std::printf("tensors:\n");
    for (const gguf::TensorInfo& t : f.tensors()) {
      const auto info = gguf::GetGgmlTypeInfo(static_cast<uint32_t>(t.type));
      std::printf("  %-32s %-6s %s\n", Shown(t.name).c_str(),
                  std::string(info ? info->name : "?").c_str(), t.ShapeString().c_str());
    }
  }
  std::printf("total: %s parameters stored (", Human(static_cast<double>(params)).c_str());
  bool first = true;
  for (const auto& [name, n] : by_type) {
    std::printf("%s%s %s", first ? "" : ", ", name.c_str(), Human(static_cast<double>(n)).c_str());
    first = false;
  }
  std::printf(")\n");
  return 0;
}

}  // namespace unmask::tools
