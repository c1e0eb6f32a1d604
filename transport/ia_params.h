// The IA parameter string of a dat.conf line, parsed. It picks the transport and names its
// device: "tcp <IPv4 address or interface name>" or "verbs <device> <port>".
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace softdat {

enum class TransportKind : std::uint8_t { kTcp, kVerbs, kFake };

struct IaParams {
  TransportKind kind = TransportKind::kTcp;
  std::string address;  // tcp: the IPv4 literal or interface name as written
  std::string device;   // verbs: the rdma-core device name (rxe0, siw0, mlx5_0, ...)
  std::uint8_t port = 0;  // verbs: the device port, 1-based
};

// Parses `text` into `out`. On failure returns kInvalidParameter and puts a one-line reason into
// `why` (what was expected and what was found); `out` is then unchanged.
Status ParseIaParams(std::string_view text, IaParams& out, std::string& why);

// Resolves a tcp IA address: an IPv4 literal, or the first IPv4 address of an interface.
Status ResolveIpv4(const std::string& address_or_interface, sockaddr_in& out, std::string& why);

}  // namespace softdat
