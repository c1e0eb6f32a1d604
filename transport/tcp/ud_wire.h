// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The UDP datagram format of softdat-tcp's unreliable datagram endpoints (the DAT IB extension's
// DAT_IB_SERVICE_TYPE_UD): there is no iWARP datagram standard, so this is softdat's own, small
// and documented in docs/WIRE.md ("Unreliable datagrams"). Every UDP payload is one message:
//
//   0   magic "SDUD"
//   4   version (1)
//   5   type (Type)
//   6   length of what follows the header, before the CRC (big-endian 16 bits)
//   8   destination endpoint key (big-endian 32 bits; 0 in a Resolve Request, to a listener)
//   12  source endpoint key
//   16  request identifier (big-endian 64 bits; Resolve messages; 0 in data)
//   24  the payload: a datagram's bytes, or a Resolve message's private data
//   ..  CRC32c of everything before it (little-endian, as MPA's)
//
// An endpoint is its IA address, its UDP port (what DAT reports as its QPN) and its key, a random
// nonzero number it chose: a datagram whose destination key is not the receiving endpoint's is
// dropped (a port reused by a later endpoint never receives its predecessor's traffic).
// Encoding and decoding only, on byte arrays, with every field checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace softdat::transport::tcp::ud {

enum class Type : std::uint8_t {
  kData = 1,            // a datagram, to an endpoint
  kResolveRequest = 2,  // an endpoint asks a listener (a PSP's port) for a peer
  kResolveReply = 3,    // the accepting endpoint answers, from its own port
  kResolveReject = 4,   // the listener's consumer rejected it (private data: theirs)
  kResolveRefused = 5,  // nobody decided (the listener went away, or the request was dropped)
};

inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kHeaderSize = 24;
inline constexpr std::size_t kCrcSize = 4;
// The largest datagram payload (Capabilities::max_datagram, DAT_IB's UD MTU): an InfiniBand 4 KiB
// MTU. More than one Ethernet frame: IP fragments and reassembles it.
inline constexpr std::size_t kMaxPayload = 4096;
inline constexpr std::size_t kMaxMessage = kHeaderSize + kMaxPayload + kCrcSize;
// What a UD receive completion carries ahead of the datagram, as on InfiniBand: a Global Route
// Header's 40 bytes (WriteGrh).
inline constexpr std::size_t kGrhSize = 40;

struct Header {
  Type type = Type::kData;
  std::uint16_t length = 0;  // payload bytes
  std::uint32_t destination_key = 0;
  std::uint32_t source_key = 0;
  std::uint64_t request = 0;
};

// Why Decode refused a message.
enum class DecodeError : std::uint8_t { kNone, kShort, kMagic, kVersion, kType, kLength, kCrc };
const char* DescribeDecodeError(DecodeError error);

// Writes the header into `bytes` (kHeaderSize of them); the caller places header.length payload
// bytes after it and calls Seal.
void EncodeHeader(const Header& header, std::uint8_t* bytes);
// Writes the CRC of the first `size` bytes after them; returns the message's whole size.
std::size_t Seal(std::uint8_t* bytes, std::size_t size);
// Checks and decodes a whole UDP payload: `payload` then names the bytes after the header.
DecodeError Decode(std::span<const std::uint8_t> message, Header& out, std::span<const std::uint8_t>& payload);

// The 40 bytes a UD receive buffer starts with: an InfiniBand GRH (IP version 6, payload length
// `length`, next header 0x1B, hop limit 64) whose source and destination GIDs are the IPv4-mapped
// IPv6 addresses of `source` and `destination` (network order): the form of a RoCE device's GIDs
// for IPv4 addresses.
void WriteGrh(std::uint32_t source, std::uint32_t destination, std::uint16_t length, std::uint8_t* out);

}  // namespace softdat::transport::tcp::ud
