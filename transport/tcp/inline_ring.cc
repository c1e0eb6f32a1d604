// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// InlineRing: contiguous FIFO allocation with a skipped tail at the wrap, in a pooled block.
#include "transport/tcp/inline_ring.h"

#include <cassert>

#include "base/log.h"

namespace softdat::transport::tcp {

std::uint8_t* InlineRing::Allocate(std::size_t length, std::uint32_t& charged) {
  const std::size_t capacity = pool_.block_size();
  if (length == 0 || length > kMaxAllocation || length > capacity) return nullptr;
  if (used_ == 0) head_ = 0;  // empty: start at the front, so nothing is skipped
  if (bytes_ == nullptr && (bytes_ = pool_.Acquire()) == nullptr) return nullptr;
  const std::size_t tail_room = capacity - head_;
  // The free space is [head_, head_ + capacity - used_) modulo capacity.
  const std::size_t skip = tail_room < length ? tail_room : 0;
  if (used_ + skip + length > capacity) return nullptr;
  if (skip != 0) head_ = 0;
  std::uint8_t* at = bytes_ + head_;
  head_ += length;  // at most capacity: the tail was skipped when too short
  if (head_ == capacity) head_ = 0;
  charged = static_cast<std::uint32_t>(skip + length);
  used_ += charged;
  return at;
}

void InlineRing::Release(std::uint32_t charged) {
  if (charged > used_) {
    // More handed back than was charged: the connection's accounting is wrong, and clamping would
    // hide it (and hand the block back while copies in it are still queued). Debug builds stop.
    SOFTDAT_LOG(kError, "internal error: inline ring: %u bytes released, %zu in use", charged, used_);
    assert(false && "InlineRing::Release: more released than charged");
    charged = static_cast<std::uint32_t>(used_);
  }
  used_ -= charged;
  if (used_ == 0 && bytes_ != nullptr) {
    pool_.Release(bytes_);
    bytes_ = nullptr;
  }
}

}  // namespace softdat::transport::tcp
