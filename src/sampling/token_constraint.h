// A constraint on which tokens may come next (grammar-constrained sampling): the AR decoder masks
// every token the constraint does not allow before the sampling chain, and tells it each committed
// token. Implemented by grammar::GrammarConstraint (JSON mode, JSON schemas, GBNF grammars).
#ifndef UNMASK_SAMPLING_TOKEN_CONSTRAINT_H_
#define UNMASK_SAMPLING_TOKEN_CONSTRAINT_H_

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace unmask {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // The tokens allowed after those accepted so far: [vocab] 1 = allowed, 0 = masked. Valid until
  // the next call on this object. All zeros when nothing can follow (Complete(), or a grammar
  // the vocabulary cannot spell).
  virtual std::span<const uint8_t> Allowed() = 0;
  // Records a committed token. Errors: InvalidArgument when `token` is not allowed (the state is
  // then unchanged).
  virtual Status Accept(int32_t token) = 0;
  // True when the text so far is complete and nothing more may follow: generation ends here.
  virtual bool Complete() const = 0;
  // What the constraint is, for messages ("json_schema", "grammar", ...).
  virtual std::string name() const = 0;
  // Why the constraint cannot go on (a grammar too ambiguous to follow): the generation then fails
  // with this error. Ok while it works.
  virtual Status status() const { return Status::Ok(); }
};

}  // namespace unmask

#endif  // UNMASK_SAMPLING_TOKEN_CONSTRAINT_H_
