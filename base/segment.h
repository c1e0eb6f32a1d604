// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A piece of the consumer's registered memory as every layer below dat/ passes it around: the
// fields of a DAT LMR triplet after core has checked them. srq/ stores posted receive buffers as
// these and transports scatter into and gather from them, so neither converts the other's type.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>

namespace softdat {

struct Segment {
  std::uint64_t address = 0;
  std::uint32_t length = 0;
  std::uint32_t key = 0;  // the lmr_context (the local key a device transport gives its NIC)
};

// Room on the stack for up to N segments, none of them initialized: a post fills only the ones
// it checked. `Segment segments[16]` zeroed all sixteen (384 bytes, a `rep stos`) on every
// dat_ep_post_recv and dat_srq_post_recv, which then used one. The bytes implicitly create the
// Segments a caller writes into them (they are an unsigned char array).
template <std::size_t N>
class SegmentRoom {
 public:
  std::span<Segment, N> span() { return std::span<Segment, N>(std::launder(reinterpret_cast<Segment*>(bytes_)), N); }

 private:
  alignas(Segment) unsigned char bytes_[N * sizeof(Segment)];
};

// Copies `length` bytes from `from` into `segments`, in order, from the first segment's start.
// The caller bounds `length` by the segments' total (what does not fit is not copied).
inline void CopyIntoSegments(std::span<const Segment> segments, const std::uint8_t* from, std::size_t length) {
  for (const Segment& s : segments) {
    if (length == 0) return;
    const std::size_t n = std::min<std::size_t>(length, s.length);
    if (n == 0) continue;  // an empty segment may have no address at all
    std::memcpy(reinterpret_cast<void*>(s.address), from, n);
    from += n;
    length -= n;
  }
}

}  // namespace softdat
