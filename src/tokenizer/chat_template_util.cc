// Error constructors shared by the chat template stages.
#include "tokenizer/chat_template_util.h"

#include <string>
#include <string_view>

namespace unmask::chat_template_internal {

std::string At(size_t offset) { return " at offset " + std::to_string(offset); }

Status SyntaxError(std::string_view what, size_t offset) {
  return InvalidArgumentError("chat template: " + std::string(what) + At(offset));
}

Status Unsupported(std::string_view what, size_t offset) {
  return UnimplementedError("chat template: unsupported " + std::string(what) + At(offset));
}

}  // namespace unmask::chat_template_internal
