// Grammar-constrained sampling at the token level: which vocabulary tokens keep the generated
// text a prefix of a grammar's language.
//
// VocabTrie: every token's bytes (Tokenizer::TokenBytes) in a byte trie, built once per
// vocabulary. GrammarConstraint::Allowed walks the trie from the matcher's current state, one byte
// at a time, and prunes a subtree as soon as its prefix leaves the language, so shared prefixes
// are checked once and tokens under a refused prefix are never visited. Tokens may end inside a
// UTF-8 sequence; such a prefix is kept when some completion of the code point is a character the
// grammar accepts there (so no valid token is ever masked). End-of-generation tokens (eos, eot)
// are allowed exactly when the text is a complete sentence; when nothing may follow, Complete() is
// true and the decoder ends the generation.
//
// Masks are cached per (state, partial code point): inside a JSON string every character leads
// back to the same state, so a long string costs one walk.
#ifndef UNMASK_GRAMMAR_TOKEN_CONSTRAINT_H_
#define UNMASK_GRAMMAR_TOKEN_CONSTRAINT_H_

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "sampling/token_constraint.h"
#include "tokenizer/tokenizer.h"

namespace unmask::grammar {

struct VocabTrie {
  struct Node {
    int32_t first_child = 0;  // children are nodes [first_child, first_child + num_children)
    int32_t num_children = 0;
    int32_t first_token = 0;  // tokens ending here: tokens[first_token, + num_tokens)
    int32_t num_tokens = 0;
    uint8_t byte = 0;  // the byte leading to this node
  };
  std::vector<Node> nodes;  // nodes[0] is the root (the empty prefix)
  std::vector<int32_t> tokens;
  std::vector<std::string> token_bytes;  // [vocab]
  std::vector<int32_t> end_tokens;       // eos, eot (those that exist)
  int32_t vocab_size = 0;

  // Every non-control token with at least one byte. Never fails.
  static std::shared_ptr<const VocabTrie> Build(const Tokenizer& tokenizer);
};

class GrammarConstraint final : public TokenConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabTrie> vocab,
                    std::string name);

  std::span<const uint8_t> Allowed() override;
  Status Accept(int32_t token) override;
  bool Complete() const override { return matcher_.Complete(state_); }
  std::string name() const override { return name_; }
  // InvalidArgument once the grammar needed more than Matcher::kMaxStacks parse stacks.
  Status status() const override;

  // Counters for benchmarks: trie nodes visited by walks, walks run, walks answered by the cache.
  int64_t nodes_visited() const { return nodes_visited_; }
  int64_t walks() const { return walks_; }
  int64_t cache_hits() const { return cache_hits_; }

 private:
  void Walk(std::vector<uint8_t>* allowed);

  struct CachedMask {
    StateId state;
    Utf8Partial partial;
    std::vector<uint8_t> mask;
  };
  Matcher matcher_;
  std::shared_ptr<const VocabTrie> vocab_;
  std::string name_;
  StateId state_;
  Utf8Partial partial_;
  std::list<CachedMask> cache_;  // most recently used first
  int64_t nodes_visited_ = 0;
  int64_t walks_ = 0;
  int64_t cache_hits_ = 0;
};

// A maker of fresh GrammarConstraints over the shared `grammar` and `vocab` (one per decoder:
// DecodeOptions::make_constraint). `vocab` null: for a model that cannot be constrained (a
// diffusion model); the decoder factory refuses the request before it would call the maker, which
// then returns null.
std::function<std::unique_ptr<TokenConstraint>()> ConstraintMaker(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabTrie> vocab,
    std::string name);

}  // namespace unmask::grammar

#endif  // UNMASK_GRAMMAR_TOKEN_CONSTRAINT_H_
