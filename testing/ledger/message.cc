// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Message fill and check.
#include "testing/ledger/message.h"

#include <isa-l/crc.h>

#include <cstring>

namespace softdat::testing {
namespace {

// xorshift64*: cheap, and different for every (stream, sequence).
std::uint64_t Seed(std::uint32_t stream, std::uint64_t sequence) {
  std::uint64_t x = (static_cast<std::uint64_t>(stream) << 32) ^ sequence ^ 0x9E3779B97F4A7C15ull;
  return x == 0 ? 1 : x;
}

void FillBody(std::uint8_t* body, std::size_t length, std::uint32_t stream, std::uint64_t sequence) {
  std::uint64_t x = Seed(stream, sequence);
  for (std::size_t at = 0; at < length; at += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const std::uint64_t word = x * 0x2545F4914F6CDD1Dull;
    std::memcpy(body + at, &word, length - at < 8 ? length - at : 8);
  }
}

// The CRC vouches for the body's integrity; its first bytes say whose body it is (a message
// written to the wrong place, or an old one, has a valid CRC of its own).
bool BodyMatches(const std::uint8_t* body, std::size_t length, std::uint32_t stream, std::uint64_t sequence) {
  std::uint8_t expected[64];
  const std::size_t prefix = length < sizeof expected ? length : sizeof expected;
  FillBody(expected, prefix, stream, sequence);
  return std::memcmp(expected, body, prefix) == 0;
}

}  // namespace

void FillMessage(std::span<std::uint8_t> out, std::uint32_t stream, std::uint64_t sequence, std::uint64_t extra) {
  MessageHeader header;
  header.magic = kMessageMagic;
  header.stream = stream;
  header.sequence = sequence;
  header.length = static_cast<std::uint32_t>(out.size());
  header.extra = extra;
  std::uint8_t* body = out.data() + sizeof header;
  const std::size_t body_length = out.size() - sizeof header;
  FillBody(body, body_length, stream, sequence);
  header.body_crc = crc32_gzip_refl(0, body, body_length);
  std::memcpy(out.data(), &header, sizeof header);
}

MessageCheck CheckMessage(std::span<const std::uint8_t> in, std::size_t delivered, MessageHeader& header) {
  if (delivered < sizeof header || in.size() < sizeof header) return MessageCheck::kShort;
  std::memcpy(&header, in.data(), sizeof header);
  if (header.magic != kMessageMagic) return MessageCheck::kBadMagic;
  if (header.length < sizeof header || header.length > in.size()) return MessageCheck::kBadLength;
  if (delivered < header.length) return MessageCheck::kShort;
  if (delivered != header.length) return MessageCheck::kBadLength;
  const std::uint8_t* body = in.data() + sizeof header;
  const std::size_t body_length = header.length - sizeof header;
  if (crc32_gzip_refl(0, body, body_length) != header.body_crc) return MessageCheck::kBadCrc;
  if (!BodyMatches(body, body_length, header.stream, header.sequence)) return MessageCheck::kBadPattern;
  return MessageCheck::kOk;
}

const char* Describe(MessageCheck check) {
  switch (check) {
    case MessageCheck::kOk: return "ok";
    case MessageCheck::kShort: return "short";
    case MessageCheck::kBadMagic: return "bad magic";
    case MessageCheck::kBadLength: return "bad length";
    case MessageCheck::kBadCrc: return "bad CRC";
    case MessageCheck::kBadPattern: return "body of another message";
  }
  return "?";
}

}  // namespace softdat::testing
