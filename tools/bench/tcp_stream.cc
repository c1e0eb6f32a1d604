// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// tcp_stream: raw TCP's own one-connection stream on this machine, busy-polling on both sides,
// with none of a library's work: the ceiling under any stack that carries a stream of messages
// over one TCP connection (softdat's Send stream, UCX's tag_bw over its tcp transport). iperf3
// measures the same connection with blocking calls, so a busy-polling stack can beat it; this
// one spins as they do. The sender writes SIZE bytes per non-blocking sendmsg and spins while the
// socket is full; the receiver spins on a non-blocking recv of up to SIZE bytes into one buffer
// and never touches the bytes. Socket buffers are the kernel's autotuned ones, as softdat's are.
// With BUFFERS above 1 each side goes round that many buffers of SIZE, one per message, as an
// application with a window of messages in flight does (datperf's stream: 16 send buffers, 32
// receive buffers); with 1 the bytes stay in cache, as ucx_perftest's one buffer per side does.
//
// With `crc` last, each side also computes MPA's CRC32c over every byte it moves, with softdat's own
// CRC code (ISA-L), as an iWARP endpoint must: the sender over each message, FPDU payload by FPDU
// payload, right before it writes it; the receiver over each piece right after it reads it. That
// is the floor under any iWARP stream over one connection with MPA's CRC on: no framing, no
// library. (Against the same stream without `crc`, it gives the CRC's own cost, but on this VM a
// 2 s stream moves 20% between runs, more than that cost: it takes many rounds.)
//
// Both ends run the congestion control softdat's congestion=auto gives a loopback connection
// (Reno), as softdat's stream does; UCX and iperf3 run the system's.
//
//   tcp_stream -s PORT SIZE [BUFFERS] [crc]           receive one stream, then exit
//   tcp_stream -c PORT SIZE SECONDS [BUFFERS] [crc]   send for SECONDS; prints the receiver's MB/s
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
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
using softdat::transport::tcp::Crc32cUpdate;
using softdat::transport::tcp::kCrc32cInit;

// What the CRC of the bytes moved came to, so that the compiler cannot drop the computation.
volatile std::uint32_t crc_sink;

// The sender's CRC over one message: one CRC per FPDU payload, as softdat frames a Send.
void CrcMessage(const char* data, std::size_t size) {
  std::uint32_t sink = 0;
  for (std::size_t at = 0; at < size; at += softdat::transport::tcp::wire::kMaxFpduPayload) {
    const std::size_t n = std::min<std::size_t>(size - at, softdat::transport::tcp::wire::kMaxFpduPayload);
    sink ^= Crc32cUpdate(kCrc32cInit, data + at, n);
  }
  crc_sink = sink;
}

constexpr double kIdleBoundS = 10;  // a side that can move nothing this long gives up
constexpr std::size_t kMaxSize = 64u << 20;
constexpr std::size_t kMaxBuffers = 64;

// The receiver's report once the stream ended: what it got, over how long (first byte to end).
struct Report {
  std::uint64_t bytes;
  double seconds;
};

int Serve(int port, std::size_t size, std::size_t buffers, bool crc) {
  const int fd = softdat::bench::AcceptOneOnLoopback(port, "tcp_stream");
  if (fd < 0) return 1;
  std::vector<char> buffer(size * buffers);
  Report report{0, 0};
  double first = 0, last = NowSeconds();
  std::size_t slot = 0, offset = 0;  // the buffer being filled, and how far
  for (unsigned long turn = 0;; ++turn) {
    const ssize_t n = recv(fd, buffer.data() + slot * size + offset, size - offset, MSG_DONTWAIT);
    if (n > 0) {
      if (crc) crc_sink = Crc32cUpdate(kCrc32cInit, buffer.data() + slot * size + offset, static_cast<std::size_t>(n));
      if (report.bytes == 0) first = NowSeconds();
      report.bytes += static_cast<std::uint64_t>(n);
      offset += static_cast<std::size_t>(n);
      if (offset == size) offset = 0, slot = (slot + 1) % buffers;
      continue;
    }
    if (n == 0) break;  // the sender is done
    if (errno != EAGAIN) {
      std::perror("tcp_stream: recv");
      close(fd);
      return 1;
    }
    if ((turn & 0xffff) == 0xffff) {
      const double now = NowSeconds();
      if (report.bytes != 0) last = now;
      if (now - last > kIdleBoundS) break;
    }
  }
  report.seconds = NowSeconds() - first;
  const bool sent = send(fd, &report, sizeof report, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof report);
  close(fd);
  return sent ? 0 : 1;
}

int Client(int port, std::size_t size, double seconds, std::size_t buffers, bool crc) {
  const sockaddr_in address = Loopback(port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    std::perror("tcp_stream: connect");
    return 1;
  }
  softdat::bench::LikeSoftdat(fd, "tcp_stream");
  std::vector<char> buffer(size * buffers, 7);
  const double start = NowSeconds();
  double moved = start;
  std::size_t slot = 0, offset = 0;  // the message being written, and how far
  for (unsigned long turn = 0;; ++turn) {
    if (crc && offset == 0) CrcMessage(buffer.data() + slot * size, size);
    iovec iov{buffer.data() + slot * size + offset, size - offset};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    const ssize_t n = sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      offset += static_cast<std::size_t>(n);
      if (offset == size) offset = 0, slot = (slot + 1) % buffers;
    } else if (errno != EAGAIN) {
      std::perror("tcp_stream: send");
      return 1;
    }
    if ((turn & 255) == 255 || offset == 0) {
      const double now = NowSeconds();
      if (n > 0) moved = now;
      if (offset == 0 && now - start > seconds) break;
      if (now - moved > kIdleBoundS) {
        std::fprintf(stderr, "tcp_stream: the receiver stopped reading\n");
        return 1;
      }
    }
  }
  shutdown(fd, SHUT_WR);
  Report report{};
  if (recv(fd, &report, sizeof report, MSG_WAITALL) != static_cast<ssize_t>(sizeof report) || report.seconds <= 0) {
    std::fprintf(stderr, "tcp_stream: no report from the receiver\n");
    return 1;
  }
  close(fd);
  std::printf("MBps %.1f\n", static_cast<double>(report.bytes) / report.seconds / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool crc = argc >= 5 && std::strcmp(argv[argc - 1], "crc") == 0;
  if (crc) --argc;
  if (argc >= 4) {
    const std::size_t size = std::strtoul(argv[3], nullptr, 10);
    if (size == 0 || size > kMaxSize) {
      std::fprintf(stderr, "tcp_stream: SIZE must be 1..%zu\n", kMaxSize);
      return 2;
    }
    const bool server = std::strcmp(argv[1], "-s") == 0;
    const int buffers_at = server ? 4 : 5;
    const std::size_t buffers = argc > buffers_at ? std::strtoul(argv[buffers_at], nullptr, 10) : 1;
    if (buffers == 0 || buffers > kMaxBuffers || argc > buffers_at + 1) {
      std::fprintf(stderr, "tcp_stream: BUFFERS must be 1..%zu\n", kMaxBuffers);
      return 2;
    }
    if (server) return Serve(std::atoi(argv[2]), size, buffers, crc);
    if (argc >= 5 && std::strcmp(argv[1], "-c") == 0) {
      const double seconds = std::atof(argv[4]);
      if (seconds <= 0 || seconds > 60) {
        std::fprintf(stderr, "tcp_stream: SECONDS must be above 0 and at most 60\n");
        return 2;
      }
      return Client(std::atoi(argv[2]), size, seconds, buffers, crc);
    }
  }
  std::fprintf(stderr, "usage: tcp_stream -s PORT SIZE [BUFFERS] [crc] | tcp_stream -c PORT SIZE SECONDS [BUFFERS] [crc]\n");
  return 2;
}
