// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Payload of small Sends and RDMA Writes, copied when they are posted. An RNIC reads a posted
// buffer within microseconds; this transport frames it whenever the progress thread gets to the
// connection, which under load can be long after the post. Consumers that reuse a small source
// buffer before its (often unsignalled) completion — stock dtest does — would then send the new
// bytes. Copying up to kMaxInline bytes at post time, like an RNIC's inline data, closes that
// window for small messages; larger ones are still read from registered memory at framing time.
//
// A FIFO byte ring: space is taken in post order and given back in the same order once the
// message's bytes are on the socket. Its memory is a block of the transport's pool, held only
// while some copy is not yet sent: an idle connection holds none. Not thread-safe; the
// connection's post mutex guards it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/tcp/block_pool.h"

namespace softdat::transport::tcp {

class InlineRing {
 public:
  static constexpr std::size_t kMaxInline = 4096;
  // The most one allocation takes: a kMaxInline payload framed whole (header, pad and CRC).
  static constexpr std::size_t kMaxAllocation = kMaxInline + 64;
  // Sixteen full-size inline payloads (fifteen 4 KiB Sends framed whole): more than a consumer
  // usually has unsent at once; when the ring is full a small message is simply read at framing
  // time like a large one.
  static constexpr std::size_t kBlockSize = 16 * kMaxInline;

  // The ring is one block of `pool` (its block_size() is the capacity).
  explicit InlineRing(BlockPool& pool) : pool_(pool) {}
  ~InlineRing() { pool_.Release(bytes_); }
  InlineRing(const InlineRing&) = delete;
  InlineRing& operator=(const InlineRing&) = delete;

  // Contiguous room for `length` (1..kMaxAllocation) bytes, or nullptr when the ring is too full (or
  // no block could be had).
  // `charged` is what to hand back to Release: the length plus any tail skipped to stay
  // contiguous.
  std::uint8_t* Allocate(std::size_t length, std::uint32_t& charged);
  // Gives back the oldest allocation (allocations are released in the order they were made);
  // the block goes back to the pool once nothing is allocated.
  void Release(std::uint32_t charged);

  std::size_t used() const { return used_; }
  std::size_t capacity() const { return pool_.block_size(); }
  bool holds_block() const { return bytes_ != nullptr; }

 private:
  BlockPool& pool_;
  std::uint8_t* bytes_ = nullptr;  // the pool's block while used_ > 0
  std::size_t head_ = 0;  // next free byte
  std::size_t used_ = 0;  // bytes allocated, skipped tails included
};

}  // namespace softdat::transport::tcp
