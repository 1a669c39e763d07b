// Transfer schedules: how many masked tokens are committed at each step.
#ifndef UNMASK_DECODE_SCHEDULE_H_
#define UNMASK_DECODE_SCHEDULE_H_

#include <cstdint>
#include <vector>

namespace unmask {

// LLaDA's `get_num_transfer_tokens` (ML-GSAI/LLaDA generate.py): `num_masked` tokens over `steps`
// steps of a linear schedule: base = num_masked / steps each, and the remainder num_masked % steps
// goes to the FIRST steps. Example: (32, 10) -> [4,4,3,3,3,3,3,3,3,3]. Empty for steps <= 0.
std::vector<int64_t> NumTransferTokens(int64_t num_masked, int64_t steps);

}  // namespace unmask

#endif  // UNMASK_DECODE_SCHEDULE_H_
