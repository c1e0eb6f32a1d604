// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What a received message carries beyond its bytes under the DAT IB extensions, from the
// transport (transport::RecvInfo) through the receive source (srq::RecvNotes) to its completion:
// immediate data, and a datagram's source.
#pragma once

#include <cstdint>

namespace softdat {

// Every connection's MSN window keeps one per message in flight (srq/msn_window.h: 256 entries
// per connection, 10,000 connections in the scale test), so it is 12 bytes: an immediate (a
// connected EP's) and a datagram's source (a UD EP's) never come together and share storage.
struct ReceiveExtension {
  // An RDMA Write with immediate data: it took a receive buffer (as a Send does) but placed
  // nothing in it; the completion reports the immediate and the Write's length.
  bool immediate = false;
  // A datagram: who sent it (IPv4 address in network order, its UDP port where it has one, its
  // endpoint number), what a UD receive completion reports as its remote address.
  std::uint16_t source_port = 0;
  union {
    std::uint32_t immediate_data = 0;
    std::uint32_t source_address;
  };
  union {
    std::uint32_t written = 0;
    std::uint32_t source_qpn;
  };
};
static_assert(sizeof(ReceiveExtension) == 12);

}  // namespace softdat
