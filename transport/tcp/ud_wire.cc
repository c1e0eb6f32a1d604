// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The UD datagram format (ud_wire.h): encoding, sealing and the checked decoder.
#include "transport/tcp/ud_wire.h"

#include <cstring>

#include "transport/tcp/crc32c.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp::ud {
namespace {

constexpr std::uint8_t kMagic[4] = {'S', 'D', 'U', 'D'};

}  // namespace

const char* DescribeDecodeError(DecodeError error) {
  switch (error) {
    case DecodeError::kNone: return "none";
    case DecodeError::kShort: return "shorter than a header and CRC";
    case DecodeError::kMagic: return "not softdat's (bad magic)";
    case DecodeError::kVersion: return "an unknown version";
    case DecodeError::kType: return "an unknown type";
    case DecodeError::kLength: return "a length that is not the message's";
    case DecodeError::kCrc: return "a CRC mismatch";
  }
  return "?";
}

void EncodeHeader(const Header& header, std::uint8_t* bytes) {
  std::memcpy(bytes, kMagic, sizeof kMagic);
  bytes[4] = kVersion;
  bytes[5] = static_cast<std::uint8_t>(header.type);
  wire::StoreBe16(bytes + 6, header.length);
  wire::StoreBe32(bytes + 8, header.destination_key);
  wire::StoreBe32(bytes + 12, header.source_key);
  wire::StoreBe64(bytes + 16, header.request);
}

std::size_t Seal(std::uint8_t* bytes, std::size_t size) {
  wire::StoreLe32(bytes + size, Crc32c(bytes, size));
  return size + kCrcSize;
}

DecodeError Decode(std::span<const std::uint8_t> message, Header& out, std::span<const std::uint8_t>& payload) {
  if (message.size() < kHeaderSize + kCrcSize) return DecodeError::kShort;
  const std::uint8_t* at = message.data();
  if (std::memcmp(at, kMagic, sizeof kMagic) != 0) return DecodeError::kMagic;
  if (at[4] != kVersion) return DecodeError::kVersion;
  if (at[5] < static_cast<std::uint8_t>(Type::kData) || at[5] > static_cast<std::uint8_t>(Type::kResolveRefused))
    return DecodeError::kType;
  const std::uint16_t length = wire::LoadBe16(at + 6);
  if (length > kMaxPayload || message.size() != kHeaderSize + length + kCrcSize) return DecodeError::kLength;
  const std::size_t covered = kHeaderSize + length;
  if (Crc32c(at, covered) != wire::LoadLe32(at + covered)) return DecodeError::kCrc;
  out.type = static_cast<Type>(at[5]);
  out.length = length;
  out.destination_key = wire::LoadBe32(at + 8);
  out.source_key = wire::LoadBe32(at + 12);
  out.request = wire::LoadBe64(at + 16);
  payload = message.subspan(kHeaderSize, length);
  return DecodeError::kNone;
}

void WriteGrh(std::uint32_t source, std::uint32_t destination, std::uint16_t length, std::uint8_t* out) {
  std::memset(out, 0, kGrhSize);
  out[0] = 0x60;  // IP version 6, traffic class and flow label 0
  wire::StoreBe16(out + 4, length);
  out[6] = 0x1B;  // next header: the InfiniBand transport
  out[7] = 64;    // hop limit
  // GIDs: ::ffff:a.b.c.d (bytes 8-23 the source, 24-39 the destination).
  out[18] = out[19] = 0xFF;
  std::memcpy(out + 20, &source, 4);
  out[34] = out[35] = 0xFF;
  std::memcpy(out + 36, &destination, 4);
}

}  // namespace softdat::transport::tcp::ud
