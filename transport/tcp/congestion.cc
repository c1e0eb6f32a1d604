// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The congestion= choice for one connection (see congestion.h).
#include "transport/tcp/congestion.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>

namespace softdat::transport::tcp {

bool SameHost(const sockaddr_in& local, const sockaddr_in& remote) {
  const std::uint32_t peer = ntohl(remote.sin_addr.s_addr);
  return (peer >> 24) == 127 || remote.sin_addr.s_addr == local.sin_addr.s_addr;
}

const char* CongestionFor(const std::string& mode, const sockaddr_in& local, const sockaddr_in& remote) {
  if (mode == "system") return nullptr;
  if (mode == "auto") return SameHost(local, remote) ? kLoopbackCongestion : nullptr;
  return mode.c_str();  // a name the IA options checked
}

bool SetCongestion(int fd, const char* algorithm) {
  return ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algorithm, static_cast<socklen_t>(std::strlen(algorithm))) == 0;
}

std::string CongestionOf(int fd) {
  char name[16] = {};  // TCP_CA_NAME_MAX
  socklen_t size = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &size) != 0) return "?";
  return std::string(name, strnlen(name, sizeof name));
}

}  // namespace softdat::transport::tcp
