#include "common/constraint_args.h"

#include "common/cli_util.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/token_constraint.h"

namespace unmask::tools {
namespace {

constexpr size_t kMaxGrammarBytes = size_t{4} << 20;

// An empty grammar or schema given on purpose is a mistake (it ran unconstrained).
const CLI::Validator kNotEmpty(
    [](std::string& v) {
      return v.empty() ? std::string("an empty value constrains nothing") : "";
    },
    "", "not empty");

}  // namespace

void ConstraintArgs::AddTo(CLI::App& app) {
  auto* g = "Structured output (AR models)";
  app.add_option("--grammar", grammar,
                 "constrain the output to this GBNF grammar (llama.cpp's format; rule 'root')")
      ->check(kNotEmpty)
      ->group(g);
  app.add_option("--grammar-file", grammar_file, "--grammar read from a file")
      ->type_name("FILE")
      ->check(kNotEmpty)
      ->group(g);
  app.add_option("-j,--json-schema", json_schema,
                 "constrain the output to JSON matching this JSON schema ('{}': any JSON value); "
                 "unsupported keywords (pattern, multipleOf, ...) are refused by name")
      ->check(kNotEmpty)
      ->group(g);
  app.add_option("--json-schema-file,--jf", json_schema_file,
                 "--json-schema read from a file (llama.cpp's -jf)")
      ->check(kNotEmpty)
      ->group(g);
}

std::string ConstraintArgs::label() const {
  if (!grammar.empty()) return "--grammar";
  if (!grammar_file.empty()) return "--grammar-file";
  if (!json_schema.empty()) return "-j/--json-schema";
  if (!json_schema_file.empty()) return "-jf/--json-schema-file";
  return "";
}

StatusOr<std::shared_ptr<const grammar::Grammar>> ConstraintArgs::Compile() const {
  const int count =
      !grammar.empty() + !grammar_file.empty() + !json_schema.empty() + !json_schema_file.empty();
  if (count == 0) return std::shared_ptr<const grammar::Grammar>();
  if (count > 1) {
    return InvalidArgumentError(
        "give one of --grammar, --grammar-file, -j/--json-schema, -jf/--json-schema-file");
  }
  if (!json_schema.empty() || !json_schema_file.empty()) {
    std::string text = json_schema;
    if (text.empty()) {
      UNMASK_ASSIGN_OR_RETURN(text,
                              ReadRegularFile(json_schema_file, kMaxGrammarBytes, "JSON schema"));
    }
    auto compiled = grammar::CompileJsonSchemaText(text);
    if (!compiled.ok()) return InvalidArgumentError(label() + ": " + compiled.status().message());
    return std::make_shared<const grammar::Grammar>(std::move(compiled->grammar));
  }
  std::string gbnf = grammar;
  if (gbnf.empty()) {
    UNMASK_ASSIGN_OR_RETURN(gbnf, ReadRegularFile(grammar_file, kMaxGrammarBytes, "grammar"));
  }
  auto parsed = grammar::ParseGbnf(gbnf);
  if (!parsed.ok()) return InvalidArgumentError(label() + ": " + parsed.status().message());
  return std::make_shared<const grammar::Grammar>(std::move(parsed).value());
}

Status ConstraintArgs::Apply(const Tokenizer& tokenizer, bool diffusion,
                             DecodeOptions* options) const {
  UNMASK_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::Grammar> g, Compile());
  if (g == nullptr) return Status::Ok();
  options->constraint_label = label();
  options->make_constraint = grammar::ConstraintMaker(
      std::move(g), diffusion ? nullptr : grammar::VocabTrie::Build(tokenizer),
      grammar.empty() && grammar_file.empty() ? "json_schema" : "grammar");
  return Status::Ok();
}

}  // namespace unmask::tools
