// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Copies between a list of the consumer's segments and a contiguous piece of ring, from a cursor
// that advances: how a Send's payload is gathered into records and scattered into its receive
// buffer. The caller bounds the bytes (a message never holds more than its segments do).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "base/segment.h"

namespace softdat::transport::shm {

struct SegmentCursor {
  std::uint32_t segment = 0;
  std::uint32_t offset = 0;
};

// Copies `length` bytes between the segments at `at` and `bytes` (into the segments when
// `into_segments`); advances `at`.
inline void CopyAtCursor(std::span<const Segment> segments, SegmentCursor& at, std::uint8_t* bytes, std::size_t length,
                         bool into_segments) {
  while (length > 0 && at.segment < segments.size()) {
    const Segment& s = segments[at.segment];
    const std::size_t n = std::min<std::size_t>(length, s.length - at.offset);
    auto* memory = reinterpret_cast<std::uint8_t*>(s.address) + at.offset;
    if (into_segments) {
      std::memcpy(memory, bytes, n);
    } else {
      std::memcpy(bytes, memory, n);
    }
    bytes += n;
    length -= n;
    at.offset += static_cast<std::uint32_t>(n);
    if (at.offset == s.length) {
      ++at.segment;
      at.offset = 0;
    }
  }
}

// Copies `length` bytes from the segments at `at` to `to`; advances `at`.
inline void Gather(std::span<const Segment> segments, SegmentCursor& at, std::uint8_t* to, std::size_t length) {
  CopyAtCursor(segments, at, to, length, false);
}

// Copies `length` bytes from `from` into the segments at `at`; advances `at`.
inline void Scatter(std::span<const Segment> segments, SegmentCursor& at, const std::uint8_t* from, std::size_t length) {
  CopyAtCursor(segments, at, const_cast<std::uint8_t*>(from), length, true);
}

}  // namespace softdat::transport::shm
