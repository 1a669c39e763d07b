// POST /v1/completions and /v1/chat/completions: request -> prompt ids -> (router) -> engine
// requests (one per choice) -> scheduler; the response streams (SSE) or is sent whole
// (server/response_stream.h). Both are written from an httplib content provider, which lets the
// handler notice a client that went away (a failed write) and cancel its requests. A closed
// connection accepts one more write (the peer answers it with a reset), so a departed client is
// noticed within about 400 ms.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string_view>

#include "chat/tool_calls.h"
#include "common/infill.h"
#include "grammar/gbnf_parser.h"
#include "server/api_response.h"
#include "server/response_stream.h"
#include "server/server.h"

namespace unmask::server {

using nlohmann::json;

namespace {

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t RandomSeed() {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return gen();
}

// The request fields that were set, named as the decoder factory knows them
// (decode/decoder_factory.h): it settles them and lists those the chosen decoder does not use.
std::vector<GivenParam> GivenFields(const ApiRequest& r) {
  std::vector<GivenParam> out;
  auto add = [&](bool present, const char* name) {
    if (present) out.push_back({name, name});
  };
  // Sampling fields at their neutral value change nothing on any engine (clients send top_p 1 by
  // default): only a value that acts is a field the decoder must use.
  add(r.top_p.has_value() && *r.top_p != 1.0, "top_p");
  add(r.top_k.has_value() && *r.top_k > 0, "top_k");
  add(r.min_p.has_value() && *r.min_p != 0.0, "min_p");
  add(r.frequency_penalty.has_value() && *r.frequency_penalty != 0.0, "frequency_penalty");
  add(r.presence_penalty.has_value() && *r.presence_penalty != 0.0, "presence_penalty");
  add(r.repeat_penalty.has_value() && *r.repeat_penalty != 1.0, "repeat_penalty");
  add(r.repeat_last_n.has_value() && r.repeat_penalty.has_value() && *r.repeat_penalty != 1.0,
      "repeat_last_n");
  add(r.speculative.has_value() && *r.speculative != "none", "speculative");
  add(r.logprobs >= 0, "logprobs");
  add(r.steps.has_value(), "steps");
  add(r.block_length.has_value(), "block_length");
  add(r.remasking.has_value(), "remasking");
  add(r.denoising_steps.has_value(), "denoising_steps");
  add(r.eb_threshold.has_value(), "eb_threshold");
  add(r.edit_threshold.has_value(), "edit_threshold");
  add(r.max_post_edit_steps.has_value(), "max_post_edit_steps");
  add(r.separate_store.has_value(), "separate_store");
  add(r.small_block_size.has_value(), "small_block_size");
  add(r.cache.has_value(), "cache");
  add(r.commit.has_value(), "commit");
  add(r.threshold.has_value(), "threshold");
  add(r.factor.has_value(), "factor");
  add(r.low_threshold.has_value(), "low_threshold");
  add(r.cfg_scale.has_value(), "cfg_scale");
  add(r.early_stop.has_value(), "early_stop");
  add(r.alg.has_value(), "alg");
  add(r.eps.has_value(), "eps");
  add(r.alg_temp.has_value(), "alg_temp");
  add(r.suffix.has_value() && !r.suffix->empty(), "suffix");
  return out;
}

// Infilling (common/infill.h): a diffusion model gets the suffix as canvas context (the decoder
// factory refuses it for block-causal models); an AR model with fill-in-the-middle tokens gets
// llama.cpp's PSM prompt; any other AR model cannot fill in.
std::optional<ApiError> ApplySuffix(const ApiRequest& r, const std::string& model_id,
                                    bool diffusion, const Tokenizer& tok, GenerationRequest* g) {
  if (!r.suffix || r.suffix->empty()) return std::nullopt;
  std::vector<int32_t> suffix = tok.Encode(*r.suffix, /*add_special=*/false,
                                           /*parse_special=*/false);
  if (diffusion) {
    g->suffix = std::move(suffix);
    return std::nullopt;
  }
  const tools::FimTokens fim = tools::FindFimTokens(tok);
  if (!fim.ok()) {
    return Unsupported("suffix",
                       "'suffix' (infilling) needs a diffusion model with bidirectional attention "
                       "(LLaDA, Dream) or an autoregressive model with fill-in-the-middle tokens "
                       "(<|fim_prefix|>, <fim_prefix>, <PRE>, ...); " +
                           model_id + " has neither");
  }
  const int32_t bos = tok.special().bos;
  const bool has_bos = bos >= 0 && !g->prompt.empty() && g->prompt.front() == bos;
  const std::span<const int32_t> prefix =
      std::span<const int32_t>(g->prompt).subspan(has_bos ? 1 : 0);
  g->prompt = tools::FimPrompt(fim, prefix, suffix, has_bos ? bos : -1);
  return std::nullopt;
}

// OpenAI's error for a request that does not fit the model's context (the openai client raises
// BadRequestError; code "context_length_exceeded").
ApiError ContextError(const std::string& message, const std::string& param) {
  ApiError e = MakeError(400, message, "invalid_request_error", param);
  e.code = "context_length_exceeded";
  return e;
}

// The request field a decoder's validation message is about (its first word), or "".
std::string ParamOf(const std::string& message) {
  // The first word of the message, unquoted, if it is a request field (gen_length: max_tokens).
  size_t end = message.find_first_of(" (,:;");
  std::string word = message.substr(0, end);
  if (word.size() >= 2 && word.front() == '\'' && word.back() == '\'') {
    word = word.substr(1, word.size() - 2);
  }
  if (word == "gen_length" || word == "max_new_tokens") return "max_tokens";
  const auto fields = AcceptedFields();
  if (std::binary_search(fields.begin(), fields.end(), word)) return word;
  return "";
}

}  // namespace

std::optional<ApiError> Server::PromptIds(const ApiRequest& r, const ServedModel& m,
                                          std::vector<int32_t>* ids) const {
  const Tokenizer& tok = *m.loaded->tokenizer;
  const ModelConfig& c = m.loaded->model->config();
  if (r.prompt_is_ids) {
    for (int32_t id : r.prompt_ids) {
      if (id >= c.vocab_size) {
        return MakeError(400,
                         "prompt token id " + std::to_string(id) + " is outside [0, " +
                             std::to_string(c.vocab_size) + ") of " + m.id,
                         "", "prompt");
      }
    }
    if (c.needs_mask_token()) {
      for (int32_t id : r.prompt_ids) {
        if (id == tok.special().mask) {
          return MakeError(400,
                           "the prompt holds the mask token id " + std::to_string(id) +
                               "; the server does not denoise prompt positions (use unmask "
                               "generate --prompt-ids for that)",
                           "", "prompt");
        }
      }
    }
    *ids = r.prompt_ids;
    return std::nullopt;
  }
  // A text far longer than the context cannot fit whatever the tokenizer does: refuse it before
  // tokenizing (an 8 MiB prompt would otherwise cost hundreds of MiB and seconds of CPU).
  size_t chars = r.prompt_text.size() + (r.suffix ? r.suffix->size() : 0);
  for (const ChatMessage& msg : r.messages) {
    chars += msg.content.size();
    for (const ChatToolCall& call : msg.tool_calls) {
      chars += call.arguments.size() + call.name.size();
    }
  }
  if (r.tools) {
    for (const chat::ToolSpec& t : r.tools->tools) {
      chars += t.name.size() + t.description.size() + t.parameters.dump().size();
    }
  }
  const size_t max_chars = static_cast<size_t>(std::max<int64_t>(m.context_length, 64)) * 64;
  if (chars > max_chars) {
    return ContextError("the prompt (" + std::to_string(chars) +
                            " bytes) cannot fit in the context of " +
                            std::to_string(m.context_length) + " tokens of " + m.id,
                        r.chat ? "messages" : "prompt");
  }
  std::string text = r.prompt_text;
  std::string user_text = r.prompt_text;
  bool templated = false;
  if (r.chat) {
    user_text.clear();
    for (const ChatMessage& msg : r.messages) user_text += msg.content;
    // Tools: a Hermes template renders them itself; otherwise a system message describes them.
    const chat::ToolCallFormat tool_format = chat::DetectToolCallFormat(tok.chat_template());
    std::vector<ChatMessage> with_tools;
    std::string tools_json;
    if (r.tools && tool_format == chat::ToolCallFormat::kGeneric) {
      with_tools = chat::GenericToolMessages(r.messages, *r.tools);
    } else if (r.tools) {
      tools_json = chat::ToolsJson(*r.tools);
    } else if (tool_format == chat::ToolCallFormat::kGeneric && chat::HasToolHistory(r.messages)) {
      // Without tools (tool_choice none): earlier calls and results still reach the model.
      with_tools = chat::ReplayToolHistory(r.messages);
    }
    const std::span<const ChatMessage> messages =
        with_tools.empty() ? std::span<const ChatMessage>(r.messages) : with_tools;
    if (!tok.chat_template().empty()) {
      auto rendered = tok.ApplyChatTemplate(messages, /*add_generation_prompt=*/true, tools_json);
      if (!rendered.ok()) {
        return MakeError(400,
                         "the chat template of " + m.id +
                             " cannot render these messages: " + rendered.status().message(),
                         "", "messages");
      }
      text = *std::move(rendered);
      templated = true;
    } else {
      // No template (the twins): the messages' contents, joined by a blank line.
      text.clear();
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i > 0) text += "\n\n";
        text += messages[i].content;
      }
    }
  }
  const int32_t bos = tok.special().bos;
  const bool starts_with_bos =
      templated && bos >= 0 && text.rfind(std::string(tok.TokenText(bos)), 0) == 0;
  *ids = tok.Encode(text, !starts_with_bos, /*parse_special=*/templated);
  // An empty text prompt generates from BOS alone (llama.cpp, llama2.c); text that the vocabulary
  // cannot encode at all, or an empty prompt for a tokenizer without BOS, has nothing to start
  // from.
  if (ids->empty() || (!user_text.empty() && tok.Encode(user_text, false, false).empty())) {
    return MakeError(400,
                     ids->empty()
                         ? "the prompt is empty and " + m.id + "'s tokenizer adds no BOS"
                         : "the prompt is empty (no tokens with " + m.id + "'s vocabulary)",
                     "", r.chat ? "messages" : "prompt");
  }
  if (c.needs_mask_token()) {
    for (int32_t id : *ids) {
      if (id == tok.special().mask) {
        return MakeError(400,
                         "the prompt contains the mask token '" + std::string(tok.TokenText(id)) +
                             "'; send token ids to place mask tokens on purpose",
                         "", r.chat ? "messages" : "prompt");
      }
    }
  }
  return std::nullopt;
}

std::optional<ApiError> Server::BuildGeneration(const ApiRequest& r, const ServedModel& m,
                                                GenerationRequest* g, BuiltDecoder* built) const {
  // A forced tool call is grammar-constrained sampling: refused on a diffusion model before the
  // (longer) prompt with the tools is even built.
  std::string tool_gbnf;
  if (r.tools) {
    auto gbnf = chat::ToolCallGrammar(
        chat::DetectToolCallFormat(m.loaded->tokenizer->chat_template()), *r.tools);
    if (!gbnf.ok()) return MakeError(400, gbnf.status().message(), "", "tools");
    tool_gbnf = *std::move(gbnf);
    if (!tool_gbnf.empty() && m.diffusion()) {
      return MakeError(400,
                       "tools (a tool call forced by grammar-constrained sampling: tool_choice "
                       "required or named, or a chat template without a tool-call format) needs "
                       "an autoregressive model: constrained unmasking is not implemented, and " +
                           m.id + " is a diffusion model",
                       "", "tools");
    }
  }
  if (auto e = PromptIds(r, m, &g->prompt)) return e;
  if (auto e = ApplySuffix(r, m.id, m.diffusion(), *m.loaded->tokenizer, g)) return e;
  // The model's config with the context requests may use (serve -c).
  ModelConfig config = m.loaded->model->config();
  if (m.context_length < config.context_length) {
    config.context_length = m.context_length;
    g->context_length = m.context_length;
  }
  const int64_t prompt_length = static_cast<int64_t>(g->prompt.size());
  if (prompt_length >= config.context_length) {
    return ContextError("the prompt (" + std::to_string(prompt_length) +
                            " tokens) fills the context of " +
                            std::to_string(config.context_length) + " tokens of " + m.id +
                            ": nothing can be generated",
                        r.chat ? "messages" : "prompt");
  }
  g->max_tokens = r.max_tokens;
  g->stop = r.stop;
  g->given = GivenFields(r);
  // One rule with `unmask generate`: a field the decoder that runs would not use is refused (with
  // model "auto", a model that cannot use it is not a candidate).
  g->refuse_unused = true;
  const uint64_t seed = r.seed ? *r.seed : RandomSeed();
  // Defaults: the request's field, else the model file's recommendation (vLLM's
  // generation-config behaviour), else OpenAI's (temperature 1, top_p 1, no top-k / min-p).
  const SamplingDefaults& md = m.loaded->sampling_defaults;
  const double temperature = r.temperature ? *r.temperature
                             : options_.temperature_given
                                 ? options_.temperature
                                 : md.temperature.value_or(options_.temperature);
  SamplingParams& sp = g->ar.sampling;
  sp.temperature = temperature;
  sp.top_p = r.top_p.value_or(md.top_p.value_or(1.0));
  sp.top_k = static_cast<int32_t>(std::max<int64_t>(r.top_k.value_or(md.top_k.value_or(0)), 0));
  sp.min_p = r.min_p.value_or(md.min_p.value_or(0.0));
  sp.frequency_penalty = r.frequency_penalty.value_or(0.0);
  sp.presence_penalty = r.presence_penalty.value_or(0.0);
  sp.repeat_penalty = r.repeat_penalty.value_or(md.repeat_penalty.value_or(1.0));
  if (r.repeat_last_n || md.repeat_last_n) {
    sp.repeat_last_n = static_cast<int32_t>(r.repeat_last_n ? *r.repeat_last_n : *md.repeat_last_n);
  }
  sp.seed = seed;
  g->ar.ignore_eos = r.ignore_eos;
  g->ar.logprobs = r.logprobs;
  if (r.constraint) {
    g->constraint_label = r.constraint->field;
    // Diffusion models refuse it in the factory before anything is built: no trie for them.
    g->make_constraint = grammar::ConstraintMaker(
        r.constraint->grammar, m.diffusion() ? nullptr : m.VocabTrie(), r.constraint->kind);
  }
  if (r.tools) {
    // The reply is parsed into tool calls: its text must be the tokens' bytes.
    g->verbatim_text = true;
    const chat::ToolCallFormat format =
        chat::DetectToolCallFormat(m.loaded->tokenizer->chat_template());
    if (!tool_gbnf.empty()) {
      if (r.constraint) {
        return MakeError(
            400,
            "'" + r.constraint->field + "' and a tool call (" +
                (format == chat::ToolCallFormat::kHermes
                     ? std::string("tool_choice required or named")
                     : "tools with " + m.id + "'s template, which has no tool format") +
                ") both constrain the reply: give one",
            "", r.constraint->field);
      }
      auto parsed = grammar::ParseGbnf(tool_gbnf);
      if (!parsed.ok()) {
        // The tools' schemas make it (e.g. a $ref cycle that consumes nothing): the client's.
        return MakeError(
            400,
            "the tools' parameter schemas give no usable grammar: " + parsed.status().message(), "",
            "tools");
      }
      g->constraint_label = "tools";
      g->make_constraint = grammar::ConstraintMaker(
          std::make_shared<const grammar::Grammar>(std::move(parsed).value()),
          m.diffusion() ? nullptr : m.VocabTrie(), "tools");
    }
  }
  // A request's "speculative" overrides the server's default; the default EAGLE or Medusa
  // applies to the models that have a draft layer or heads, a request that names one needs it.
  const std::string spec = r.speculative                                   ? *r.speculative
                           : options_.speculative_eagle && m.eagle_head    ? "eagle"
                           : options_.speculative_medusa && m.medusa_heads ? "medusa"
                           : options_.speculative_lookup                   ? "lookup"
                                                                           : "none";
  g->speculative_lookup = spec == "lookup";
  if (spec == "medusa" && !m.diffusion()) {
    if (m.medusa_heads == nullptr) {
      return MakeError(400,
                       "'speculative': \"medusa\" needs Medusa heads for " + m.id + " (" +
                           MedusaHeadsPathFor(m.path) +
                           " beside the model file, or serve --draft-heads; "
                           "scripts/train/train_medusa.py trains them)",
                       "", "speculative");
    }
    g->medusa_heads = m.medusa_heads.get();
  }
  if (spec == "eagle" && !m.diffusion()) {
    if (m.eagle_head == nullptr) {
      return MakeError(400,
                       "'speculative': \"eagle\" needs an EAGLE draft layer for " + m.id + " (" +
                           EagleHeadPathFor(m.path) +
                           " beside the model file, or serve --draft-heads; "
                           "scripts/train/train_eagle.py trains it)",
                       "", "speculative");
    }
    g->eagle_head = m.eagle_head.get();
    g->eagle_base = m.loaded->model.get();
    g->ar.draft_max = g->eagle.total_tokens;  // the tree's nodes
  }
  // Diffusion: the server's defaults, then the request's extensions; the factory settles the
  // canvas, the default steps and the rule a threshold implies.
  DiffusionParams& dp = g->diffusion;
  dp = options_.diffusion;
  dp.temperature = temperature;
  dp.seed = seed;
  dp.steps = r.steps.value_or(0);  // 0: the factory's default
  if (r.remasking) {
    // LLaDA's names, or SDAR's for block-diffusion models: the factory refuses the other family's.
    if (!RemaskingFromName(*r.remasking) && !BlockRemaskingFromName(*r.remasking)) {
      return MakeError(400,
                       "'remasking' must be low_confidence or random (block-diffusion models: " +
                           std::string(BlockRemaskingNames()) + ")",
                       "", "remasking");
    }
    g->remasking = *r.remasking;
  }
  if (r.denoising_steps) g->block.denoising_steps = *r.denoising_steps;
  if (r.eb_threshold) g->block.eb_threshold = *r.eb_threshold;
  if (r.edit_threshold) g->block.edit_threshold = *r.edit_threshold;
  if (r.max_post_edit_steps) g->block.max_post_edit_steps = *r.max_post_edit_steps;
  if (r.separate_store) g->block.separate_store = *r.separate_store;
  if (r.small_block_size) g->fast_dllm_v2.small_block_size = *r.small_block_size;
  if (r.cache) {
    auto v = CacheModeFromName(*r.cache);
    if (!v) return MakeError(400, "'cache' must be none, prefix, dual or vicinity", "", "cache");
    dp.cache = *v;
  }
  if (r.commit) {
    auto v = CommitRuleFromName(*r.commit);
    if (!v) {
      return MakeError(400, "'commit' must be fixed, threshold, factor, hierarchy or credit", "",
                       "commit");
    }
    dp.commit = *v;
  }
  if (r.threshold) dp.threshold = *r.threshold;
  if (r.factor) dp.factor = *r.factor;
  if (r.low_threshold) dp.low_threshold = *r.low_threshold;
  if (r.cfg_scale) dp.cfg_scale = *r.cfg_scale;
  if (r.early_stop) dp.early_stop = *r.early_stop;
  if (r.alg) g->dream.alg = *DreamAlgFromName(*r.alg);  // checked by the parser
  if (r.eps) g->dream.eps = *r.eps;
  if (r.alg_temp) g->dream.alg_temp = *r.alg_temp;
  // Until done: AR and block-diffusion models generate until EOS or the context; a full canvas
  // costs every position on every step, so it gets the server's default length.
  const DecoderKind kind = SelectDecoder(config, *g);
  const bool full_canvas = kind == DecoderKind::kDiffusion || kind == DecoderKind::kDream;
  if (r.block_length) dp.block_length = *r.block_length;  // UntilDoneLength reads it
  if (r.max_tokens == ApiRequest::kUntilDone) {
    if (full_canvas) {
      const int64_t block = r.block_length.value_or(options_.diffusion.block_length);
      g->max_tokens = std::min(options_.diffusion_max_tokens,
                               MaxTokensInContext(config, kind, prompt_length, block));
    } else {
      auto length = UntilDoneLength(config, m.id, prompt_length, *g);
      g->max_tokens = length.ok() ? *length : 0;
      g->until_done = true;
    }
    if (g->max_tokens < 1) {
      return ContextError("the prompt (" + std::to_string(prompt_length) +
                              " tokens) leaves no room in the context of " +
                              std::to_string(config.context_length) + " tokens of " + m.id,
                          r.chat ? "messages" : "prompt");
    }
  }
  dp.block_length =
      r.block_length.value_or(std::min(options_.diffusion.block_length, g->max_tokens));
  g->stream_canvas = r.x_canvas && r.stream;
  const double timeout_s = r.timeout_s.value_or(options_.request_timeout_s);
  g->deadline = g->arrival + std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  auto b = engine_->scheduler().Build(m.index, *g);
  if (!b.ok()) {
    const Status& st = b.status();
    if (st.code() == StatusCode::kOutOfRange) {
      std::string msg = st.message() + " (model " + m.id + ")";
      // Infilling without block_length: one block of max_tokens, then the suffix.
      const int64_t suffix_length = static_cast<int64_t>(g->suffix.size());
      const bool one_block = suffix_length > 0 && !r.block_length;
      const int64_t canvas = DiffusionCanvasLength(g->max_tokens, dp.block_length);
      if (kind == DecoderKind::kDiffusion && !one_block && canvas != g->max_tokens) {
        msg += "; the diffusion canvas is max_tokens (" + std::to_string(g->max_tokens) +
               ") rounded up to a multiple of block_length (" + std::to_string(dp.block_length) +
               "): " + std::to_string(canvas) + " positions";
      }
      if (suffix_length > 0) {
        msg += "; the suffix takes " + std::to_string(suffix_length) + " positions after them";
      }
      const int64_t room =
          one_block
              ? config.context_length - prompt_length - suffix_length
              : MaxTokensInContext(config, kind, prompt_length + suffix_length, dp.block_length);
      if (room > 0) msg += "; at most " + std::to_string(room) + " tokens fit after this prompt";
      return ContextError(msg, "max_tokens");
    }
    return MakeError(400, st.message(), "invalid_request_error", ParamOf(st.message()));
  }
  if (b->decoder->mask_id() < 0 && r.x_canvas) b->unused.push_back("x_canvas");
  if (b->decoder->mask_id() >= 0 && r.x_canvas && !r.stream) b->unused.push_back("x_canvas");
  *built = std::move(b).value();
  return std::nullopt;
}

std::optional<ApiError> Server::StartGeneration(ApiRequest& r, bool chat,
                                                SteadyClock::time_point arrival,
                                                std::shared_ptr<Exchange>* out) {
  const uint64_t n = next_id_.fetch_add(1);
  char idbuf[40];
  std::snprintf(idbuf, sizeof(idbuf), "%s-%016llx", chat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(n));
  if (!r.user.empty()) {
    std::fprintf(
        stderr, "unmask serve: %s: user %s\n", idbuf,
        nlohmann::json(r.user).dump(-1, ' ', true, json::error_handler_t::replace).c_str());
  }
  // The model: named, or chosen by the router.
  const ServedModel* m = nullptr;
  std::optional<RouteDecision> route;
  GenerationRequest g;
  g.arrival = arrival;
  g.id = idbuf;
  BuiltDecoder built;
  if (r.model == "auto") {
    std::vector<GenerationRequest> settled(models_.size());
    std::vector<BuiltDecoder> decoders(models_.size());
    std::vector<const GenerationRequest*> can_run(models_.size(), nullptr);
    std::vector<std::optional<ApiError>> errors(models_.size());
    for (size_t i = 0; i < models_.size(); ++i) {
      settled[i].arrival = arrival;
      settled[i].id = idbuf;
      errors[i] = BuildGeneration(r, *models_[i], &settled[i], &decoders[i]);
      if (!errors[i]) can_run[i] = &settled[i];  // else: e.g. its context is too short
    }
    // Capabilities before cost: a chat request goes to a model with a chat template (an
    // instruction-tuned model) whenever one can run it; a base model would only continue the
    // text.
    std::string not_considered;
    for (size_t i = 0; i < models_.size(); ++i) {
      if (errors[i]) {
        not_considered +=
            (not_considered.empty() ? "" : "; ") + models_[i]->id + ": " + errors[i]->message;
      }
    }
    if (chat) {
      auto has_template = [&](size_t i) {
        return !models_[i]->loaded->tokenizer->chat_template().empty();
      };
      bool any = false;
      for (size_t i = 0; i < models_.size(); ++i) any = any || (can_run[i] && has_template(i));
      for (size_t i = 0; i < models_.size() && any; ++i) {
        if (can_run[i] == nullptr || has_template(i)) continue;
        can_run[i] = nullptr;
        not_considered += (not_considered.empty() ? "" : "; ") + models_[i]->id +
                          ": no chat template (a base model), and this is a chat request";
      }
    }
    auto decision =
        engine_->Route(can_run, r.latency_target_ms.value_or(options_.latency_target_ms));
    if (decision.ok() && !not_considered.empty()) {
      decision->reason += "; not considered: " + not_considered;
    }
    if (!decision.ok()) {
      ApiError first = MakeError(400, decision.status().message());
      for (const auto& e : errors) {
        if (e) {
          first = *e;
          break;
        }
      }
      if (models_.size() > 1) {
        // Say why each model refused it, not only the first.
        std::string msg = "no loaded model can run this request:";
        for (size_t i = 0; i < models_.size(); ++i) {
          msg += (i == 0 ? " " : "; ") + models_[i]->id + ": " +
                 (errors[i] ? errors[i]->message : "ok");
        }
        first.message = msg;
      }
      return first;
    }
    route = *std::move(decision);
    m = models_[route->index].get();
    g = std::move(settled[route->index]);
    built = std::move(decoders[route->index]);
    metrics_.Add("router_decisions_total", {m->id, route->code});
  } else {
    if (r.model.empty() && models_.size() == 1) r.model = models_.front()->id;
    if (r.model.empty()) {
      std::string ids;
      for (const auto& sm : models_) ids += (ids.empty() ? "" : ", ") + sm->id;
      return MakeError(
          400, "'model' is required: this server has several (" + ids + ", or \"auto\" to route)",
          "", "model");
    }
    m = FindModel(r.model);
    if (m == nullptr) {
      return MakeError(404,
                       "the model '" + r.model +
                           "' does not exist (loaded: see GET /v1/models; \"auto\" routes)",
                       "not_found_error", "model");
    }
    if (auto e = BuildGeneration(r, *m, &g, &built)) return e;
  }
  if (!built.unused.empty()) {
    std::string list;
    for (const auto& f : built.unused) list += (list.empty() ? "" : ", ") + f;
    std::fprintf(stderr, "unmask serve: %s: fields that %s (%s) does not use, ignored: %s\n", idbuf,
                 m->id.c_str(), std::string(DecoderKindName(built.kind)).c_str(), list.c_str());
  }
  // n > 1: n requests on the chosen model, seeds seed, seed + 1, ... (each random without one).
  std::vector<GenerationRequest> gens;
  std::vector<BuiltDecoder> decoders;
  gens.push_back(std::move(g));
  decoders.push_back(std::move(built));
  for (int64_t i = 1; i < r.n; ++i) {
    ApiRequest ri = r;
    if (r.seed) ri.seed = *r.seed + static_cast<uint64_t>(i);
    GenerationRequest gi;
    gi.arrival = arrival;
    gi.id = std::string(idbuf) + "-" + std::to_string(i);
    BuiltDecoder bi;
    if (auto e = BuildGeneration(ri, *m, &gi, &bi)) return e;
    gens.push_back(std::move(gi));
    decoders.push_back(std::move(bi));
  }
  const int32_t last_prompt = gens.front().prompt.empty() ? kNoToken : gens.front().prompt.back();
  auto x = std::make_shared<Exchange>();
  for (size_t i = 0; i < gens.size(); ++i) {
    auto stream =
        engine_->scheduler().Submit(m->index, std::move(gens[i]), std::move(decoders[i].decoder));
    if (!stream.ok()) {
      x->CancelAll();  // the choices already queued
      if (stream.status().code() == StatusCode::kResourceExhausted) {
        return MakeError(429,
                         "the server is overloaded: " + stream.status().message() + "; retry later",
                         "rate_limit_error");  // sent with Retry-After (SendError)
      }
      return MakeError(503, stream.status().message());
    }
    x->streams.push_back(*stream);
  }
  x->head = {idbuf, UnixSeconds(), m->id, chat};
  x->engine = m->engine_name();
  x->stream_mode = r.stream;
  x->include_usage = r.include_usage;
  x->tokenizer = m->loaded->tokenizer.get();
  x->route = route;
  x->log_prefix = std::string(idbuf) + (r.stream ? " stream" : "");
  x->logprobs = r.logprobs >= 0;
  x->last_prompt_token = last_prompt;
  if (r.tools) {
    x->tools = r.tools;
    x->tool_format = chat::DetectToolCallFormat(m->loaded->tokenizer->chat_template());
  }
  if (r.echo) {
    x->echo = r.prompt_is_ids ? m->loaded->tokenizer->Decode(r.prompt_ids, /*skip_special=*/false)
                              : r.prompt_text;
  }
  open_responses_.fetch_add(1);
  x->open_token = std::shared_ptr<void>(nullptr, [this](void*) { open_responses_.fetch_sub(1); });
  *out = std::move(x);
  return std::nullopt;
}

void Server::HandleGeneration(const httplib::Request& req, httplib::Response& res, bool chat) {
  const auto arrival = SteadyClock::now();
  ApiRequest r;
  if (auto e = ParseApiRequest(req.body, chat, &r)) return SendError(res, *e);
  // HTTP/1.0 has no chunked encoding: the whole response is built before it is sent (no keep-alive
  // spaces, so a client that leaves is not noticed), and streaming is refused.
  if (req.version == "HTTP/1.0" && r.stream) {
    return SendError(res,
                     MakeError(400, "streaming needs HTTP/1.1 (chunked transfer)", "", "stream"));
  }
  std::shared_ptr<Exchange> x;
  if (auto e = StartGeneration(r, chat, arrival, &x)) return SendError(res, *e);
  auto provider = [x](size_t, httplib::DataSink& sink) {
    const bool ok = x->stream_mode ? ProvideStream(*x, sink) : ProvideWhole(*x, sink);
    if (!ok) x->CancelAll();  // the client is gone: the engine drops the requests
    return ok;
  };
  // Runs when the response ends, whichever way: a request still running is cancelled.
  auto release = [x](bool) { x->CancelAll(); };
  if (req.version == "HTTP/1.0") {
    int status = 200;
    const auto body = CollectWhole(*x, nullptr, &status);
    res.status = status;
    res.set_content(body.value_or(""), "application/json");
    return;
  }
  // "application/json; charset=utf-8", not "application/json": cpp-httplib would gzip the latter
  // when the client accepts it, and its compressor holds back the keep-alive spaces, so a client
  // that left would go unnoticed (event streams are never compressed).
  res.set_chunked_content_provider(
      r.stream ? "text/event-stream" : "application/json; charset=utf-8", provider, release);
  if (r.stream) res.set_header("Cache-Control", "no-cache");
}

}  // namespace unmask::server
