// The decoding options of `generate` and `bench` from their flags: the flags' values, and which
// flags the user gave (DecodeOptions::given, named as the request fields: --top-k -> top_k), so
// that the decoder factory (decode/decoder_factory.h) settles and checks them in one place.
#ifndef UNMASK_TOOLS_COMMON_DECODE_ARGS_H_
#define UNMASK_TOOLS_COMMON_DECODE_ARGS_H_

#include <CLI/CLI.hpp>

#include "common/ar_args.h"
#include "common/dream_args.h"
#include "common/model_args.h"
#include "decode/decoder_factory.h"

namespace unmask::tools {

// max_tokens = --n-predict when given (AR), else --gen-length; refuse_unused = true (a flag the
// model does not use is an error). The drafter of --spec draft|diffusion is the caller's.
// Errors: DiffusionArgs::Resolve's; InvalidArgument for an unknown --alg.
StatusOr<DecodeOptions> DecodeOptionsFromFlags(const CLI::App& app, const DiffusionArgs& diffusion,
                                               const ArArgs& ar, const DreamArgs& dream);

// The flags given on `app`, named as request fields (--top-k -> top_k), labelled as written.
std::vector<GivenParam> GivenFlags(const CLI::App& app);

// True when the flag named `name` ("--top-k") was given on `app`.
bool FlagGiven(const CLI::App* app, const char* name);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_DECODE_ARGS_H_
