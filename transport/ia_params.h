// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The IA parameter string of a dat.conf line, parsed. It picks the transport and names its
// device: "tcp <IPv4 address or interface name>" or "verbs <device> <port>", followed by
// optional key=value words:
//
//   progress=thread|poll   who drives the transport: a progress thread per IA (default), or the
//                          consumer's dat_evd_wait/dat_evd_dequeue calls (busy-poll)
//   rnr_timeout_ms=N       how long a message may wait for a receive buffer before the connection
//                          is broken; 0 (default) waits forever, like rnr_retry 7
//   crc=on|off             tcp: whether to ask for MPA CRC32c (default on)
//   timeout_ms=N           tcp: how long the peer or the path may leave our data unacknowledged,
//                          or its receive window shut, before the connection breaks, as an
//                          RNIC's retry timeout breaks a QP (TCP_USER_TIMEOUT, with keepalive
//                          probes so that an idle connection notices a dead peer too); 0
//                          (default): the kernel's own limits (about 15 minutes of
//                          retransmissions; an idle connection is never probed)
//   spin_us=N              with a progress thread: how long a dat_evd_wait spins on a
//                          transport that moves nothing before it sleeps (default 200; 0
//                          sleeps at once)
//   coalesce_us=N          tcp: how long the small Sends of a send-only stream may wait to go
//                          out together in one write (default 16; 0 writes every Work at once)
//   congestion=auto|system|NAME
//                          tcp: the TCP congestion control of each connection. auto (default):
//                          Reno between two addresses of this host (loopback, where a
//                          model-based one such as BBR only holds a stream back), the system's
//                          (net.ipv4.tcp_congestion_control) for the others; system: the
//                          system's always; NAME (reno, cubic, bbr, ...): that one on every
//                          connection, or the system's where the kernel refuses it (a warning)
//
// The environment variables SOFTDAT_PROGRESS, SOFTDAT_RNR_TIMEOUT_MS, SOFTDAT_MPA_CRC,
// SOFTDAT_SPIN_US, SOFTDAT_TIMEOUT_MS, SOFTDAT_COALESCE_US and SOFTDAT_TCP_CONGESTION set the
// defaults; a key=value word in dat.conf wins over them.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace softdat {

enum class TransportKind : std::uint8_t { kTcp, kVerbs };

enum class ProgressMode : std::uint8_t { kThread, kPoll };

struct IaOptions {
  ProgressMode progress = ProgressMode::kThread;
  std::uint32_t rnr_timeout_ms = 0;  // 0: wait forever
  bool mpa_crc = true;
  std::uint32_t spin_us = 200;  // progress=thread: a waiter's spin before it sleeps
  std::uint32_t timeout_ms = 0;  // tcp: TCP_USER_TIMEOUT and keepalive; 0: the kernel's limits
  std::uint32_t coalesce_us = 16;  // tcp: a send-only stream's coalescing window; 0: none
  std::string congestion = "auto";  // tcp: auto, system, or an algorithm's name (see above)
};

struct IaParams {
  TransportKind kind = TransportKind::kTcp;
  std::string address;  // tcp: the IPv4 literal or interface name as written
  std::string device;   // verbs: the rdma-core device name (rxe0, siw0, mlx5_0, ...)
  std::uint8_t port = 0;  // verbs: the device port, 1-based
  IaOptions options;
};

// Parses `text` into `out`, starting from the defaults the environment sets (see above). On
// failure returns kInvalidParameter and puts a one-line reason into `why` (what was expected and
// what was found); `out` is then unchanged.
Status ParseIaParams(std::string_view text, IaParams& out, std::string& why);

// Resolves a tcp IA address: an IPv4 literal, or the first IPv4 address of an interface.
Status ResolveIpv4(const std::string& address_or_interface, sockaddr_in& out, std::string& why);

}  // namespace softdat
