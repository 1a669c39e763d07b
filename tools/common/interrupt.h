// Ctrl-C during a generation: the first SIGINT asks the running command to stop at its next step
// (it then prints the text so far, a newline and its statistics, or valid JSON); a second SIGINT
// ends the process at once, as the default action would.
#ifndef UNMASK_TOOLS_COMMON_INTERRUPT_H_
#define UNMASK_TOOLS_COMMON_INTERRUPT_H_

namespace unmask::tools {

// Receives SIGINT on a thread of its own (sigwait) instead of interrupting whatever code runs: the
// CLI's main calls it first, before any other thread exists, for every command but serve (which
// waits for its signals itself). Needed because oneDNN 2.6's JIT f32 GEMM points rsp into the heap
// while it runs, so a signal delivered there writes its frame onto the heap (oneDNN issue #4845,
// fixed in 3.x: a Ctrl-C during generation aborted with "malloc(): ... corrupted" in about 1 of 20
// tries, tests/e2e/cli_habits_test.cc). SIGINT is blocked in the calling thread and in every thread
// it creates later; without CatchInterrupt, a SIGINT ends the process as the default action does.
// Idempotent.
void WatchInterrupts();
// From now on the first SIGINT sets Interrupted() and the next one has the default action
// (terminate). Idempotent. Without WatchInterrupts (a caller other than the CLI's main) it installs
// an ordinary handler instead.
void CatchInterrupt();
// True once SIGINT arrived after CatchInterrupt().
bool Interrupted();
// Clears the flag, so that the next SIGINT sets it again (the chat loop: Ctrl-C stops one reply,
// not the program).
void ResetInterrupt();

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_INTERRUPT_H_
