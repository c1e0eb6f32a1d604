// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// BlockPool: a free stack of same-sized blocks.
#include "transport/tcp/block_pool.h"

#include <algorithm>
#include <new>

#include "transport/tcp/inline_ring.h"
#include "transport/tcp/tcp_connection.h"
#include "transport/tcp/tx_batch.h"

#if defined(__SANITIZE_ADDRESS__)
#define SOFTDAT_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOFTDAT_POOL_ASAN 1
#endif
#endif
#ifdef SOFTDAT_POOL_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace softdat::transport::tcp {
namespace {
constexpr std::align_val_t kAlign{64};

// Under ASan a free block is poisoned, so a connection that touches a block after giving it back
// (which another connection may already be filling) is reported like a use after free.
void MarkFree(std::uint8_t* block, std::size_t size) {
#ifdef SOFTDAT_POOL_ASAN
  ASAN_POISON_MEMORY_REGION(block, size);
#else
  (void)block, (void)size;
#endif
}
void MarkInUse(std::uint8_t* block, std::size_t size) {
#ifdef SOFTDAT_POOL_ASAN
  ASAN_UNPOISON_MEMORY_REGION(block, size);
#else
  (void)block, (void)size;
#endif
}
}  // namespace

BlockPool::~BlockPool() {
  if (std::uint8_t* spare = spare_.load()) free_.push_back(spare);  // capacity >= allocated_
  for (std::uint8_t* block : free_) {
    MarkInUse(block, block_size_);
    ::operator delete[](block, kAlign);
  }
}

std::uint8_t* BlockPool::Acquire() noexcept {
  if (std::uint8_t* spare = spare_.exchange(nullptr, std::memory_order_acq_rel)) {
    MarkInUse(spare, block_size_);
    return spare;
  }
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      std::uint8_t* block = free_.back();
      free_.pop_back();
      MarkInUse(block, block_size_);
      return block;
    }
    try {
      // Room to give every block back without allocating, doubling so growth stays rare.
      if (free_.capacity() < allocated_ + 1) free_.reserve(std::max<std::size_t>(2 * free_.capacity(), 16));
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
    ++allocated_;
  }
  auto* block = static_cast<std::uint8_t*>(::operator new[](block_size_, kAlign, std::nothrow));
  if (block == nullptr) {
    std::lock_guard lock(mutex_);
    --allocated_;
  }
  return block;
}

void BlockPool::Release(std::uint8_t* block) noexcept {
  if (block == nullptr) return;
  MarkFree(block, block_size_);
  std::uint8_t* none = nullptr;
  if (spare_.compare_exchange_strong(none, block, std::memory_order_acq_rel)) return;
  std::lock_guard lock(mutex_);
  free_.push_back(block);
}

std::size_t BlockPool::allocated() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

std::size_t BlockPool::in_use() const {
  std::lock_guard lock(mutex_);
  return allocated_ - free_.size() - (spare_.load(std::memory_order_acquire) != nullptr ? 1 : 0);
}

ConnectionBuffers::ConnectionBuffers()
    : rx(Connection::kRxBlock),
      rx_held(kHeldBlock),
      frames(TxBatch::kFrameBlock),
      staging(TxBatch::kStagingSize),
      inline_copy(InlineRing::kBlockSize) {}

}  // namespace softdat::transport::tcp
