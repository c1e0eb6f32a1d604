// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
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
// With `mpa` last, SIZE is a Send's payload and each message is an FPDU carrying it, built and
// checked with softdat's own wire code: the least an iWARP endpoint does per message (encode the
// header, copy the payload in, CRC32c; on arrival check the CRC, decode the header, check the
// queue and MSN, copy the payload out), with no DAT layer, no queue and no completion. Its half
// round trip is the floor under any iWARP provider's latency, MPA CRC on.
//
// Both ends run the congestion control softdat's congestion=auto gives a loopback connection
// (Reno), as softdat's own connections do.
//
//   tcp_pingpong -s PORT MODE SIZE [mpa]                    serve one client, then exit
//   tcp_pingpong -c PORT MODE SIZE ITERS SECONDS [mpa]      prints p50 and p99 of half a round trip (µs)
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
#include "transport/tcp/crc32c.h"
#include "transport/tcp/wire.h"

namespace {

using softdat::bench::Loopback;
using softdat::bench::NowSeconds;

namespace wire = softdat::transport::tcp::wire;
using softdat::transport::tcp::Crc32c;

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

// One side's iWARP Sends over a Peer: what the wire asks per message and nothing more.
class MpaPeer {
 public:
  MpaPeer(Peer& peer, std::size_t payload)
      : peer_(peer), payload_(payload), ulpdu_(wire::kUntaggedHeaderSize - wire::kLengthFieldSize + payload),
        covered_(wire::kLengthFieldSize + ulpdu_ + wire::PadSize(ulpdu_)), frame_(covered_ + wire::kCrcSize) {}

  std::size_t frame_size() const { return frame_.size(); }

  bool Send(const char* data) {
    wire::FpduHeader header;
    header.ulpdu_length = static_cast<std::uint16_t>(ulpdu_);
    header.last = true;
    header.opcode = wire::Opcode::kSend;
    header.queue = wire::kQueueSend;
    header.msn = ++sent_msn_;
    std::uint8_t* at = frame_.data();
    const std::size_t header_size = wire::EncodeHeader(header, at);
    std::memcpy(at + header_size, data, payload_);
    std::memset(at + header_size + payload_, 0, covered_ - header_size - payload_);
    PutBigEndian(at + covered_, Crc32c(at, covered_));
    return peer_.Send(reinterpret_cast<char*>(at), frame_.size());
  }

  // Receives one FPDU and copies its payload to `data`; false when the peer went or sent
  // anything but the next Send, whole and with a good CRC.
  bool Receive(char* data) {
    std::uint8_t* at = frame_.data();
    if (!peer_.Receive(reinterpret_cast<char*>(at), frame_.size())) return false;
    std::size_t header_size = 0;
    if (wire::DecodeControl(at, header_size) != wire::ControlError::kNone) return Bad("control bytes");
    if ((std::size_t{at[0]} << 8 | at[1]) != ulpdu_) return Bad("length");
    if (Crc32c(at, covered_) != GetBigEndian(at + covered_)) return Bad("CRC");
    wire::FpduHeader header;
    wire::DecodeHeader(at, header);
    if (header.opcode != wire::Opcode::kSend || header.queue != wire::kQueueSend || header.msn != ++received_msn_ ||
        header.message_offset != 0 || !header.last)
      return Bad("header");
    std::memcpy(data, at + header_size, payload_);
    return true;
  }

 private:
  static void PutBigEndian(std::uint8_t* at, std::uint32_t v) {
    at[0] = static_cast<std::uint8_t>(v >> 24), at[1] = static_cast<std::uint8_t>(v >> 16);
    at[2] = static_cast<std::uint8_t>(v >> 8), at[3] = static_cast<std::uint8_t>(v);
  }
  static std::uint32_t GetBigEndian(const std::uint8_t* at) {
    return std::uint32_t{at[0]} << 24 | std::uint32_t{at[1]} << 16 | std::uint32_t{at[2]} << 8 | at[3];
  }
  static bool Bad(const char* what) {
    std::fprintf(stderr, "tcp_pingpong: bad FPDU (%s)\n", what);
    return false;
  }

  Peer& peer_;
  std::size_t payload_, ulpdu_, covered_;
  std::vector<std::uint8_t> frame_;
  std::uint32_t sent_msn_ = 0, received_msn_ = 0;
};

int Serve(int port, Spin spin, std::size_t size, bool mpa) {
  const int fd = softdat::bench::AcceptOneOnLoopback(port, "tcp_pingpong");
  if (fd < 0) return 1;
  Peer peer(fd, spin);
  std::vector<char> buffer(size);
  if (mpa) {
    MpaPeer sends(peer, size);
    while (sends.Receive(buffer.data()) && sends.Send(buffer.data())) {
    }
    return 0;
  }
  while (peer.Receive(buffer.data(), size) && peer.Send(buffer.data(), size)) {
  }
  return 0;
}

int Client(int port, Spin spin, std::size_t size, long iters, double seconds, bool mpa) {
  const sockaddr_in address = Loopback(port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    std::perror("tcp_pingpong: connect");
    return 1;
  }
  softdat::bench::LikeSoftdat(fd, "tcp_pingpong");
  Peer peer(fd, spin);
  MpaPeer sends(peer, size);
  std::vector<char> buffer(size, 7);
  std::vector<double> half_trips;
  half_trips.reserve(static_cast<std::size_t>(iters));
  const double start = NowSeconds();
  for (long i = 0; i < iters + kWarmUp; ++i) {
    const double sent = NowSeconds();
    const bool answered = mpa ? sends.Send(buffer.data()) && sends.Receive(buffer.data())
                              : peer.Send(buffer.data(), size) && peer.Receive(buffer.data(), size);
    if (!answered) {
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
  const bool mpa = argc >= 6 && std::strcmp(argv[argc - 1], "mpa") == 0;
  if (mpa) --argc;
  if (argc >= 5 && ParseSpin(argv[3], spin)) {
    const std::size_t size = std::strtoul(argv[4], nullptr, 10);
    const std::size_t most = mpa ? std::min<std::size_t>(wire::kMaxFpduPayload, kMaxSize - wire::kUntaggedHeaderSize - 3 - wire::kCrcSize)
                                 : kMaxSize;
    if (size == 0 || size > most) {
      std::fprintf(stderr, "tcp_pingpong: SIZE must be 1..%zu\n", most);
      return 2;
    }
    if (argc == 5 && std::strcmp(argv[1], "-s") == 0) return Serve(std::atoi(argv[2]), spin, size, mpa);
    if (argc == 7 && std::strcmp(argv[1], "-c") == 0) {
      const long iters = std::atol(argv[5]);
      const double seconds = std::atof(argv[6]);
      if (iters < 1 || seconds <= 0) {
        std::fprintf(stderr, "tcp_pingpong: ITERS must be at least 1 and SECONDS above 0\n");
        return 2;
      }
      return Client(std::atoi(argv[2]), spin, size, iters, seconds, mpa);
    }
  }
  std::fprintf(stderr,
               "usage: tcp_pingpong -s PORT recv|poll|epoll SIZE [mpa] | "
               "tcp_pingpong -c PORT recv|poll|epoll SIZE ITERS SECONDS [mpa]\n");
  return 2;
}
