#include "common/interrupt.h"

#include <signal.h>

#include <atomic>

namespace unmask::tools {
namespace {

std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) { g_interrupted.store(true); }

void Arm() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // the second Ctrl-C gets the default action
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

void CatchInterrupt() { Arm(); }

bool Interrupted() { return g_interrupted.load(); }

void ResetInterrupt() {
  g_interrupted.store(false);
  Arm();
}

}  // namespace unmask::tools
