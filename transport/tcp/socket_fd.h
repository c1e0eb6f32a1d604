// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Descriptors the TCP transport opens are close-on-exec: a DAT consumer that starts another
// program (a launcher, a shell helper) must not hand it softdat's sockets, or a connection would
// outlive the consumer that owns it — killing the consumer would not break it.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>

namespace softdat::transport::tcp {

// A TCP socket, close-on-exec from its creation (no fork can catch it without the flag).
inline int OpenCloseOnExecSocket() { return ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); }

// For descriptors made by calls that cannot set it at creation (Asio's accept): set it at once.
inline void SetCloseOnExec(int fd) {
  if (fd >= 0) ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
}

}  // namespace softdat::transport::tcp
