// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Byte blocks of one size, shared by every connection of one transport. A connection takes a
// block only while it has bytes in flight (a partly received FPDU, a batch being written, inline
// copies not yet sent) and gives it back when that is done, so an idle connection holds none:
// 10,000 mostly idle connections cost blocks for the few that are busy, not half a MiB each.
//
// The pool grows to the peak number of blocks in use at once and keeps what steady traffic needs:
// after warm-up, Acquire and Release only move a pointer under a short lock, or, for the one
// spare block kept outside the lock, swap it with one atomic exchange. What a burst took beyond
// that goes back to the system as the burst ends (Release trims the free stack once it holds more
// than twice the blocks in use plus kKeepFree), so 10,000 connections that each held a receive
// block once do not pin 1.25 GiB for the transport's life. Large blocks are mapped and unmapped
// whole, so what is trimmed leaves the process's RSS at once. Any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "base/mutex.h"

namespace softdat::transport::tcp {

class BlockPool {
 public:
  explicit BlockPool(std::size_t block_size) : block_size_(block_size) {}
  // Frees every block; each must have been released.
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // A block of block_size() bytes, 64-byte aligned: a free one, or a new one when none is free.
  // Null only when memory is exhausted.
  std::uint8_t* Acquire() noexcept;
  // Gives back a block Acquire returned (null is ignored). Never allocates; frees what a burst
  // left beyond the trim bound (see above).
  void Release(std::uint8_t* block) noexcept;

  // Free blocks kept whatever the use: a busy connection's take-and-give-back never trims.
  static constexpr std::size_t kKeepFree = 16;
  // Blocks this large are mapped (mmap) rather than taken from the heap.
  static constexpr std::size_t kMapAtLeast = 64 * 1024;

  std::size_t block_size() const { return block_size_; }
  // Blocks made so far (in use or free), and those in use now.
  std::size_t allocated() const;
  std::size_t in_use() const;

 private:
  std::uint8_t* NewBlock() const noexcept;
  void DeleteBlock(std::uint8_t* block) const noexcept;

  const std::size_t block_size_;
  // One free block outside the lock. A busy connection takes and gives back a block per message
  // (its receive block around each read, its inline ring around each small Send): one atomic
  // exchange each instead of a lock pair (docs/PERFORMANCE.md, "Small messages").
  std::atomic<std::uint8_t*> spare_{nullptr};
  mutable softdat::Mutex mutex_;
  std::vector<std::uint8_t*> free_;  // capacity >= allocated_, so Release never allocates
  std::size_t allocated_ = 0;
};

}  // namespace softdat::transport::tcp
