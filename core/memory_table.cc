// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// MemoryTable: slot allocation on the control path, lock-free lookup on the data path.
#include "core/memory_table.h"

namespace softdat::core {

MemoryTable::MemoryTable(std::uint32_t capacity, bool device_keys)
    : capacity_(capacity),
      device_keys_(device_keys),
      windows_(new MemoryWindow[capacity]),
      generations_(new std::uint8_t[capacity]()) {
  free_.reserve(capacity);
  for (std::uint32_t i = capacity; i > 0; --i) free_.push_back(i - 1);
  if (device_keys_) {
    device_slots_.reserve(capacity);
    // As many hints as slots, up to 1,024 (8 KiB): a consumer posts from a handful of LMRs.
    hint_bits_ = 1;
    while (hint_bits_ < 10 && (1u << hint_bits_) < capacity) ++hint_bits_;
    device_hints_.reset(new std::atomic<std::uint64_t>[std::size_t{1} << hint_bits_]());
  }
}

std::uint32_t MemoryTable::HintIndex(std::uint32_t key) const {
  // Fibonacci hashing: the device's keys differ in their low byte and in their index bits alike.
  return static_cast<std::uint32_t>((std::uint64_t{key} * 0x9E3779B97F4A7C15ull) >> (64 - hint_bits_));
}

bool MemoryTable::SlotOf(std::uint32_t key, std::uint32_t& slot) const {
  if (!device_keys_) {
    slot = key >> 8;
    return slot < capacity_;
  }
  std::shared_lock lock(device_mutex_);
  const auto found = device_slots_.find(key);
  if (found == device_slots_.end()) return false;
  slot = found->second;
  return true;
}

Status MemoryTable::ReserveDeviceKey(std::uint32_t device_key) {
  if (!device_keys_) return Status(Code::kInvalidParameter);
  std::lock_guard lock(mutex_);
  if (free_.empty()) return Status(Code::kInsufficientResources, Detail::kMemoryRegion);
  std::lock_guard keys(device_mutex_);
  if (!device_slots_.emplace(device_key, free_.back()).second) return Status(Code::kInvalidParameter);
  free_.pop_back();
  return Status::Ok();
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
  std::uint32_t slot = 0;
  if (!SlotOf(view.key, slot)) return;
  {
    std::lock_guard lock(write_mutex_);
    WriteLocked(slot, view);
  }
  if (observer_ != nullptr) observer_->Published(view);
}

void MemoryTable::Release(std::uint32_t key) {
  std::uint32_t slot = 0;
  if (!SlotOf(key, slot)) return;
  {
    std::lock_guard lock(write_mutex_);
    WriteLocked(slot, WindowView{});
  }
  // Before the slot is free: a key reissued from it is never published while the old one may
  // still be in use.
  if (observer_ != nullptr) observer_->Revoked(key);
  std::lock_guard lock(mutex_);
  if (device_keys_) {
    std::lock_guard keys(device_mutex_);
    device_slots_.erase(key);
  }
  free_.push_back(slot);
}

WindowView MemoryTable::Find(std::uint32_t key) const {
  if (key == 0) return WindowView{};
  if (device_keys_) {
    const std::uint64_t hint = device_hints_[HintIndex(key)].load(std::memory_order_relaxed);
    if (static_cast<std::uint32_t>(hint >> 32) == key) {
      const WindowView view = windows_[static_cast<std::uint32_t>(hint)].Read();
      if (view.key == key) return view;
    }
  }
  std::uint32_t slot = 0;
  if (!SlotOf(key, slot)) return WindowView{};
  WindowView view = windows_[slot].Read();
  if (view.key != key) return WindowView{};
  if (device_keys_) device_hints_[HintIndex(key)].store(std::uint64_t{key} << 32 | slot, std::memory_order_relaxed);
  return view;
}

}  // namespace softdat::core
