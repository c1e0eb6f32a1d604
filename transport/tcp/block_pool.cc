// BlockPool: a free stack of same-sized blocks.
#include "transport/tcp/block_pool.h"

#include <algorithm>
#include <new>

#include "transport/tcp/inline_ring.h"
#include "transport/tcp/tcp_connection.h"
#include "transport/tcp/tx_batch.h"

namespace softdat::transport::tcp {
namespace {
constexpr std::align_val_t kAlign{64};
}  // namespace

BlockPool::~BlockPool() {
  for (std::uint8_t* block : free_) ::operator delete[](block, kAlign);
}

std::uint8_t* BlockPool::Acquire() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      std::uint8_t* block = free_.back();
      free_.pop_back();
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
  std::lock_guard lock(mutex_);
  free_.push_back(block);
}

std::size_t BlockPool::allocated() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

std::size_t BlockPool::in_use() const {
  std::lock_guard lock(mutex_);
  return allocated_ - free_.size();
}

ConnectionBuffers::ConnectionBuffers()
    : rx(Connection::kRxBlock),
      frames(TxBatch::kFrameBlock),
      staging(TxBatch::kStagingSize),
      inline_copy(InlineRing::kBlockSize) {}

}  // namespace softdat::transport::tcp
