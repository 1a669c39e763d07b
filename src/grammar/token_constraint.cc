#include "grammar/token_constraint.h"

#include <algorithm>
#include <functional>

namespace unmask::grammar {
namespace {

constexpr size_t kMaskCacheSize = 16;
// Past these, the matcher's tables are rebuilt from the current state (memory stays bounded).
constexpr size_t kMaxNodes = 1u << 20;
constexpr size_t kMaxStates = 1u << 16;

}  // namespace

std::shared_ptr<const VocabTrie> VocabTrie::Build(const Tokenizer& tokenizer) {
  auto trie = std::make_shared<VocabTrie>();
  const int32_t n = tokenizer.vocab_size();
  trie->vocab_size = n;
  trie->token_bytes.resize(static_cast<size_t>(n));
  std::vector<std::pair<std::string_view, int32_t>> entries;
  for (int32_t id = 0; id < n; ++id) {
    if (tokenizer.IsControl(id)) continue;
    trie->token_bytes[static_cast<size_t>(id)] = tokenizer.TokenBytes(id);
  }
  for (int32_t id = 0; id < n; ++id) {
    const std::string& b = trie->token_bytes[static_cast<size_t>(id)];
    if (!b.empty()) entries.emplace_back(b, id);
  }
  std::sort(entries.begin(), entries.end());
  for (TokenId t : {tokenizer.special().eos, tokenizer.special().eot}) {
    if (t >= 0 && t < n &&
        std::find(trie->end_tokens.begin(), trie->end_tokens.end(), t) == trie->end_tokens.end()) {
      trie->end_tokens.push_back(t);
    }
  }
  trie->nodes.emplace_back();
  // Entries [lo, hi) share their first `depth` bytes, the prefix of node `node`.
  std::function<void(int32_t, size_t, size_t, size_t)> build = [&](int32_t node, size_t lo,
                                                                   size_t hi, size_t depth) {
    size_t i = lo;
    trie->nodes[static_cast<size_t>(node)].first_token = static_cast<int32_t>(trie->tokens.size());
    while (i < hi && entries[i].first.size() == depth) trie->tokens.push_back(entries[i++].second);
    trie->nodes[static_cast<size_t>(node)].num_tokens =
        static_cast<int32_t>(trie->tokens.size()) -
        trie->nodes[static_cast<size_t>(node)].first_token;
    std::vector<std::pair<size_t, size_t>> groups;
    for (size_t j = i; j < hi;) {
      size_t k = j;
      while (k < hi && entries[k].first[depth] == entries[j].first[depth]) ++k;
      groups.emplace_back(j, k);
      j = k;
    }
    const int32_t first = static_cast<int32_t>(trie->nodes.size());
    trie->nodes[static_cast<size_t>(node)].first_child = first;
    trie->nodes[static_cast<size_t>(node)].num_children = static_cast<int32_t>(groups.size());
    trie->nodes.resize(trie->nodes.size() + groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      trie->nodes[static_cast<size_t>(first) + g].byte =
          static_cast<uint8_t>(entries[groups[g].first].first[depth]);
      build(first + static_cast<int32_t>(g), groups[g].first, groups[g].second, depth + 1);
    }
  };
  build(0, 0, entries.size(), 0);
  return trie;
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar,
                                     std::shared_ptr<const VocabTrie> vocab, std::string name)
    : matcher_(std::move(grammar)), vocab_(std::move(vocab)), name_(std::move(name)) {
  state_ = matcher_.initial();
}

void GrammarConstraint::Walk(std::vector<uint8_t>* allowed) {
  allowed->assign(static_cast<size_t>(vocab_->vocab_size), 0);
  ++walks_;
  if (state_ < 0) return;
  if (partial_.need == 0 && matcher_.CanEnd(state_)) {
    for (int32_t t : vocab_->end_tokens) (*allowed)[static_cast<size_t>(t)] = 1;
  }
  struct Frame {
    int32_t node;
    StateId state;
    Utf8Partial partial;
  };
  std::vector<Frame> stack;
  stack.push_back(Frame{0, state_, partial_});
  const auto& nodes = vocab_->nodes;
  while (!stack.empty()) {
    const Frame f = stack.back();
    stack.pop_back();
    ++nodes_visited_;
    const VocabTrie::Node& n = nodes[static_cast<size_t>(f.node)];
    for (int32_t i = 0; i < n.num_tokens; ++i) {
      (*allowed)[static_cast<size_t>(vocab_->tokens[static_cast<size_t>(n.first_token + i)])] = 1;
    }
    for (int32_t c = 0; c < n.num_children; ++c) {
      const int32_t child = n.first_child + c;
      Utf8Partial u = f.partial;
      uint32_t cp = 0;
      bool complete = false;
      if (!Utf8Step(&u, nodes[static_cast<size_t>(child)].byte, &cp, &complete)) continue;
      StateId s = f.state;
      if (complete) {
        s = matcher_.Advance(s, cp);
        if (s == kDead) continue;
      } else {
        uint32_t lo = 0, hi = 0;
        u.Range(&lo, &hi);
        if (!matcher_.AcceptsSome(s, lo, hi)) continue;
      }
      stack.push_back(Frame{child, s, u});
    }
  }
}

std::span<const uint8_t> GrammarConstraint::Allowed() {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->state == state_ && it->partial == partial_) {
      ++cache_hits_;
      cache_.splice(cache_.begin(), cache_, it);
      return cache_.front().mask;
    }
  }
  CachedMask entry{state_, partial_, {}};
  if (cache_.size() >= kMaskCacheSize) {
    entry.mask = std::move(cache_.back().mask);  // reuse the buffer
    cache_.pop_back();
  }
  Walk(&entry.mask);
  cache_.push_front(std::move(entry));
  return cache_.front().mask;
}

Status GrammarConstraint::Accept(int32_t token) {
  if (token < 0 || token >= vocab_->vocab_size) {
    return InvalidArgumentError("grammar: token " + std::to_string(token) +
                                " is outside the vocabulary");
  }
  if (std::find(vocab_->end_tokens.begin(), vocab_->end_tokens.end(), token) !=
      vocab_->end_tokens.end()) {
    if (partial_.need == 0 && matcher_.CanEnd(state_)) return Status::Ok();
    return InvalidArgumentError("grammar: the end-of-generation token " + std::to_string(token) +
                                " before the " + name_ + " is complete");
  }
  const std::string& bytes = vocab_->token_bytes[static_cast<size_t>(token)];
  Utf8Partial u = partial_;
  const StateId next = bytes.empty() ? kDead : matcher_.AdvanceBytes(state_, bytes, &u);
  if (next == kDead) {
    return InvalidArgumentError("grammar: token " + std::to_string(token) +
                                " is not allowed by the " + name_ + " here");
  }
  state_ = next;
  partial_ = u;
  if (matcher_.num_nodes() > kMaxNodes || matcher_.num_states() > kMaxStates) {
    state_ = matcher_.Compact(state_);
    cache_.clear();
  }
  return Status::Ok();
}

Status GrammarConstraint::status() const {
  if (!matcher_.overflowed()) return Status::Ok();
  return InvalidArgumentError(
      "the " + name_ + " is too ambiguous to follow: more than " +
      std::to_string(Matcher::kMaxStacks) +
      " ways to parse the text at once (a rule such as `.+` or `[^x]*` that may end before any "
      "character, inside a recursive rule, multiplies them); make the rule's end unambiguous");
}

std::function<std::unique_ptr<TokenConstraint>()> ConstraintMaker(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabTrie> vocab,
    std::string name) {
  return [grammar = std::move(grammar), vocab = std::move(vocab),
          name = std::move(name)]() -> std::unique_ptr<TokenConstraint> {
    if (vocab == nullptr) return nullptr;
    return std::make_unique<GrammarConstraint>(grammar, vocab, name);
  };
}

}  // namespace unmask::grammar
