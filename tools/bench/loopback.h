// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The pieces the raw-TCP benchmark helpers share: a clock, the loopback address of a port, a
// listening socket on it, and the congestion control softdat gives a loopback connection (so that
// a floor measured with these helpers runs the TCP softdat runs). Each helper is one small binary.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "transport/tcp/congestion.h"

namespace softdat::bench {

inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// Gives connected socket `fd` the congestion control softdat's congestion=auto gives a loopback
// connection (transport/tcp/congestion.h); a refusal leaves the system's, said on stderr.
inline void LikeSoftdat(int fd, const char* tool) {
  if (!transport::tcp::SetCongestion(fd, transport::tcp::kLoopbackCongestion))
    std::fprintf(stderr, "%s: congestion control %s refused: %s\n", tool, transport::tcp::kLoopbackCongestion,
                 std::strerror(errno));
}

// A socket listening on 127.0.0.1:port, or -1 (said on stderr, prefixed with `tool`).
inline int ListenOnLoopback(int port, int backlog, const char* tool) {
  const sockaddr_in address = Loopback(port);
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (listener >= 0) setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listener < 0 || bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      listen(listener, backlog) != 0) {
    std::fprintf(stderr, "%s: cannot listen on 127.0.0.1:%d\n", tool, port);
    if (listener >= 0) close(listener);
    return -1;
  }
  return listener;
}

// Listens on 127.0.0.1:port, accepts one connection (LikeSoftdat) and stops listening: its socket,
// or -1 (said on stderr, prefixed with `tool`).
inline int AcceptOneOnLoopback(int port, const char* tool) {
  const int listener = ListenOnLoopback(port, 1, tool);
  if (listener < 0) return -1;
  const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  close(listener);
  if (fd < 0) {
    std::fprintf(stderr, "%s: accept on 127.0.0.1:%d: %s\n", tool, port, std::strerror(errno));
    return -1;
  }
  LikeSoftdat(fd, tool);
  return fd;
}

}  // namespace softdat::bench
