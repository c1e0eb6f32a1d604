// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What srq/ knows of a receive buffer: the segments core/ has already validated (LMR, PZ and
// local-write privilege are checked before a post reaches srq/) and the consumer's cookie. Plain
// data with no ownership: the pool copies segments in on Post and hands views out on Take.
#pragma once

#include <dat2/udat.h>

#include <cstdint>

#include "base/segment.h"

namespace softdat::srq {

// One validated scatter entry of a posted Recv buffer: the same type transports scatter into.
using RecvSegment = softdat::Segment;

// A view of a posted buffer, given to the endpoint that took it. `segments` points into the
// pool's segment storage and stays valid until the buffer's completion is reaped (the storage
// never moves, not even when the SRQ grows).
struct RecvBuffer {
  DAT_DTO_COOKIE cookie;
  std::uint32_t num_segments;
  const RecvSegment* segments;
  std::uint64_t capacity;  // sum of the segment lengths
  std::uint32_t slot;      // the pool's name for this buffer, for Reaped()
};

}  // namespace softdat::srq
