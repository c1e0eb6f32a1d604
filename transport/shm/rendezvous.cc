// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The abstract Unix sockets of the rendezvous and one-message I/O with passed descriptors
// (rendezvous.h).
#include "transport/shm/rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/log.h"

namespace softdat::transport::shm {

RendezvousName NameFor(in_addr address, std::uint16_t port) {
  RendezvousName name;
  name.address.sun_family = AF_UNIX;
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address, text, sizeof text);
  // sun_path[0] stays 0: an abstract name, its length counted exactly (no terminating 0).
  const int n = std::snprintf(name.address.sun_path + 1, sizeof name.address.sun_path - 1, "softdat-shm-1:%s:%u", text,
                              static_cast<unsigned>(port));
  name.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return name;
}

Status ListenRendezvous(in_addr address, std::uint16_t port, UniqueFd& fd) {
  UniqueFd socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return Status(Code::kInsufficientResources, Detail::kTep);
  const RendezvousName name = NameFor(address, port);
  if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&name.address), name.length) != 0) {
    if (errno == EADDRINUSE) {
      SOFTDAT_LOG(kWarn, "shm: the rendezvous name %s is taken by another socket: this listener serves same-host peers over TCP",
                  name.address.sun_path + 1);
      return Status(Code::kConnQualInUse);
    }
    return Status(Code::kInsufficientResources, Detail::kTep);
  }
  if (::listen(socket.get(), SOMAXCONN) != 0) return Status(Code::kInsufficientResources, Detail::kTep);
  fd = std::move(socket);
  return Status::Ok();
}

UniqueFd AcceptRendezvous(int listen_fd) {
  return UniqueFd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
}

Dial DialRendezvous(in_addr address, std::uint16_t port, UniqueFd& fd) {
  UniqueFd socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!socket.valid()) return Dial::kFailed;
  const RendezvousName name = NameFor(address, port);
  if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&name.address), name.length) != 0) {
    // ECONNREFUSED: no such name in this namespace; EAGAIN: the listener's queue is full.
    if (errno == ECONNREFUSED || errno == ENOENT || errno == EAGAIN) return Dial::kNobody;
    return Dial::kFailed;
  }
  fd = std::move(socket);
  return Dial::kConnected;
}

bool PeerCredentials(int fd, pid_t& pid, uid_t& uid) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 || length != sizeof credentials) return false;
  pid = credentials.pid;
  uid = credentials.uid;
  return true;
}

bool SendMessage(int fd, std::span<const std::uint8_t> bytes, std::span<const int> fds) {
  if (fds.size() > kMaxPassedFds) return false;
  iovec data{const_cast<std::uint8_t*>(bytes.data()), bytes.size()};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))] = {};
  if (!fds.empty()) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(header), fds.data(), fds.size() * sizeof(int));
  }
  for (;;) {
    const ssize_t n = ::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(bytes.size());
  }
}

Received ReceiveMessage(int fd, std::span<std::uint8_t> buffer, std::size_t& length, std::span<UniqueFd> fds,
                        std::size_t& fd_count) {
  fd_count = 0;
  length = 0;
  iovec data{buffer.data(), buffer.size()};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  // Room for more descriptors than allowed, so that a peer sending extra ones is seen (and they
  // are closed) rather than silently dropped by the kernel's truncation.
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))];
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? Received::kNothing : Received::kEnd;
  // Take ownership of every descriptor that came, whatever else is wrong.
  UniqueFd taken[8];
  std::size_t count = 0;
  bool bad_control = (message.msg_flags & MSG_CTRUNC) != 0;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
      bad_control = true;
      continue;
    }
    const std::size_t in_header = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < in_header; ++i) {
      int passed;
      std::memcpy(&passed, CMSG_DATA(header) + i * sizeof(int), sizeof passed);
      if (count < 8) {
        taken[count++].Reset(passed);
      } else {
        ::close(passed);
        bad_control = true;
      }
    }
  }
  if (n == 0 && count == 0 && !bad_control) return Received::kEnd;
  if ((message.msg_flags & MSG_TRUNC) != 0 || bad_control || count > fds.size()) return Received::kBad;
  for (std::size_t i = 0; i < count; ++i) fds[i] = std::move(taken[i]);
  fd_count = count;
  length = static_cast<std::size_t>(n);
  return Received::kMessage;
}

}  // namespace softdat::transport::shm
