// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Which TCP congestion control a connection runs: the IA's congestion= option (transport/ia_params.h)
// applied to one connected socket.
//
// On a connection between two addresses of this host (loopback) there is no network queue for a
// congestion control to protect, and a model-based one only holds the stream back: with BBR, the
// default of some hosts, a busy 1 MiB Send stream over loopback ran 20-27% slower than with Reno on
// the project's VM (its window of about two bandwidth-delay products, 20 segments at a 25 us round
// trip, and its pacing leave both ends waiting; docs/PERFORMANCE.md, "Congestion control"). So
// "auto" gives such connections Reno, which every Linux allows unprivileged, and leaves the others
// to the administrator's choice (net.ipv4.tcp_congestion_control).
#pragma once

#include <netinet/in.h>

#include <string>

namespace softdat::transport::tcp {

// What "auto" gives a connection whose two ends are on this host.
inline constexpr const char* kLoopbackCongestion = "reno";

// True when both addresses are this host's: the peer is in 127.0.0.0/8, or is our own address.
bool SameHost(const sockaddr_in& local, const sockaddr_in& remote);

// The algorithm `mode` asks for on a connection from `local` to `remote`: "auto" names
// kLoopbackCongestion between two addresses of this host and nothing otherwise, "system" nothing,
// any other word itself (`mode`'s own characters). Nothing (nullptr): the socket keeps the
// system's.
const char* CongestionFor(const std::string& mode, const sockaddr_in& local, const sockaddr_in& remote);

// Sets `algorithm` on connected socket `fd`; false (errno set) when the kernel refuses it, when the
// algorithm is unknown or not allowed to this user (net.ipv4.tcp_allowed_congestion_control).
bool SetCongestion(int fd, const char* algorithm);

// The algorithm socket `fd` runs ("?" when the kernel will not say).
std::string CongestionOf(int fd);

}  // namespace softdat::transport::tcp
