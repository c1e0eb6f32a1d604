// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What the two ends of datperf tell each other, in the connection's private data: the client's
// request (test, sizes, window, how to reap) and the server's reply (where RDMA may go). Fixed
// little-endian layouts small enough for every DAT provider's private data (IB's 56 bytes less
// headers); a magic word tells a datperf peer from anything else.
#pragma once

#include <cstdint>
#include <cstring>

namespace softdat::datperf {

inline constexpr std::uint32_t kMagic = 0x46525044;  // "DPRF"
inline constexpr std::uint16_t kVersion = 1;

struct Request {
  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  std::uint8_t test = 0;     // Test
  std::uint8_t reap = 0;     // Reap
  std::uint8_t srq = 0;      // the server's EPs of this session share one SRQ
  std::uint8_t verify = 0;   // check every byte
  std::uint8_t last = 0;     // the client's last run: a --once server exits after it
  std::uint8_t one_buffer = 0;  // every message in one buffer on each side (not lat, not SRQ)
  std::uint32_t session = 0;  // the client's session number: its connections share an SRQ
  std::uint32_t clients = 0;  // connections in the session
  std::uint32_t window = 0;
  std::uint32_t srq_buffers = 0;
  std::uint8_t notify = 0;    // Notify (write_lat)
  std::uint8_t spin = 0;      // Spin (write_lat)
  std::uint16_t reserved = 0;
  std::uint64_t size = 0;
  std::uint64_t iters = 0;    // messages on this connection
};
static_assert(sizeof(Request) == 48);

struct Reply {
  std::uint32_t magic = kMagic;
  std::uint32_t rmr_context = 0;  // write/read/write_lat: the server's region (write_lat: the
                                  // client's, in its first Send)
  std::uint64_t address = 0;
  std::uint64_t length = 0;
};
static_assert(sizeof(Reply) == 24);

// write_lat: the last byte of each Write carries the round trip's tag, 1 to 254, so the spin on
// memory sees every change; kEndTag says the client stopped early (--duration).
inline std::uint8_t RoundTag(std::uint64_t round) { return static_cast<std::uint8_t>(round % 254 + 1); }
inline constexpr std::uint8_t kEndTag = 255;

// The server's acknowledgement of a finished stream: how many bytes failed to verify.
struct Ack {
  std::uint64_t messages = 0;
  std::uint64_t bad_bytes = 0;
};

// Payload pattern: byte i of message m. Cheap, and different for every message and offset.
inline std::uint8_t PatternByte(std::uint64_t message, std::uint64_t i) {
  return static_cast<std::uint8_t>(message * 131 + i * 7 + (i >> 9));
}

inline void FillPattern(std::uint8_t* data, std::uint64_t size, std::uint64_t message) {
  for (std::uint64_t i = 0; i < size; ++i) data[i] = PatternByte(message, i);
}

// Bytes of `data` that differ from message `message`'s pattern: every byte with `full`, else
// the first, the middle and the last 8.
inline std::uint64_t CountBad(const std::uint8_t* data, std::uint64_t size, std::uint64_t message, bool full) {
  std::uint64_t bad = 0;
  auto check = [&](std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t i = from; i < to && i < size; ++i) bad += data[i] != PatternByte(message, i);
  };
  if (full || size <= 24) {
    check(0, size);
  } else {
    check(0, 8);
    check(size / 2, size / 2 + 8);
    check(size - 8, size);
  }
  return bad;
}

}  // namespace softdat::datperf
