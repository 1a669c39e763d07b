// Structured-output flags of `generate` and `chat` (llama.cpp's names): --grammar TEXT,
// --grammar-file FILE (GBNF), -j/--json-schema TEXT, -jf/--json-schema-file FILE (a JSON
// schema, compiled by grammar/json_schema.h). AR models only: the decoder factory refuses them on
// diffusion models (constrained unmasking is not implemented).
#ifndef UNMASK_TOOLS_COMMON_CONSTRAINT_ARGS_H_
#define UNMASK_TOOLS_COMMON_CONSTRAINT_ARGS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "core/status.h"
#include "decode/decoder_factory.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace unmask::tools {

struct ConstraintArgs {
  std::string grammar;
  std::string grammar_file;
  std::string json_schema;
  std::string json_schema_file;

  void AddTo(CLI::App& app);
  bool given() const {
    return !grammar.empty() || !grammar_file.empty() || !json_schema.empty() ||
           !json_schema_file.empty();
  }
  // The flag that was given ("--grammar", ...), "" when none.
  std::string label() const;
  // The compiled grammar (null when no flag is given). Errors: InvalidArgument for more than one
  // flag, a grammar or schema that does not compile (its line and column / JSON pointer); the
  // file errors of ReadRegularFile.
  StatusOr<std::shared_ptr<const grammar::Grammar>> Compile() const;
  // Sets options->make_constraint and constraint_label for a model with `tokenizer` (no-op when
  // no flag is given). `diffusion`: the factory then refuses the request, so no vocabulary trie is
  // built. Errors: those of Compile().
  Status Apply(const Tokenizer& tokenizer, bool diffusion, DecodeOptions* options) const;
};

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_CONSTRAINT_ARGS_H_
