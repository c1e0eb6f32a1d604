// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// iwarp-dump's capture reader: the TCP payload of a pcap or pcapng file (read with Debian's
// libpcap), put back in order per connection and direction, each byte range with the time of the
// packet that carried it. IPv4 and IPv6 over Ethernet, Linux cooked (SLL, SLL2), raw IP and
// BSD loopback links. Retransmitted bytes count once; a hole in the sequence space ends what can
// be decoded of that direction.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace softdat::tools::iwarp_dump {

// One direction of one TCP connection.
struct Direction {
  std::string from, to;  // "address:port"
  std::vector<std::uint8_t> bytes;  // the stream from its first byte seen (after SYN when captured)
  // Stream offset where each packet's new bytes begin, and its capture time (seconds).
  std::vector<std::pair<std::uint64_t, double>> times;
  bool gap = false;             // bytes missing at `bytes.size()`: nothing after it is known
  bool saw_syn = false;
  // Time of the packet that carried stream byte `offset`.
  double TimeAt(std::uint64_t offset) const;
};

struct Connection {
  Direction forward;  // the direction of the first packet seen (the SYN's, when captured)
  Direction backward;
};

// Reads `path`; false with `error` set when libpcap cannot. Connections in order of first packet.
bool ReadCapture(const std::string& path, std::vector<Connection>& out, std::string& error);

// True if the file starts like a pcap or pcapng file (else it is taken as a raw byte stream).
bool LooksLikeCapture(const std::string& path);

}  // namespace softdat::tools::iwarp_dump
