// The parse state of a Grammar, advanced one code point at a time: a nondeterministic pushdown
// automaton whose configurations are stacks of positions in the grammar's element sequences (the
// algorithm of llama.cpp's llama-grammar.cpp). The top of every stack is a character class; the
// positions below it are where the enclosing rules resume. The empty stack means "the root rule is
// complete".
//
// Stacks are interned as linked nodes (position, parent) so that equal stacks share one id, and a
// state (a set of stacks) is interned too, so that the transition (state, code point) -> state is
// computed once and then read from a table: a token-trie walk asks for hundreds of thousands of
// transitions per generated token and almost all of them repeat.
#ifndef UNMASK_GRAMMAR_MATCHER_H_
#define UNMASK_GRAMMAR_MATCHER_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace unmask::grammar {

using StateId = int32_t;
inline constexpr StateId kDead = -1;  // no stack survives: the text is not a prefix of the language

// A UTF-8 sequence in progress (bytes of a code point not yet complete).
struct Utf8Partial {
  uint32_t value = 0;  // bits read so far
  uint8_t need = 0;    // continuation bytes still expected; 0: at a code point boundary
  uint8_t length = 0;  // bytes of the sequence in progress (2-4)
  bool operator==(const Utf8Partial&) const = default;
  // The code points the sequence can still complete to: [*lo, *hi] (overlong forms excluded).
  void Range(uint32_t* lo, uint32_t* hi) const;
};

// One byte through the UTF-8 decoder: returns false for a byte that cannot continue (invalid
// lead or continuation byte, an overlong form, a surrogate, beyond U+10FFFF); sets *cp and
// *complete when a code point ends with this byte.
bool Utf8Step(Utf8Partial* u, uint8_t byte, uint32_t* cp, bool* complete);

class Matcher {
 public:
  // Most parse stacks one state may hold. An ambiguous grammar (a rule such as `.+` that may end
  // before any character, inside a recursion) multiplies its stacks with every character; past
  // this many the state is refused (kDead) and overflowed() says why, so a request's grammar
  // cannot hold a thread for minutes (found by fuzz/grammar_fuzz.cc: 2 million stacks after 100
  // characters, 20 s). The grammars of JSON schemas stay below a few hundred.
  static constexpr size_t kMaxStacks = 4096;

  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  // The state before any text.
  StateId initial() const { return initial_; }
  // The state after `cp`; kDead when no stack accepts it.
  StateId Advance(StateId s, uint32_t cp);
  // Advances through `bytes` (UTF-8, possibly ending inside a code point: *partial carries it in
  // and out); kDead on invalid UTF-8 or a code point the grammar refuses, or when a partial code
  // point cannot complete to any character some stack accepts.
  StateId AdvanceBytes(StateId s, std::string_view bytes, Utf8Partial* partial);
  // True when some code point in [lo, hi] is accepted by a stack of `s`.
  bool AcceptsSome(StateId s, uint32_t lo, uint32_t hi) const;
  // True when the text so far is a complete sentence (some stack is empty).
  bool CanEnd(StateId s) const { return s >= 0 && states_[static_cast<size_t>(s)].can_end; }
  // The parse stacks of `s` (0 for kDead): the work of each transition out of it.
  size_t StackCount(StateId s) const {
    return s >= 0 ? states_[static_cast<size_t>(s)].stacks.size() : 0;
  }
  // True when the text is complete and nothing may follow (every stack is empty).
  bool Complete(StateId s) const { return s >= 0 && states_[static_cast<size_t>(s)].complete; }
  // Forgets every state except `s` (when the tables grow past a limit): returns s's new id. Ids
  // of other states become invalid.
  StateId Compact(StateId s);
  size_t num_states() const { return states_.size(); }
  // True once a transition would have needed more than kMaxStacks stacks (and gave kDead).
  bool overflowed() const { return overflowed_; }
  size_t num_nodes() const { return nodes_.size(); }
  const Grammar& grammar() const { return *grammar_; }

 private:
  struct Node {
    int32_t pos;     // index into grammar elems
    int32_t parent;  // node below, or -1
  };
  struct State {
    std::vector<int32_t>
        stacks;  // sorted node ids of char-topped stacks (the empty stack: can_end)
    bool can_end = false;
    bool complete = false;
    std::array<StateId, 128> ascii_next;  // -2: not computed yet
    std::unordered_map<uint32_t, StateId> next;
  };
  int32_t Intern(int32_t pos, int32_t parent);
  // Appends the char-topped stacks reached from position `pos` over `parent` (expanding rule
  // references, resuming parents at ends); *can_end when the empty stack is reached.
  void Expand(int32_t pos, int32_t parent, std::vector<int32_t>* out, bool* can_end);
  StateId InternState(std::vector<int32_t> stacks, bool can_end);
  StateId Compute(StateId s, uint32_t cp);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<State> states_;
  bool overflowed_ = false;
  std::map<std::pair<std::vector<int32_t>, bool>, StateId> state_ids_;
  StateId initial_ = kDead;
};

}  // namespace unmask::grammar

#endif  // UNMASK_GRAMMAR_MATCHER_H_
