// Test helper of the engine and server tests: draining a request's stream (engine/request.h) to its
// end.
#ifndef UNMASK_TESTS_DRAIN_UTIL_H_
#define UNMASK_TESTS_DRAIN_UTIL_H_

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "engine/request.h"

namespace unmask::testing {

// What a stream delivered: its text pieces joined, the number of kCanvas events and the kDone
// event (type kText when none came within the limit).
struct Outcome {
  std::string text;
  int canvases = 0;
  StreamEvent done;
};

// Pops events until kDone; a test failure when it does not come within `limit`.
inline Outcome Drain(RequestStream& s, std::chrono::seconds limit = std::chrono::seconds(60)) {
  Outcome o;
  const auto end = SteadyClock::now() + limit;
  StreamEvent e;
  while (SteadyClock::now() < end) {
    if (!s.Pop(&e, std::chrono::milliseconds(100))) continue;
    if (e.type == StreamEvent::Type::kText) o.text += e.text;
    if (e.type == StreamEvent::Type::kCanvas) ++o.canvases;
    if (e.type == StreamEvent::Type::kDone) {
      o.done = e;
      return o;
    }
  }
  ADD_FAILURE() << "no kDone event within " << limit.count() << " s";
  return o;
}

}  // namespace unmask::testing

#endif  // UNMASK_TESTS_DRAIN_UTIL_H_
