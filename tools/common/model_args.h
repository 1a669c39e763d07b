// Flags shared by the tools, declared once with their defaults and help (STYLE.md §5.10).
#ifndef UNMASK_TOOLS_COMMON_MODEL_ARGS_H_
#define UNMASK_TOOLS_COMMON_MODEL_ARGS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "decode/diffusion_params.h"
#include "engine/engine.h"
#include "model/loader.h"

namespace unmask::tools {

// The folder of the project's models: <prefix>/share/unmask/models next to an installed binary
// (cmake --install), else the models/ of the source tree the binary was built from.
std::string ModelsDir();
// The default model (the diffusion twin in ModelsDir(); $UNMASK_DEFAULT_MODEL overrides); used when
// -m is not given.
std::string DefaultModelPath();

// Upper bounds of integer flags: far beyond real use, small enough that nothing overflows.
inline constexpr int64_t kMaxThreads = 1024;
inline constexpr int64_t kMaxLength = int64_t{1} << 24;  // gen_length, steps, block_length, ...

// The shared flags, each declared once (one name, help and check) for every command that takes
// it; the default is the value the pointed-to field holds.
CLI::Option* AddThreadsFlag(CLI::App& app, int* threads);  // -t
struct ModelArgs;
// -t, --blas, --weights, --compute into args' fields.
void AddBackendFlags(CLI::App& app, ModelArgs* args);
CLI::Option* AddComputeFlag(CLI::App& app, std::string* compute);  // BackendOptions::compute
// -n; until_done: -1 is accepted too (until EOS or the context).
CLI::Option* AddGenLengthFlag(CLI::App& app, int64_t* gen_length, bool until_done = false);
CLI::Option* AddBlockLengthFlag(CLI::App& app, int64_t* block_length);

// Model file and backend flags.
struct ModelArgs {
  std::string model;                    // -m
  CLI::Option* model_option = nullptr;  // to tell "-m ''" from no -m
  int threads = 0;                      // --threads (0: all hardware threads)
  std::string blas = "onednn";
  std::string weights = "auto";
  std::string compute = "auto";  // BackendOptions::compute

  void AddTo(CLI::App& app);
  // The model path: -m, or the default model when -m was not given. InvalidArgument for -m "".
  StatusOr<std::string> Path() const;
  // The backend options of --threads/--blas/--compute (device cpu).
  BackendOptions backend_options() const;
  // Creates (and applies) the backend of --threads/--blas/--compute; pass it to
  // LoadModelWithProgress. Prints the backend's compute_note() as a warning (bf16 / int8 on a CPU
  // without their instructions falls back to f32). Errors: InvalidArgument for a --blas other
  // than onednn/openblas or bf16/int8 --compute with openblas; those of CreateBackend.
  StatusOr<std::shared_ptr<Backend>> MakeBackend() const;
  // Engine::Create with `options` and the backend of these flags (options.backend is replaced),
  // the flags checked as MakeBackend checks them, the compute note printed likewise.
  StatusOr<std::unique_ptr<Engine>> MakeEngine(EngineOptions options = {}) const;
  // The flag combinations CreateBackend would refuse, named as flags: a --blas other than
  // onednn/openblas, bf16/int8 --compute with openblas (InvalidArgument).
  Status CheckBackendFlags() const;
  // InvalidArgument for an unknown --weights, or native with --compute bf16/int8.
  StatusOr<WeightMode> weight_mode() const;
};

// --chat-template-file FILE (llama.cpp's name): a Jinja chat template that replaces the model's.
CLI::Option* AddChatTemplateFileFlag(CLI::App& app, std::string* path);
// Reads `path` and checks that it parses as a chat template (a leading UTF-8 byte order mark is
// dropped): the template's text. Errors: those of ApplyChatTemplateFile but the render.
StatusOr<std::string> LoadChatTemplateFile(const std::string& path);
// Reads `path` ("" : nothing to do), checks that it parses as a chat template and installs it in
// `tokenizer`. Errors: NotFound / InvalidArgument naming the file (unreadable, empty, larger than
// 1 MiB, or a template the renderer cannot parse, with its offset).
Status ApplyChatTemplateFile(const std::string& path, Tokenizer* tokenizer);

// LLaDA decoding flags (names of the reference `generate`: steps, gen_length, block_length, ...).
struct DiffusionArgs {
  DiffusionParams params;
  BlockParams block;              // --denoising-steps, --eb-threshold (block-diffusion models)
  FastDllmV2Params fast_dllm_v2;  // --small-block-size (Fast-dLLM v2 models)
  // LLaDA's names, or SDAR's for block-diffusion models ("" = the decoder's default).
  std::string remasking;
  std::string cache = "none";
  std::string commit;  // "" = fixed, or implied by --threshold / --factor / --low-threshold
  CLI::Option* steps_option = nullptr;
  // -n accepts -1 (until EOS or the context; generate): set before AddTo.
  bool allow_until_done = false;

  // request_flags: also -n, --steps, --temperature and --seed (serve takes the decoder flags only:
  // its requests carry the rest).
  void AddTo(CLI::App& app, bool request_flags = true);
  // params with the cache and commit names (and a LLaDA remasking name) resolved and, without
  // --steps, steps = 0
  // (the factory's default). Which rule --threshold / --factor / --low-threshold imply without
  // --commit, and which flags a rule does not use, is settled by the decoder factory
  // (decode/decoder_factory.h) from the flags given. InvalidArgument for an unknown name.
  StatusOr<DiffusionParams> Resolve() const;
};

// Prints backend.compute_note() (bf16 / int8 fell back to f32) as a warning, once per process
// for each distinct note; nothing when it is empty. LoadModelWithProgress calls it.
void PrintComputeNote(const Backend& backend);

// Loads a model onto `backend` (null: DefaultBackend()), drawing a progress line on stderr.
StatusOr<LoadedModel> LoadModelWithProgress(const std::string& path, WeightMode mode,
                                            std::shared_ptr<Backend> backend = nullptr);
// Loads a model into `engine` (onto its backend), drawing a progress line; returns its index.
StatusOr<size_t> LoadModelWithProgress(Engine& engine, const std::string& path, WeightMode mode);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_MODEL_ARGS_H_
