// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The IA parameter string of a dat.conf line, parsed. It picks the transport and names its
// device: "tcp <IPv4 address or interface name>" or "verbs <device> <port>", followed by
// optional key=value words, the IA options. IaOptionSpecs() is the one list of them: the
// parser, the environment defaults, the provider-specific attributes an IA reports, datinfo's
// -e listing and the documentation tests all read it, so none can leave one out.
//
// Each option's environment variable (SOFTDAT_PROGRESS, ...) sets its default; a key=value word
// in dat.conf wins over it.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace softdat {

enum class TransportKind : std::uint8_t { kTcp, kVerbs };

enum class ProgressMode : std::uint8_t { kThread, kPoll };

// tcp: whether a connection between two softdat IAs of this host and network namespace runs over
// shared memory (transport/shm) instead of TCP.
enum class ShmMode : std::uint8_t { kAuto, kOff };

struct IaOptions {
  ProgressMode progress = ProgressMode::kThread;
  std::uint32_t rnr_timeout_ms = 0;  // 0: wait forever
  bool mpa_crc = true;
  std::uint32_t spin_us = 200;  // progress=thread: a waiter's spin before it sleeps
  // progress=thread: how soon the progress thread takes the sockets back from consumers that
  // stopped polling without waiting, and how long it busy-polls after traffic before it sleeps.
  std::uint32_t handoff_us = 200;
  std::uint32_t thread_spin_us = 50;
  std::uint32_t timeout_ms = 0;  // tcp: TCP_USER_TIMEOUT and keepalive; 0: the kernel's limits
  std::uint32_t coalesce_us = 16;  // tcp: a send-only stream's coalescing window; 0: none
  std::string congestion = "auto";  // tcp: auto, system, or an algorithm's name (see above)
  ShmMode shm = ShmMode::kAuto;     // tcp: same-host peers over shared memory
};

struct IaParams {
  TransportKind kind = TransportKind::kTcp;
  std::string address;  // tcp: the IPv4 literal or interface name as written
  std::string device;   // verbs: the rdma-core device name (rxe0, siw0, mlx5_0, ...)
  std::uint8_t port = 0;  // verbs: the device port, 1-based
  IaOptions options;
};

// One IA option: its dat.conf key, the environment variable that sets its default (also the name
// of the provider-specific attribute that reports it in force), the values it takes, its default,
// which transports read it, and what it means.
struct IaOptionSpec {
  const char* key;         // "progress"
  const char* variable;    // "SOFTDAT_PROGRESS"
  const char* values;      // "thread|poll", "N" (milliseconds or microseconds, see meaning)
  const char* default_value;
  bool tcp_only;           // verbs IAs take it (the parser does not mind) but ignore it
  const char* meaning;     // one sentence for people: datinfo -e, the docs
  // Sets `options` from `value`; false with a reason in `why` (without saying where the value came
  // from: the caller knows).
  bool (*apply)(std::string_view value, IaOptions& options, std::string& why);
  // The value in force, as the option would be written.
  std::string (*show)(const IaOptions& options);
};

// Every IA option, in the order the docs list them.
std::span<const IaOptionSpec> IaOptionSpecs();

// Parses `text` into `out`, starting from the defaults the environment sets (see above). On
// failure returns kInvalidParameter and puts a one-line reason into `why` (what was expected and
// what was found); `out` is then unchanged.
Status ParseIaParams(std::string_view text, IaParams& out, std::string& why);

// Resolves a tcp IA address: an IPv4 literal, or the first IPv4 address of an interface. The
// address must be one of this host's (a socket can be bound to it): an IA on an address the host
// does not have would open and then fail at every listen and connect. kInvalidParameter with the
// reason (which addresses the host has) otherwise.
Status ResolveIpv4(const std::string& address_or_interface, sockaddr_in& out, std::string& why);

// Why an IA bound to `local` cannot reach `remote`, or "" when it may. A socket bound to a
// loopback address reaches this host's own addresses only (the kernel refuses the rest with
// EINVAL, which a consumer sees as DAT_CONNECTION_EVENT_UNREACHABLE): the text says so and names
// the IA of the interface that reaches `remote` (its subnet's, else every interface's), as
// tools/dev install and the Debian package name them: softdat-tcp-IF ("tcp IF").
std::string LoopbackCannotReach(const sockaddr_in& local, const sockaddr_in& remote);

}  // namespace softdat
