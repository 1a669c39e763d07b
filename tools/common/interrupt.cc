#include "common/interrupt.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <thread>

namespace unmask::tools {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<bool> g_catching{false};  // CatchInterrupt was called
std::atomic<bool> g_watching{false};  // WatchInterrupts runs the watcher thread

void OnInterrupt(int) { g_interrupted.store(true); }

// Without the watcher (a caller that is not the CLI's main): an ordinary handler.
void Arm() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second Ctrl-C gets the default action
  sigaction(SIGINT, &sa, nullptr);
}

sigset_t InterruptSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  return set;
}

void WatchLoop() {
  const sigset_t set = InterruptSet();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    // The first Ctrl-C of a command that catches it: stop at the next step.
    if (g_catching.load() && !g_interrupted.exchange(true)) continue;
    // Otherwise the default action (the process ends by SIGINT), from this thread.
    signal(SIGINT, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    raise(SIGINT);
  }
}

}  // namespace

void WatchInterrupts() {
  if (g_watching.exchange(true)) return;
  const sigset_t set = InterruptSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // inherited by every thread created from here on
  // A SIGINT ignored on entry (a background job of a shell without job control) would be dropped
  // before sigwait sees it; the handler that CatchInterrupt installed before replaced it too.
  signal(SIGINT, SIG_DFL);
  std::thread(WatchLoop).detach();
}

void CatchInterrupt() {
  g_catching.store(true);
  if (!g_watching.load()) Arm();
}

bool Interrupted() { return g_interrupted.load(); }

void ResetInterrupt() {
  g_interrupted.store(false);
  if (!g_watching.load()) Arm();
}

}  // namespace unmask::tools
