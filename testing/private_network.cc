// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EnterPrivateNetwork: unshare(CLONE_NEWNET), then lo up through SIOCSIFFLAGS.
#include "testing/private_network.h"

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace softdat::testing {

PrivateNetwork EnterPrivateNetwork(int* error) {
  const auto fail = [&](PrivateNetwork why) {
    if (error != nullptr) *error = errno;
    return why;
  };
  if (::unshare(CLONE_NEWNET) != 0) return fail(PrivateNetwork::kNoNamespace);
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(PrivateNetwork::kNoLoopback);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  bool up = ::ioctl(fd, SIOCGIFFLAGS, &request) == 0;
  if (up) {
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
    up = ::ioctl(fd, SIOCSIFFLAGS, &request) == 0;
  }
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return up ? PrivateNetwork::kEntered : fail(PrivateNetwork::kNoLoopback);
}

}  // namespace softdat::testing
