#include "tokenizer/tokenizer.h"

#include "tokenizer/chat_template.h"

namespace unmask {

StatusOr<std::string> Tokenizer::ApplyChatTemplate(std::span<const ChatMessage> messages,
                                                   bool add_generation_prompt,
                                                   std::string_view tools_json) const {
  if (chat_template_.empty()) {
    return FailedPreconditionError("the model has no chat template (tokenizer.chat_template)");
  }
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.tools_json = std::string(tools_json);
  inputs.bos_token = std::string(TokenText(special_.bos));
  inputs.eos_token = std::string(TokenText(special_.eos));
  return RenderChatTemplate(chat_template_, inputs);
}

}  // namespace unmask
