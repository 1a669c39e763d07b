// An httplib::Server whose connections wait in one epoll loop, not in threads, until a whole
// request has arrived, so that slow or idle clients cannot hold the worker threads (cpp-httplib
// 0.11 gives each connection a pool thread for its whole life: 150 clients trickling their headers
// made /health time out, tests/server/test_hostile.py).
//
// A connection's life:
//   accept (cpp-httplib's loop; the "task queue" runs Park inline) -> parked in epoll with a
//   deadline -> its bytes are read into its buffer as they come -> once the buffer holds a whole
//   request (the header block and Content-Length bytes of body; a chunked body: the headers) a
//   worker thread runs it with cpp-httplib's own request handling (process_request), reading from
//   the buffer -> the connection is parked again for the next request (pipelined bytes already in
//   the buffer are processed at once, in order) or closed.
// Limits: a request must arrive whole within `request_timeout_s` of its first byte (else the
// connection is closed); headers above `max_header_bytes` get 431; an idle keep-alive connection
// is closed after `keep_alive_timeout_s`, a new one that sends nothing after `request_timeout_s`;
// at most `max_connections` are open (others are closed at accept); writes time out after
// `write_timeout_s` (a client that stops reading a stream: the handler's write fails and the
// request is cancelled).
#ifndef UNMASK_TOOLS_SERVER_HTTP_GATE_H_
#define UNMASK_TOOLS_SERVER_HTTP_GATE_H_

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace unmask::server {

struct GateOptions {
  int workers = 16;                 // threads that run requests (a streamed response holds one)
  double request_timeout_s = 10;    // first byte -> whole request
  double keep_alive_timeout_s = 5;  // idle time between requests on one connection
  double write_timeout_s = 30;      // one write's progress
  size_t max_header_bytes = 16 << 10;
  size_t max_body_bytes = 8 << 20;
  size_t max_connections = 8192;
  int keep_alive_max_requests = 100;
};

class GatedServer : public httplib::Server {
 public:
  explicit GatedServer(GateOptions options);
  ~GatedServer() override;
  GatedServer(const GatedServer&) = delete;
  GatedServer& operator=(const GatedServer&) = delete;

  // Stops the loop and the workers (after httplib::Server::stop(): no new connections); closes
  // every parked connection. Idempotent.
  void ShutdownGate();
  size_t open_connections() const { return open_.load(); }

  struct Conn;  // one connection: socket, buffer, deadline

 private:
  bool process_and_close_socket(socket_t sock) override;  // runs on the accept thread: parks
  void Park(std::shared_ptr<Conn> c);
  void Loop();    // epoll: reads, completeness, deadlines
  void Worker();  // runs whole requests
  void Close(const std::shared_ptr<Conn>& c);
  // True when c's buffer holds a whole request (or one to refuse: *reject set to an HTTP status).
  bool Complete(Conn& c, int* reject) const;

  GateOptions options_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the loop for new parked connections and shutdown
  std::atomic<bool> running_{true};
  std::atomic<size_t> open_{0};
  std::mutex mu_;
  std::unordered_map<int, std::shared_ptr<Conn>> parked_;  // by socket
  std::vector<std::shared_ptr<Conn>> incoming_;            // parked by other threads, not in epoll
  std::deque<std::shared_ptr<Conn>> ready_;
  std::condition_variable ready_cv_;
  std::thread loop_;
  std::vector<std::thread> workers_;
};

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_HTTP_GATE_H_
