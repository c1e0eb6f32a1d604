// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Copying a posted Work's gather list into one contiguous place (an inline copy, a Send framed at
// post): the one loop both do.
#pragma once

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

}  // namespace softdat::transport::tcp
