// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The self-checking message every fault and soak workload sends and writes: a fixed header (who
// wrote it, its sequence number, its length, the CRC-32 of its body) and a body that is a
// deterministic function of (stream, sequence). A receiver can tell an intact message from a
// corrupt, truncated or misplaced one without knowing what was sent. The CRC is the IEEE one,
// not MPA's CRC32c, so a fault in the transport's own checksum path cannot hide behind it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace softdat::testing {

struct MessageHeader {
  std::uint32_t magic = 0;
  std::uint32_t stream = 0;    // the writer's id for this flow
  std::uint64_t sequence = 0;  // from 1 within the stream
  std::uint32_t length = 0;    // of the whole message, header included
  std::uint32_t body_crc = 0;  // CRC-32 (IEEE, as gzip) of the body
  std::uint64_t extra = 0;     // the workload's own field (an acknowledgement, say); not checked
};
static_assert(sizeof(MessageHeader) == 32);

inline constexpr std::uint32_t kMessageMagic = 0x534C4447;  // "SLDG"
inline constexpr std::size_t kMinMessage = sizeof(MessageHeader);

// Writes a whole message into `out` (at least kMinMessage bytes).
void FillMessage(std::span<std::uint8_t> out, std::uint32_t stream, std::uint64_t sequence,
                 std::uint64_t extra = 0);

enum class MessageCheck : std::uint8_t {
  kOk,
  kShort,       // fewer bytes than a header, or than the header's length
  kBadMagic,
  kBadLength,   // the header's length disagrees with what was delivered
  kBadCrc,      // the body is not what its header says
  kBadPattern,  // the CRC matches but the body is not the one (stream, sequence) makes
};

// Checks `in`, of which `delivered` bytes are what the transport reported (the completion's
// transferred length); fills `header` when the header could be read.
MessageCheck CheckMessage(std::span<const std::uint8_t> in, std::size_t delivered, MessageHeader& header);

const char* Describe(MessageCheck check);

}  // namespace softdat::testing
