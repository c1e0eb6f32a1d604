// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Unreliable datagrams (the DAT IB extension's DAT_IB_SERVICE_TYPE_UD): the address handle a UD
// Send names its destination by, as a transport makes it. A datagram endpoint is a
// transport::Endpoint created with EndpointConfig::datagram; it finds its peers with Resolve
// (the InfiniBand SIDR exchange: a request to a listener's port, answered by the endpoint that
// accepts it), and each answer, on either side, carries an AddressHandle of the other endpoint.
#pragma once

#include <cstdint>

namespace softdat::transport {

// Where a datagram goes: a peer datagram endpoint. Immutable; whoever received it owns it (core
// keeps it until the consumer frees it with dat_ib_ud_ah_free, or its EP goes).
class AddressHandle {
 public:
  virtual ~AddressHandle() = default;
  // The peer's IA address (IPv4, network order) and its endpoint number: what DAT reports as the
  // handle's ia_addr and qpn (tcp: the endpoint's UDP port; verbs: its QP number).
  virtual std::uint32_t address() const = 0;
  virtual std::uint16_t port() const = 0;
  virtual std::uint32_t qpn() const = 0;
};

}  // namespace softdat::transport
