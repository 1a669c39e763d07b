#include "cli/convert_command.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/cli_util.h"
#include "common/terminal.h"
#include "format/gguf.h"
#include "format/llama2c.h"
#include "model/hf_import.h"

namespace unmask::tools {
namespace {

constexpr const char* kWho = "unmask convert";

// True when `a` and `b` name the same existing file.
bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

// About the size of the GGUF: the tensors (output.weight included when it is a copy of the
// embedding) and the vocabulary; for the progress line only.
uint64_t OutputBytes(const llama2c::WeightLayout& l, const llama2c::Vocab& vocab) {
  uint64_t bytes = 0;
  for (const llama2c::Region* r : {&l.token_embedding, &l.rms_att, &l.wq, &l.wk, &l.wv, &l.wo,
                                   &l.rms_ffn, &l.w1, &l.w2, &l.w3, &l.rms_final, &l.wcls}) {
    bytes += r->num_bytes;
  }
  for (const std::string& token : vocab.tokens) bytes += token.size() + 16;  // text, score, type
  return bytes;
}

// Shows how much of `path` has been written, on stderr, while a long write runs: nothing for the
// first second (small models convert faster than that), then a progress line redrawn twice a
// second until Stop.
class WriteProgress {
 public:
  WriteProgress(std::string path, uint64_t expected_bytes)
      : path_(std::move(path)), expected_(expected_bytes), thread_([this] { Loop(); }) {}
  ~WriteProgress() { Stop(); }
  WriteProgress(const WriteProgress&) = delete;
  WriteProgress& operator=(const WriteProgress&) = delete;

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    ProgressLine line("writing " + std::filesystem::path(path_).filename().string());
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) return;
    constexpr uint64_t kMiB = uint64_t{1} << 20;
    const int64_t total = static_cast<int64_t>((expected_ + kMiB - 1) / kMiB);
    do {
      std::error_code ec;
      const uint64_t size = std::filesystem::file_size(path_, ec);
      if (!ec) line.Update(static_cast<int64_t>(size / kMiB), total, "MiB");
    } while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; }));
    line.Finish();
  }

  std::string path_;
  uint64_t expected_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace

void ConvertCommand::AddTo(CLI::App& app) {
  CLI::Option* from_llama2c =
      app.add_option("--llama2c", llama2c,
                     "llama2.c checkpoint (.bin, format v0 as in karpathy/tinyllamas, or v1 "
                     "\"ak42\")")
          ->type_name("MODEL.bin");
  CLI::Option* from_hf =
      app.add_option(
             "--hf", hf,
             "Hugging Face checkpoint folder (config.json, model.safetensors or shards "
             "with model.safetensors.index.json, tokenizer.json): Llama, Mistral, Qwen2, "
             "Qwen3, Dream, LLaDA, SDAR, Fast-dLLM v2, and the mixture-of-experts LLaDA-MoE, LLaDA "
             "2.x, "
             "SDAR-MoE and Qwen3-MoE (experts stacked into ffn_*_exps tensors, as llama.cpp does). "
             "Tensors keep their stored types (F32, "
             "F16, BF16)")
          ->type_name("DIR");
  from_llama2c->excludes(from_hf);
  app.add_option("--tokenizer", tokenizer,
                 "with --llama2c: llama2.c tokenizer.bin of the checkpoint (its token count must "
                 "equal the checkpoint's vocab_size)")
      ->needs(from_llama2c)
      ->type_name("TOKENIZER.bin");
  app.add_option("-o,--output", output, "GGUF file to write (replaced if it exists)")
      ->required()
      ->type_name("OUT.gguf");
  app.add_option("--name", name, "general.name of the model")->capture_default_str();
  app.add_option("--context-length", context_length,
                 "llama.context_length to write (default: the checkpoint's seq_len, the length "
                 "it was trained with)")
      ->check(IntegerIn(1, llama2c::kMaxSeqLen))
      ->type_name("N");
  app.footer(
      "The GGUF follows llama.cpp's convert-llama2c-to-ggml: architecture llama, F32 tensors "
      "bit-identical to the checkpoint (no permutation: both use RoPE on adjacent pairs), a "
      "shared classifier written as output.weight, the SentencePiece vocabulary with ids "
      "0/1/2 as <unk>/<s>/</s>. llama.cpp's tool writes context_length 2048 whatever the "
      "checkpoint; pass --context-length 2048 for the same.");
}

int ConvertCommand::RunHf() const {
  const auto start = std::chrono::steady_clock::now();
  // The shards are memory-mapped: writing over one would pull the data from under the writer.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(hf, ec)) {
    if (SameFile(output, e.path().string())) {
      return FailWith(kWho, InvalidArgumentError("the output " + output + " is the input " +
                                                 e.path().string() + "; choose another -o"));
    }
  }
  auto view = ImportHfCheckpoint(hf);
  if (!view.ok()) return FailWith(kWho, view.status());
  const gguf::GgufFile& f = **view;
  gguf::GgufWriter writer;
  for (const gguf::MetadataEntry& e : f.metadata()) writer.Set(e.key, e.value);
  uint64_t bytes = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    writer.AddTensor(t.name, t.type, t.dims, t.data, t.num_bytes);
    bytes += t.num_bytes;
  }
  Status written;
  {
    WriteProgress progress(output, bytes);
    written = writer.WriteFile(output);
  }
  if (!written.ok()) return FailWith(kWho, written);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto arch = f.GetString("general.architecture");
  std::fprintf(stderr, "unmask convert: wrote %s (%s, %zu tensors, %.1f MiB) in %.2f s\n",
               EscapeControl(output).c_str(), arch.ok() ? arch->c_str() : "?", f.tensors().size(),
               static_cast<double>(bytes) / (1 << 20), seconds);
  return 0;
}

int ConvertCommand::Run() const {
  if (!hf.empty()) return RunHf();
  if (llama2c.empty()) {
    return FailWith(kWho, InvalidArgumentError("give the input: --llama2c MODEL.bin --tokenizer "
                                               "TOKENIZER.bin, or --hf DIR"));
  }
  if (tokenizer.empty()) {
    return FailWith(kWho, InvalidArgumentError("--llama2c needs --tokenizer TOKENIZER.bin"));
  }
  const auto start = std::chrono::steady_clock::now();
  auto checkpoint_or = llama2c::Checkpoint::Open(llama2c);
  if (!checkpoint_or.ok()) return FailWith(kWho, checkpoint_or.status());
  const llama2c::Checkpoint& checkpoint = **checkpoint_or;
  const llama2c::Config& c = checkpoint.config();
  auto vocab = llama2c::ReadTokenizer(tokenizer, c.vocab_size);
  if (!vocab.ok()) return FailWith(kWho, vocab.status());
  // The checkpoint is memory-mapped: writing over it would pull the data from under the writer.
  for (const std::string* input : {&llama2c, &tokenizer}) {
    if (SameFile(output, *input)) {
      return FailWith(kWho, InvalidArgumentError("the output " + output + " is the input " +
                                                 *input + "; choose another -o"));
    }
  }

  llama2c::ConvertOptions options;
  options.name = name;
  options.context_length = context_length;
  gguf::GgufWriter writer;
  if (Status s = llama2c::BuildGguf(checkpoint, *vocab, options, &writer); !s.ok())
    return FailWith(kWho, s);
  Status written;
  {
    WriteProgress progress(output, OutputBytes(checkpoint.layout(), *vocab));
    written = writer.WriteFile(output);
  }
  if (!written.ok()) return FailWith(kWho, written);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::error_code ec;
  const double mib =
      static_cast<double>(std::filesystem::file_size(output, ec)) / static_cast<double>(1 << 20);
  std::fprintf(stderr,
               "unmask convert: wrote %s (llama, %lld layers, dim %lld, %lld heads / %lld kv, "
               "vocab %lld, context %lld, %lld F32 tensors, %.1f MiB) in %.2f s\n",
               EscapeControl(output).c_str(), static_cast<long long>(c.num_layers),
               static_cast<long long>(c.dim), static_cast<long long>(c.num_heads),
               static_cast<long long>(c.num_kv_heads), static_cast<long long>(c.vocab_size),
               static_cast<long long>(context_length > 0 ? context_length : c.seq_len),
               static_cast<long long>(3 + 9 * c.num_layers), ec ? 0.0 : mib, seconds);
  return 0;
}

}  // namespace unmask::tools
