// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// tcp_fanin: raw TCP's own fan-in on this machine, the peer of datperf's SRQ fan-in figure.
// The client writes 4 KiB messages, four per write (as softdat coalesces four Sends in flight),
// round robin over N connections for a time; the server reads every ready socket, busy-polling
// one epoll set as softdat's busy mode does. The rate counts bytes the server has read: after
// the time is up the client half-closes every connection and stops the clock only when the
// server, having read each to its end, closes it. No library, no framing, no CRC: what the kernel
// alone costs per message at 1 and at 1,000 connections.
//
//   tcp_fanin -s PORT                         serve one client, then exit
//   tcp_fanin -c PORT CONNECTIONS SECONDS     prints the message rate (M msg/s)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tools/bench/loopback.h"

namespace {

using softdat::bench::Loopback;
using softdat::bench::NowSeconds;

constexpr std::size_t kMessage = 4096;
constexpr std::size_t kPerWrite = 4;
constexpr double kDrainBoundS = 30;  // the server must have read everything by then

int Serve(int port) {
  const int listener = softdat::bench::ListenOnLoopback(port, 4096, "tcp_fanin");
  if (listener < 0) return 1;
  const int poll = epoll_create1(EPOLL_CLOEXEC);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = listener;
  epoll_ctl(poll, EPOLL_CTL_ADD, listener, &event);
  std::vector<char> buffer(64 * 1024);
  std::array<epoll_event, 32> ready;
  int open = 0;
  bool served = false;
  while (!served || open > 0) {
    const int n = epoll_wait(poll, ready.data(), static_cast<int>(ready.size()), 0);
    for (int i = 0; i < n; ++i) {
      const int fd = ready[i].data.fd;
      if (fd == listener) {
        const int connection = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (connection < 0) continue;
        event.data.fd = connection;
        epoll_ctl(poll, EPOLL_CTL_ADD, connection, &event);
        ++open;
        served = true;
        continue;
      }
      const ssize_t got = recv(fd, buffer.data(), buffer.size(), 0);
      if (got == 0 || (got < 0 && errno != EAGAIN)) {
        close(fd);  // read to its end: the client's clock waits for this
        --open;
      }
    }
  }
  return 0;
}

int Client(int port, int connections, double seconds) {
  const sockaddr_in address = Loopback(port);
  std::vector<int> fds;
  for (int i = 0; i < connections; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      std::perror("tcp_fanin: connect");
      return 1;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    fds.push_back(fd);
  }
  std::vector<char> message(kMessage * kPerWrite, 7);
  unsigned long long bytes = 0;
  const double start = NowSeconds();
  for (unsigned long turn = 0;; ++turn) {
    if (connections > 16 || (turn & 15) == 0) {
      if (NowSeconds() - start >= seconds) break;
    }
    for (const int fd : fds) {
      const ssize_t put = send(fd, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (put > 0) bytes += static_cast<unsigned long long>(put);
    }
  }
  for (const int fd : fds) shutdown(fd, SHUT_WR);
  char byte;
  for (const int fd : fds) {  // the server closes each once it has read it all
    while (recv(fd, &byte, 1, 0) < 0 && errno == EAGAIN) {
      if (NowSeconds() - start > seconds + kDrainBoundS) {
        std::fprintf(stderr, "tcp_fanin: the server did not read everything within %.0f s\n", kDrainBoundS);
        return 1;
      }
    }
    close(fd);
  }
  std::printf("%.4f\n", static_cast<double>(bytes) / kMessage / (NowSeconds() - start) / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "-s") == 0) return Serve(std::atoi(argv[2]));
  if (argc == 5 && std::strcmp(argv[1], "-c") == 0)
    return Client(std::atoi(argv[2]), std::atoi(argv[3]), std::atof(argv[4]));
  std::fprintf(stderr, "usage: tcp_fanin -s PORT | tcp_fanin -c PORT CONNECTIONS SECONDS\n");
  return 2;
}
