// RequestStream: events arrive in order; WaitFinished sleeps through text events and returns once
// the last event is queued, from another thread too.
#include <gtest/gtest.h>

#include <thread>

#include "engine/request.h"

namespace unmask {
namespace {

using namespace std::chrono_literals;

TEST(RequestStreamTest, WaitFinishedIgnoresTextEventsAndSeesTheLastOne) {
  RequestStream s;
  StreamEvent text;
  text.text = "a";
  s.Push(text);
  EXPECT_FALSE(s.WaitFinished(10ms));  // a text event does not finish the stream
  EXPECT_FALSE(s.finished());
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    StreamEvent t;
    t.text = "b";
    s.Push(t);
    StreamEvent done;
    done.type = StreamEvent::Type::kDone;
    done.output_ids = {7, 8};
    s.Push(done);
  });
  EXPECT_TRUE(s.WaitFinished(10s));
  producer.join();
  EXPECT_TRUE(s.finished());
  // Every event is still there, in order.
  StreamEvent e;
  ASSERT_TRUE(s.Pop(&e, 0ms));
  EXPECT_EQ(e.text, "a");
  ASSERT_TRUE(s.Pop(&e, 0ms));
  EXPECT_EQ(e.text, "b");
  ASSERT_TRUE(s.Pop(&e, 0ms));
  EXPECT_EQ(e.type, StreamEvent::Type::kDone);
  EXPECT_EQ(e.output_ids, (std::vector<int32_t>{7, 8}));
  EXPECT_FALSE(s.Pop(&e, 0ms));
  EXPECT_TRUE(s.WaitFinished(0ms));
}

}  // namespace
}  // namespace unmask
