// tcp_pingpong: raw TCP's own ping-pong on this machine, with the syscalls softdat's busy-poll mode
// makes per message and none of its work. Each side writes a message with one non-blocking
// sendmsg and spins until the answer is whole. The spin is one of:
//   recv   non-blocking recv until it returns bytes (what softdat does with one connection);
//   poll   a zero-timeout poll() on the socket, then recv (no socket lock while nothing came);
//   epoll  a zero-timeout epoll_wait, then recv (what sockperf's and UCX's busy modes do).
// With -s 32 the message is as long as softdat's FPDU for an 8-byte Send (MPA length, DDP and
// RDMAP headers, pad and CRC), so the client's half round trip is the kernel's floor under
// softdat's 8 B busy-poll latency.
//
//   tcp_pingpong -s PORT MODE SIZE                    serve one client, then exit
//   tcp_pingpong -c PORT MODE SIZE ITERS SECONDS      prints p50 and p99 of half a round trip (µs)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tools/bench/loopback.h"

namespace {

using softdat::bench::Loopback;
using softdat::bench::NowSeconds;

enum class Spin { kRecv, kPoll, kEpoll };

constexpr double kIdleBoundS = 10;     // a side that hears nothing this long gives up
constexpr std::size_t kMaxSize = 65536;
constexpr long kWarmUp = 1000;         // round trips not measured

bool ParseSpin(const char* text, Spin& spin) {
  if (std::strcmp(text, "recv") == 0) return spin = Spin::kRecv, true;
  if (std::strcmp(text, "poll") == 0) return spin = Spin::kPoll, true;
  if (std::strcmp(text, "epoll") == 0) return spin = Spin::kEpoll, true;
  return false;
}

class Peer {
 public:
  Peer(int fd, Spin spin) : fd_(fd), spin_(spin), epoll_(epoll_create1(EPOLL_CLOEXEC)) {
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    epoll_event event{};
    event.events = EPOLLIN;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd_, &event);
  }
  ~Peer() {
    close(epoll_);
    close(fd_);
  }

  bool Send(char* data, std::size_t size) {
    iovec iov{data, size};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    return sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(size);
  }

  // Spins until size bytes came; false when the peer closed or went quiet for kIdleBoundS.
  bool Receive(char* data, std::size_t size) {
    std::size_t got = 0;
    for (unsigned long turn = 0; got < size; ++turn) {
      if ((turn & 0xffff) == 0xffff && NowSeconds() - last_ > kIdleBoundS) return false;
      if (!Ready()) continue;
      const ssize_t n = recv(fd_, data + got, size - got, MSG_DONTWAIT);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
      } else if (n == 0 || errno != EAGAIN) {
        return false;
      }
    }
    last_ = NowSeconds();
    return true;
  }

 private:
  bool Ready() {
    if (spin_ == Spin::kPoll) {
      pollfd probe{fd_, POLLIN, 0};
      return poll(&probe, 1, 0) > 0;
    }
    if (spin_ == Spin::kEpoll) {
      epoll_event event;
      return epoll_wait(epoll_, &event, 1, 0) > 0;
    }
    return true;
  }

  int fd_;
  Spin spin_;
  int epoll_;
  double last_ = NowSeconds();
};

int Serve(int port, Spin spin, std::size_t size) {
  const int listener = softdat::bench::ListenOnLoopback(port, 1, "tcp_pingpong");
  if (listener < 0) return 1;
  const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  close(listener);
  if (fd < 0) {
    std::perror("tcp_pingpong: accept");
    return 1;
  }
  Peer peer(fd, spin);
  std::vector<char> buffer(size);
  while (peer.Receive(buffer.data(), size) && peer.Send(buffer.data(), size)) {
  }
  return 0;
}

int Client(int port, Spin spin, std::size_t size, long iters, double seconds) {
  const sockaddr_in address = Loopback(port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    std::perror("tcp_pingpong: connect");
    return 1;
  }
  Peer peer(fd, spin);
  std::vector<char> buffer(size, 7);
  std::vector<double> half_trips;
  half_trips.reserve(static_cast<std::size_t>(iters));
  const double start = NowSeconds();
  for (long i = 0; i < iters + kWarmUp; ++i) {
    const double sent = NowSeconds();
    if (!peer.Send(buffer.data(), size) || !peer.Receive(buffer.data(), size)) {
      std::fprintf(stderr, "tcp_pingpong: the server went away\n");
      return 1;
    }
    if (i >= kWarmUp) half_trips.push_back((NowSeconds() - sent) * 1e6 / 2);
    if ((i & 1023) == 0 && NowSeconds() - start > seconds) break;
  }
  if (half_trips.empty()) return 1;
  std::sort(half_trips.begin(), half_trips.end());
  std::printf("p50 %.3f p99 %.3f\n", half_trips[half_trips.size() / 2], half_trips[half_trips.size() * 99 / 100]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Spin spin;
  if (argc >= 5 && ParseSpin(argv[3], spin)) {
    const std::size_t size = std::strtoul(argv[4], nullptr, 10);
    if (size == 0 || size > kMaxSize) {
      std::fprintf(stderr, "tcp_pingpong: SIZE must be 1..%zu\n", kMaxSize);
      return 2;
    }
    if (argc == 5 && std::strcmp(argv[1], "-s") == 0) return Serve(std::atoi(argv[2]), spin, size);
    if (argc == 7 && std::strcmp(argv[1], "-c") == 0) {
      const long iters = std::atol(argv[5]);
      const double seconds = std::atof(argv[6]);
      if (iters < 1 || seconds <= 0) {
        std::fprintf(stderr, "tcp_pingpong: ITERS must be at least 1 and SECONDS above 0\n");
        return 2;
      }
      return Client(std::atoi(argv[2]), spin, size, iters, seconds);
    }
  }
  std::fprintf(stderr,
               "usage: tcp_pingpong -s PORT recv|poll|epoll SIZE | tcp_pingpong -c PORT recv|poll|epoll SIZE ITERS SECONDS\n");
  return 2;
}
