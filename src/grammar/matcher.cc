#include "grammar/matcher.h"

#include <algorithm>
#include <utility>

namespace unmask::grammar {

namespace {

constexpr uint32_t kMinOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};

}  // namespace

void Utf8Partial::Range(uint32_t* lo, uint32_t* hi) const {
  const uint32_t shift = 6u * need;
  *lo = std::max(value << shift, kMinOfLength[length]);
  *hi = std::min((value << shift) | ((1u << shift) - 1), 0x10FFFFu);
}

bool Utf8Step(Utf8Partial* u, uint8_t b, uint32_t* cp, bool* complete) {
  *complete = false;
  if (u->need == 0) {
    if (b < 0x80) {
      *cp = b;
      *complete = true;
    } else if (b >= 0xC2 && b <= 0xDF) {
      u->value = b & 0x1Fu;
      u->need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      u->value = b & 0x0Fu;
      u->need = 2;
    } else if (b >= 0xF0 && b <= 0xF4) {
      u->value = b & 0x07u;
      u->need = 3;
    } else {
      return false;  // a continuation byte without a lead, an overlong lead or beyond U+10FFFF
    }
    u->length = static_cast<uint8_t>(u->need + 1);
    return true;
  }
  if ((b & 0xC0) != 0x80) return false;
  const uint32_t v = (u->value << 6) | (b & 0x3Fu);
  const uint8_t need = static_cast<uint8_t>(u->need - 1);
  // The smallest and largest code points this prefix can still reach.
  const uint32_t shift = 6u * need;
  const uint32_t lo = v << shift, hi = (v << shift) | ((1u << shift) - 1);
  if (hi < kMinOfLength[u->length] || lo > 0x10FFFF) return false;  // overlong / too large
  if (need == 0 && v >= 0xD800 && v <= 0xDFFF) return false;        // a surrogate
  u->value = v;
  u->need = need;
  if (need == 0) {
    *cp = v;
    *complete = true;
    u->value = 0;
    u->length = 0;
  }
  return true;
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  std::vector<int32_t> stacks;
  bool can_end = false;
  for (int32_t alt : grammar_->rule_alts[static_cast<size_t>(grammar_->root)]) {
    Expand(alt, -1, &stacks, &can_end);
  }
  initial_ = InternState(std::move(stacks), can_end);
}

int32_t Matcher::Intern(int32_t pos, int32_t parent) {
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
  auto [it, fresh] = node_ids_.try_emplace(key, static_cast<int32_t>(nodes_.size()));
  if (fresh) nodes_.push_back(Node{pos, parent});
  return it->second;
}

void Matcher::Expand(int32_t pos, int32_t parent, std::vector<int32_t>* out, bool* can_end) {
  // An explicit work list, not recursion: a grammar's chain of rules (each the first element of
  // the one before) is as deep as the grammar is long, and 300,000 of them (a 5.8 MB request)
  // overflowed the stack (found 2026-12-07). The order of the results does not matter: the
  // stacks are sorted into a state.
  thread_local std::vector<std::pair<int32_t, int32_t>> work;
  const size_t base = work.size();  // (not reentrant, but keep whatever a caller left)
  work.emplace_back(pos, parent);
  while (work.size() > base) {
    const auto [p, up] = work.back();
    work.pop_back();
    const Elem& e = grammar_->elems[static_cast<size_t>(p)];
    switch (e.type) {
      case ElemType::kChar:
        out->push_back(Intern(p, up));
        break;
      case ElemType::kEnd:
        if (up < 0) {
          *can_end = true;
        } else {
          const Node n = nodes_[static_cast<size_t>(up)];
          work.emplace_back(n.pos, n.parent);
        }
        break;
      case ElemType::kRule: {
        // A reference in tail position returns straight to `up` (the frame at p + 1 would only
        // end the alternative): right-recursive repetitions (`x-rep ::= x x-rep | `) then keep a
        // constant stack depth, so the states inside a long string or list repeat and their
        // transitions and token masks are computed once.
        const bool tail = grammar_->elems[static_cast<size_t>(p) + 1].type == ElemType::kEnd;
        const int32_t cont = tail ? up : Intern(p + 1, up);
        const auto& alts = grammar_->rule_alts[static_cast<size_t>(e.value)];
        // Reversed, so alternatives are expanded in their order (as the recursion did).
        for (auto it = alts.rbegin(); it != alts.rend(); ++it) work.emplace_back(*it, cont);
        break;
      }
    }
  }
}

StateId Matcher::InternState(std::vector<int32_t> stacks, bool can_end) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty() && !can_end) return kDead;
  if (stacks.size() > kMaxStacks) {
    overflowed_ = true;
    return kDead;
  }
  auto key = std::make_pair(stacks, can_end);
  auto it = state_ids_.find(key);
  if (it != state_ids_.end()) return it->second;
  const StateId id = static_cast<StateId>(states_.size());
  State st;
  st.stacks = std::move(stacks);
  st.can_end = can_end;
  st.complete = st.stacks.empty();
  st.ascii_next.fill(-2);
  states_.push_back(std::move(st));
  state_ids_.emplace(std::move(key), id);
  return id;
}

StateId Matcher::Compute(StateId s, uint32_t cp) {
  std::vector<int32_t> out;
  bool can_end = false;
  // Copy: Expand may grow nodes_ and InternState may grow states_.
  const std::vector<int32_t> stacks = states_[static_cast<size_t>(s)].stacks;
  for (int32_t id : stacks) {
    const Node n = nodes_[static_cast<size_t>(id)];
    const Elem& e = grammar_->elems[static_cast<size_t>(n.pos)];
    if (grammar_->classes[static_cast<size_t>(e.value)].Matches(cp)) {
      Expand(n.pos + 1, n.parent, &out, &can_end);
    }
  }
  return InternState(std::move(out), can_end);
}

StateId Matcher::Advance(StateId s, uint32_t cp) {
  if (s < 0) return kDead;
  if (cp < 128) {
    StateId t = states_[static_cast<size_t>(s)].ascii_next[cp];
    if (t == -2) {
      t = Compute(s, cp);
      states_[static_cast<size_t>(s)].ascii_next[cp] = t;
    }
    return t;
  }
  auto& next = states_[static_cast<size_t>(s)].next;
  auto it = next.find(cp);
  if (it != next.end()) return it->second;
  const StateId t = Compute(s, cp);
  states_[static_cast<size_t>(s)].next.emplace(cp, t);
  return t;
}

bool Matcher::AcceptsSome(StateId s, uint32_t lo, uint32_t hi) const {
  if (s < 0) return false;
  for (int32_t id : states_[static_cast<size_t>(s)].stacks) {
    const Elem& e = grammar_->elems[static_cast<size_t>(nodes_[static_cast<size_t>(id)].pos)];
    if (grammar_->classes[static_cast<size_t>(e.value)].Intersects(lo, hi)) return true;
  }
  return false;
}

StateId Matcher::AdvanceBytes(StateId s, std::string_view bytes, Utf8Partial* partial) {
  for (char c : bytes) {
    if (s < 0) return kDead;
    uint32_t cp = 0;
    bool complete = false;
    if (!Utf8Step(partial, static_cast<uint8_t>(c), &cp, &complete)) return kDead;
    if (complete) s = Advance(s, cp);
  }
  if (s >= 0 && partial->need > 0) {
    uint32_t lo = 0, hi = 0;
    partial->Range(&lo, &hi);
    if (!AcceptsSome(s, lo, hi)) return kDead;
  }
  return s;
}

StateId Matcher::Compact(StateId s) {
  if (s < 0) return s;
  const State old = states_[static_cast<size_t>(s)];
  const std::vector<Node> old_nodes = nodes_;
  nodes_.clear();
  node_ids_.clear();
  states_.clear();
  state_ids_.clear();
  // Re-intern each stack bottom-up.
  std::vector<int32_t> stacks;
  for (int32_t id : old.stacks) {
    std::vector<int32_t> chain;
    for (int32_t n = id; n >= 0; n = old_nodes[static_cast<size_t>(n)].parent) chain.push_back(n);
    int32_t parent = -1;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      parent = Intern(old_nodes[static_cast<size_t>(*it)].pos, parent);
    }
    stacks.push_back(parent);
  }
  const StateId fresh = InternState(std::move(stacks), old.can_end);
  // The initial state is kept interned too (a new request never needs it, but initial() stays
  // valid).
  std::vector<int32_t> init;
  bool can_end = false;
  for (int32_t alt : grammar_->rule_alts[static_cast<size_t>(grammar_->root)]) {
    Expand(alt, -1, &init, &can_end);
  }
  initial_ = InternState(std::move(init), can_end);
  return fresh;
}

}  // namespace unmask::grammar
