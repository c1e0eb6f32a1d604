// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Copying a posted Work's gather list into one contiguous place (an inline copy, a Send framed at
// post, a UD datagram): the one loop they all do; and back, contiguous bytes into a receive
// buffer's segments (a UD datagram).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "transport/work.h"

namespace softdat::transport::tcp {

// Copies every segment, in order, to `to`; returns the byte after the last one copied.
inline std::uint8_t* Gather(std::span<const Segment> segments, std::uint8_t* to) {
  for (const Segment& segment : segments) {
    if (segment.length == 0) continue;
    std::memcpy(to, reinterpret_cast<const void*>(segment.address), segment.length);
    to += segment.length;
  }
  return to;
}

// Copies `length` bytes from `from` into the segments in order, as far as they reach; returns how
// many were copied.
inline std::size_t Scatter(std::span<const Segment> segments, const std::uint8_t* from, std::size_t length) {
  std::size_t copied = 0;
  for (const Segment& segment : segments) {
    if (copied == length) break;
    const std::size_t n = std::min<std::size_t>(segment.length, length - copied);
    std::memcpy(reinterpret_cast<void*>(segment.address), from + copied, n);
    copied += n;
  }
  return copied;
}

}  // namespace softdat::transport::tcp
