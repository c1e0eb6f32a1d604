// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// BlockPool: a free stack of same-sized blocks.
#include "transport/tcp/block_pool.h"

#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <new>


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
    DeleteBlock(block);
  }
}

std::uint8_t* BlockPool::NewBlock() const noexcept {
  if (block_size_ < kMapAtLeast) return static_cast<std::uint8_t*>(::operator new[](block_size_, kAlign, std::nothrow));
  void* block = ::mmap(nullptr, block_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return block == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(block);
}

void BlockPool::DeleteBlock(std::uint8_t* block) const noexcept {
  if (block_size_ < kMapAtLeast) {
    ::operator delete[](block, kAlign);
  } else {
    (void)::munmap(block, block_size_);
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
  std::uint8_t* block = NewBlock();
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
  // At most this many freed per Release: a burst's end is many Releases.
  std::array<std::uint8_t*, 64> surplus;
  std::size_t count = 0;
  {
    std::lock_guard lock(mutex_);
    free_.push_back(block);
    const std::size_t in_use = allocated_ - free_.size();  // the spare aside: close enough
    if (free_.size() > 2 * in_use + kKeepFree) {
      const std::size_t keep = in_use + kKeepFree;
      while (free_.size() > keep && count < surplus.size()) {
        surplus[count++] = free_.back();
        free_.pop_back();
        --allocated_;
      }
    }
  }
  if (count == 0) return;
  for (std::size_t i = 0; i < count; ++i) {
    MarkInUse(surplus[i], block_size_);
    DeleteBlock(surplus[i]);
  }
  // Heap blocks: the allocator keeps freed memory unless asked to give it back.
  if (block_size_ < kMapAtLeast) (void)::malloc_trim(0);
}

std::size_t BlockPool::allocated() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

std::size_t BlockPool::in_use() const {
  std::lock_guard lock(mutex_);
  return allocated_ - free_.size() - (spare_.load(std::memory_order_acquire) != nullptr ? 1 : 0);
}

}  // namespace softdat::transport::tcp
