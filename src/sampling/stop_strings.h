// Stop strings (OpenAI `stop`, llama.cpp `--reverse-prompt`/`stop`): generation ends where the
// text first contains one of them, and the stop string itself is not returned.
#ifndef UNMASK_SAMPLING_STOP_STRINGS_H_
#define UNMASK_SAMPLING_STOP_STRINGS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace unmask {

// Byte offset of the earliest occurrence of any non-empty stop string in `text`
// (std::string_view::npos when none); with several at the same offset, the longest wins.
// `*match_length` (may be null) receives its length.
size_t FindStopString(std::string_view text, const std::vector<std::string>& stops,
                      size_t* match_length = nullptr);

// Length of the longest suffix of `text` that is a proper prefix of some stop string: the bytes a
// streaming client must not be sent yet, since the next token may complete a stop string.
size_t PartialStopSuffix(std::string_view text, const std::vector<std::string>& stops);

}  // namespace unmask

#endif  // UNMASK_SAMPLING_STOP_STRINGS_H_
