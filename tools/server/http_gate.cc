#include "server/http_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <string_view>
#include <vector>

namespace unmask::server {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point After(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

int MsUntil(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

// Runs each accepted connection's task at once on the accept thread: GatedServer's
// process_and_close_socket only parks the socket.
class InlineQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

void PeerOrLocal(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ip.clear();
  port = 0;
  if (rc != 0) return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    port = ntohs(a->sin6_port);
  }
  ip = buf;
}

// The values of header `name` (case-insensitive) in a header block, in order.
std::vector<std::string_view> HeaderValues(std::string_view head, std::string_view name) {
  std::vector<std::string_view> out;
  size_t line = head.find('\n');
  while (line != std::string_view::npos && line + 1 < head.size()) {
    const size_t start = line + 1;
    size_t end = head.find('\n', start);
    if (end == std::string_view::npos) end = head.size();
    std::string_view l = head.substr(start, end - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    const size_t colon = l.find(':');
    if (colon == name.size() && std::equal(name.begin(), name.end(), l.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      std::string_view v = l.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      out.push_back(v);
    }
    line = end;
  }
  return out;
}

std::string_view HeaderValue(std::string_view head, std::string_view name) {
  const auto all = HeaderValues(head, name);
  return all.empty() ? std::string_view() : all.front();
}

// The answer to a request refused before it is read whole (431: headers too large, 413: body too
// large), with an OpenAI-style error body; the connection is closed after it.
std::string RejectResponse(int status, const GateOptions& o) {
  std::string message;
  if (status == 413) {
    message = "the request body is larger than the limit of " + std::to_string(o.max_body_bytes) +
              " bytes";
  } else if (status == 431) {
    message = "the request's header block is larger than " + std::to_string(o.max_header_bytes) +
              " bytes";
  } else {
    message =
        "the request's body length is ambiguous (several different Content-Length headers, "
        "or Content-Length with Transfer-Encoding)";
  }
  const std::string body = "{\"error\":{\"message\":\"" + message +
                           "\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}";
  return "HTTP/1.1 " + std::to_string(status) +
         (status == 413   ? " Payload Too Large"
          : status == 431 ? " Request Header Fields Too Large"
                          : " Bad Request") +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

// One connection: its socket, the bytes read and not consumed yet, and its deadlines. Also the
// httplib::Stream the request handling reads from (the buffer first) and writes to.
struct GatedServer::Conn : public httplib::Stream {
  Conn(int fd_in, std::atomic<size_t>* open_in, double write_timeout_s)
      : fd(fd_in), open(open_in), write_timeout_ms(static_cast<int>(write_timeout_s * 1000)) {}
  ~Conn() override {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    open->fetch_sub(1);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  size_t buffered() const { return buf.size() - pos; }
  void Compact() {
    if (pos > 0 && (pos == buf.size() || pos > 65536)) {
      buf.erase(0, pos);
      pos = 0;
    }
  }

  // httplib::Stream
  bool is_readable() const override {
    if (buffered() > 0) return true;
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, MsUntil(read_deadline)) > 0;
  }
  bool is_writable() const override {
    pollfd p{fd, POLLOUT, 0};
    return ::poll(&p, 1, write_timeout_ms) > 0 && (p.revents & (POLLERR | POLLHUP)) == 0;
  }
  ssize_t read(char* ptr, size_t size) override {
    if (buffered() > 0) {
      const size_t n = std::min(size, buffered());
      std::memcpy(ptr, buf.data() + pos, n);
      pos += n;
      return static_cast<ssize_t>(n);
    }
    // Past the buffer (a chunked body): from the socket, within the request's deadline.
    for (;;) {
      const ssize_t n = ::recv(fd, ptr, size, MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, MsUntil(read_deadline)) <= 0) return -1;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      const ssize_t n = ::send(fd, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      // A client that stopped reading: the write fails after write_timeout and the handler
      // cancels the request.
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, write_timeout_ms) <= 0) return -1;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    PeerOrLocal(fd, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    PeerOrLocal(fd, false, ip, port);
  }
  socket_t socket() const override { return fd; }

  const int fd;
  std::atomic<size_t>* const open;
  const int write_timeout_ms;
  std::string buf;
  size_t pos = 0;
  bool eof = false;                 // the client closed its side
  bool sent_continue = false;       // "100 Continue" sent for the request being read
  int requests = 0;                 // handled on this connection
  Clock::time_point deadline;       // parked: close when reached
  Clock::time_point read_deadline;  // running: reads past the buffer fail after it
};

GatedServer::GatedServer(GateOptions options) : options_(options) {
  new_task_queue = [] { return new InlineQueue(); };
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  loop_ = std::thread([this] { Loop(); });
  for (int i = 0; i < std::max(options_.workers, 1); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
}

GatedServer::~GatedServer() {
  ShutdownGate();
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

void GatedServer::ShutdownGate() {
  if (!running_.exchange(false)) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = ::write(wake_fd_, &one, sizeof(one));
  ready_cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  parked_.clear();  // closes them
  incoming_.clear();
  ready_.clear();
}

bool GatedServer::process_and_close_socket(socket_t sock) {
  if (!running_.load() || open_.load() >= options_.max_connections) {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return false;
  }
  const int flags = fcntl(sock, F_GETFL, 0);
  fcntl(sock, F_SETFL, flags | O_NONBLOCK);
  open_.fetch_add(1);
  auto c = std::make_shared<Conn>(sock, &open_, options_.write_timeout_s);
  // A new connection must send its request within request_timeout_s.
  c->deadline = After(options_.request_timeout_s);
  Park(std::move(c));
  return true;
}

void GatedServer::Park(std::shared_ptr<Conn> c) {
  int reject = 0;
  if (c->buffered() > 0 && Complete(*c, &reject) && reject == 0) {
    // Pipelined: the next request is already here.
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::move(c));
    ready_cv_.notify_one();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.push_back(std::move(c));
  }
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t w = ::write(wake_fd_, &one, sizeof(one));
}

bool GatedServer::Complete(Conn& c, int* reject) const {
  *reject = 0;
  const std::string_view data(c.buf.data() + c.pos, c.buffered());
  size_t end = data.find("\r\n\r\n");
  size_t sep = 4;
  if (const size_t lf = data.find("\n\n"); lf != std::string_view::npos && lf < end) {
    end = lf, sep = 2;
  }
  if (end == std::string_view::npos) {
    if (data.size() > options_.max_header_bytes) *reject = 431;
    return *reject != 0;
  }
  if (end > options_.max_header_bytes) {
    *reject = 431;
    return true;
  }
  const std::string_view head = data.substr(0, end);
  const auto te = HeaderValues(head, "Transfer-Encoding");
  const auto cls = HeaderValues(head, "Content-Length");
  // Ambiguous lengths are how requests are smuggled past a proxy (RFC 9112 6.3): refused.
  const bool conflicting =
      (!te.empty() && !cls.empty()) ||
      std::any_of(cls.begin(), cls.end(), [&](std::string_view v) { return v != cls.front(); });
  if (conflicting) {
    *reject = 400;
    return true;
  }
  if (!te.empty()) return true;  // chunked: the worker reads the body within the deadline
  if (cls.empty()) return true;
  const std::string_view cl = cls.front();
  uint64_t length = 0;
  for (char ch : cl) {
    if (ch < '0' || ch > '9' || length > (uint64_t{1} << 40)) return true;  // httplib refuses it
    length = length * 10 + static_cast<uint64_t>(ch - '0');
  }
  if (length > options_.max_body_bytes) {
    *reject = 413;  // at once: httplib would first wait for the body to skip it
    return true;
  }
  return data.size() >= end + sep + length;
}

void GatedServer::Close(const std::shared_ptr<Conn>& c) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  parked_.erase(c->fd);
}

void GatedServer::Loop() {
  std::vector<epoll_event> events(256);
  auto next_scan = Clock::now();
  while (running_.load()) {
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 100);
    {
      // Newly parked connections into epoll.
      std::vector<std::shared_ptr<Conn>> incoming;
      {
        std::lock_guard<std::mutex> lock(mu_);
        incoming.swap(incoming_);
      }
      for (auto& c : incoming) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = c->fd;
        if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) continue;  // closes it
        std::lock_guard<std::mutex> lock(mu_);
        parked_[c->fd] = std::move(c);
      }
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == wake_fd_) {
        uint64_t v;
        while (::read(wake_fd_, &v, sizeof(v)) > 0) {
        }
        continue;
      }
      std::shared_ptr<Conn> c;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = parked_.find(fd);
        if (it == parked_.end()) continue;
        c = it->second;
      }
      // Read what has come (bounded: a whole request at most, plus one read).
      const size_t cap = options_.max_header_bytes + options_.max_body_bytes + 65536;
      const bool was_empty = c->buffered() == 0;
      char chunk[16384];
      for (;;) {
        if (c->buffered() > cap) break;
        const ssize_t got = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (got > 0) {
          c->buf.append(chunk, static_cast<size_t>(got));
          continue;
        }
        if (got == 0) c->eof = true;
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) c->eof = true;
        break;
      }
      // A request's first byte starts its deadline.
      if (was_empty && c->buffered() > 0) c->deadline = After(options_.request_timeout_s);
      int reject = 0;
      const bool complete = c->buffered() > 0 && Complete(*c, &reject);
      if (complete && reject != 0) {
        const std::string answer = RejectResponse(reject, options_);
        [[maybe_unused]] const ssize_t w =
            ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        Close(c);
        continue;
      }
      if (complete) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        {
          std::lock_guard<std::mutex> lock(mu_);
          parked_.erase(fd);
          ready_.push_back(c);
        }
        ready_cv_.notify_one();
        continue;
      }
      if (c->eof) {
        Close(c);  // gone before a whole request came
        continue;
      }
      // A client that asked "Expect: 100-continue" (curl, for bodies over 1 KiB) waits for it
      // before sending the body: answer from here (cpp-httplib answers again once the request
      // runs; a second interim response is allowed and ignored).
      if (!c->sent_continue) {
        const std::string_view data(c->buf.data() + c->pos, c->buffered());
        const size_t end = data.find("\r\n\r\n");
        if (end != std::string_view::npos) {
          std::string expect(HeaderValue(data.substr(0, end), "Expect"));
          for (char& ch : expect)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          if (expect == "100-continue") {
            static const char k100[] = "HTTP/1.1 100 Continue\r\n\r\n";
            [[maybe_unused]] const ssize_t w =
                ::send(fd, k100, sizeof(k100) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            c->sent_continue = true;
          }
        }
      }
    }
    // Deadlines, every 100 ms.
    if (Clock::now() >= next_scan) {
      next_scan = After(0.1);
      const auto now = Clock::now();
      std::vector<std::shared_ptr<Conn>> expired;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto& [fd, c] : parked_) {
          if (c->deadline <= now) expired.push_back(c);
        }
      }
      for (const auto& c : expired) Close(c);
    }
  }
}

void GatedServer::Worker() {
  for (;;) {
    std::shared_ptr<Conn> c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_cv_.wait(lock, [&] { return !ready_.empty() || !running_.load(); });
      if (!running_.load()) return;
      c = std::move(ready_.front());
      ready_.pop_front();
    }
    c->read_deadline = After(options_.request_timeout_s);
    c->sent_continue = false;
    const bool last = ++c->requests >= options_.keep_alive_max_requests || c->eof ||
                      !running_.load() || !is_running();
    bool closed = false;
    const bool ok = process_request(*c, last, closed, nullptr);
    c->Compact();
    if (!ok || closed || last || !running_.load()) continue;  // dropping c closes it
    c->deadline = After(options_.keep_alive_timeout_s);
    Park(std::move(c));
  }
}

}  // namespace unmask::server
