// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The connection fuzzer's input format, shared with the seed capture (capture/), which writes
// captured peer bytes behind the flags that rebuild the world they were captured against:
//
//   byte 0   flags (below)
//   byte 1   what our side does meanwhile (below)
//   byte 2   how the peer's bytes are cut: 0 all at once, 1..127 that many bytes per write,
//            128..255 (n - 127) * 512 bytes per write; progress runs between writes
//   rest     the peer's bytes: after the MPA Request (passive: the harness sent a valid one,
//            unless the bytes start with one of their own), or from the MPA Reply on (active)
#pragma once

#include <cstddef>
#include <cstdint>

#include "testing/fuzz/connection_world.h"

namespace softdat::fuzz::input {

inline constexpr std::uint8_t kActive = 0x01;     // we connect; else we accept
inline constexpr std::uint8_t kCrcOff = 0x02;     // the IA's crc=off (and the Request's C bit clear)
inline constexpr std::uint8_t kRawCrc = 0x04;     // leave CRC fields alone (else the harness fixes them)
inline constexpr std::uint8_t kSrq = 0x08;        // receives come from an SRQ
inline constexpr std::uint8_t kOneBuffer = 0x10;  // 1 receive buffer at first (else 4)
inline constexpr std::uint8_t kPostOps = 0x20;    // we post a Send, an RDMA Write and an RDMA Read
inline constexpr std::uint8_t kBindRmr = 0x40;    // we bind a read-only RMR once established
inline constexpr std::uint8_t kNoFin = 0x80;      // no FIN after the bytes

// Byte 1.
inline constexpr std::uint8_t kDisconnectAfter = 0x01;  // we disconnect gracefully once all is written
inline constexpr std::uint8_t kAbortHalfway = 0x02;     // we disconnect abruptly halfway through
inline constexpr std::uint8_t kNoDrain = 0x04;          // nobody reads what our side sends
inline constexpr std::uint8_t kTwoOfEach = 0x08;        // kPostOps posts each operation twice
inline constexpr std::uint8_t kExtensions = 0x10;       // we post the DAT IB extensions too (WorldConfig)
inline constexpr std::size_t kHeaderSize = 3;
// kPostOps: what we post (a Read Response in the input must match the Read's size).
inline constexpr std::uint32_t kSendBytes = 48;
inline constexpr std::uint32_t kWriteBytes = 200;
inline constexpr std::uint32_t kReadBytes = 100;

inline WorldConfig ConfigOf(std::uint8_t flags, std::uint8_t actions) {
  WorldConfig config;
  config.active = (flags & kActive) != 0;
  config.crc = (flags & kCrcOff) == 0;
  config.srq = (flags & kSrq) != 0;
  config.buffers = (flags & kOneBuffer) != 0 ? 1 : 4;
  if ((flags & kPostOps) != 0) {
    config.sends = 1;
    config.send_bytes = kSendBytes;
    config.write_bytes = kWriteBytes;
    config.read_bytes = kReadBytes;
    if ((actions & kTwoOfEach) != 0) config.sends = config.writes = config.reads = 2;
  }
  config.bind_rmr = (flags & kBindRmr) != 0;
  config.extensions = (actions & kExtensions) != 0;
  return config;
}

// Bytes per write for cut byte `cut` and `total` bytes (0: all at once).
inline std::size_t ChunkOf(std::uint8_t cut, std::size_t total) {
  if (cut == 0) return total;
  return cut < 128 ? cut : (cut - 127u) * 512u;
}

}  // namespace softdat::fuzz::input
