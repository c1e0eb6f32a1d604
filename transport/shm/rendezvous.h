// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Where two softdat processes of one network namespace find each other: the passive side of a
// listener also listens on an abstract Unix socket named by its IA address and port; the active
// side dials it first and, when nobody answers (at once: ECONNREFUSED), uses TCP. Abstract
// sockets live in the network namespace, so two namespaces never meet here, and they vanish
// with their last descriptor. SOCK_SEQPACKET: each handshake message, doorbell and close notice
// is one message, and descriptors travel with the message they belong to (SCM_RIGHTS).
//
// After the handshake the socket stays open for the connection's life: it is the connection's
// descriptor in the poll set. Readable means a doorbell (the peer wants us to look at the rings),
// a close notice, or the end (EOF or reset: the peer ended or died).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"
#include "transport/shm/unique_fd.h"

namespace softdat::transport::shm {

// The abstract socket address of the listener at `address`:`port` ("\0softdat-shm-1:A.B.C.D:P").
struct RendezvousName {
  sockaddr_un address{};
  socklen_t length = 0;
};
RendezvousName NameFor(in_addr address, std::uint16_t port);

// Listens at the name of `address`:`port` (non-blocking, close-on-exec). kConnQualInUse when
// another socket holds the name (another process listening there, or squatting: the caller then
// serves that port over TCP only).
Status ListenRendezvous(in_addr address, std::uint16_t port, UniqueFd& fd);
// One connection waiting on a listening socket (non-blocking); invalid when none waits.
UniqueFd AcceptRendezvous(int listen_fd);

enum class Dial : std::uint8_t {
  kConnected,
  kNobody,  // nobody listens there in this namespace, or its queue is full: use TCP
  kFailed,  // out of descriptors or memory
};
// The active side's attempt; never blocks (a Unix connect completes or fails at once).
Dial DialRendezvous(in_addr address, std::uint16_t port, UniqueFd& fd);

// The peer's process and user, as the kernel recorded them at connect (SO_PEERCRED).
bool PeerCredentials(int fd, pid_t& pid, uid_t& uid);

inline constexpr std::size_t kMaxPassedFds = 3;

// Sends one message with `fds` attached (non-blocking, no SIGPIPE). False unless it went whole.
bool SendMessage(int fd, std::span<const std::uint8_t> bytes, std::span<const int> fds = {});

enum class Received : std::uint8_t {
  kMessage,
  kNothing,  // nothing waiting (EAGAIN)
  kEnd,      // EOF or reset: the peer closed or died
  kBad,      // longer than the buffer, or with more descriptors than allowed or other control data
};
// Receives one message into `buffer` (non-blocking) and at most `fds.size()` descriptors
// (close-on-exec), `fd_count` of them; a message with more is kBad and closes them all.
Received ReceiveMessage(int fd, std::span<std::uint8_t> buffer, std::size_t& length, std::span<UniqueFd> fds,
                        std::size_t& fd_count);

}  // namespace softdat::transport::shm
