// Ctrl-C during a generation: the first SIGINT asks the running command to stop at its next step
// (it then prints the text so far, a newline and its statistics, or valid JSON); a second SIGINT
// ends the process at once, as the default action would.
#ifndef UNMASK_TOOLS_COMMON_INTERRUPT_H_
#define UNMASK_TOOLS_COMMON_INTERRUPT_H_

namespace unmask::tools {

// Installs the handler (idempotent). After a first SIGINT, Interrupted() is true and the next
// SIGINT has the default action (terminate).
void CatchInterrupt();
// True once SIGINT arrived after CatchInterrupt().
bool Interrupted();
// Clears the flag and re-arms the handler (the chat loop: Ctrl-C stops one reply, not the
// program).
void ResetInterrupt();

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_INTERRUPT_H_
