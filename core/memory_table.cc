// MemoryTable: slot allocation on the control path, lock-free lookup on the data path.
#include "core/memory_table.h"

namespace softdat::core {

MemoryTable::MemoryTable(std::uint32_t capacity)
    : capacity_(capacity),
      windows_(new MemoryWindow[capacity]),
      generations_(new std::uint8_t[capacity]()) {
  free_.reserve(capacity);
  for (std::uint32_t i = capacity; i > 0; --i) free_.push_back(i - 1);
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

void MemoryTable::Publish(const WindowView& view) {
  std::lock_guard lock(write_mutex_);
  windows_[view.key >> 8].Write(view);
}

void MemoryTable::Release(std::uint32_t key) {
  const std::uint32_t slot = key >> 8;
  {
    std::lock_guard lock(write_mutex_);
    windows_[slot].Write(WindowView{});
  }
  std::lock_guard lock(mutex_);
  free_.push_back(slot);
}

WindowView MemoryTable::Find(std::uint32_t key) const {
  const std::uint32_t slot = key >> 8;
  if (slot >= capacity_) return WindowView{};
  WindowView view = windows_[slot].Read();
  if (view.key != key || key == 0) return WindowView{};
  return view;
}

}  // namespace softdat::core
