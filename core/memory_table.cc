// MemoryTable: slot allocation on the control path, lock-free lookup on the data path.
#include "core/memory_table.h"

namespace softdat::core {

MemoryTable::MemoryTable(std::uint32_t capacity)
    : capacity_(capacity),
      slots_(new std::atomic<Lmr*>[capacity]),
      generations_(new std::uint8_t[capacity]()) {
  free_.reserve(capacity);
  for (std::uint32_t i = capacity; i > 0; --i) {
    slots_[i - 1].store(nullptr, std::memory_order_relaxed);
    free_.push_back(i - 1);
  }
}

Status MemoryTable::Reserve(std::uint32_t& key) {
  std::lock_guard lock(mutex_);
  if (free_.empty()) return Status(Code::kInsufficientResources, Detail::kMemoryRegion);
  const std::uint32_t slot = free_.back();
  free_.pop_back();
  // Generation 0 is never used, so key 0 (a zeroed triplet) never names a region.
  std::uint8_t generation = static_cast<std::uint8_t>(generations_[slot] + 1);
  if (generation == 0) generation = 1;
  generations_[slot] = generation;
  key = slot << 8 | generation;
  return Status::Ok();
}

void MemoryTable::Publish(std::uint32_t key, Lmr* lmr) {
  slots_[key >> 8].store(lmr, std::memory_order_release);
}

void MemoryTable::Release(std::uint32_t key) {
  const std::uint32_t slot = key >> 8;
  slots_[slot].store(nullptr, std::memory_order_release);
  std::lock_guard lock(mutex_);
  free_.push_back(slot);
}

Lmr* MemoryTable::Find(std::uint32_t key) const {
  const std::uint32_t slot = key >> 8;
  if (slot >= capacity_) return nullptr;
  Lmr* lmr = slots_[slot].load(std::memory_order_acquire);
  if (lmr == nullptr || lmr->context() != key) return nullptr;
  return lmr;
}

}  // namespace softdat::core
