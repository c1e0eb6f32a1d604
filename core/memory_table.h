// An IA's table of memory keys: maps an lmr_context / rmr_context (a 32-bit key, the STag of the
// TCP transport) to what it grants, without a lock on lookup. A key is slot << 8 | generation, as
// iWARP STags are index plus key, so a stale or guessed key of a reused slot does not match. LMRs
// and RMRs share the key space, as they share the STag space on a NIC. The table owns one
// MemoryWindow per slot for its whole life, so a reader racing a release reads a window that
// simply no longer matches its key, never freed memory.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "core/memory_window.h"

namespace softdat::core {

class MemoryTable {
 public:
  explicit MemoryTable(std::uint32_t capacity);

  std::uint32_t capacity() const { return capacity_; }

  // Reserves a slot and returns its fresh key (kInsufficientResources, kMemoryRegion when full).
  // The key grants nothing until Publish.
  Status Reserve(std::uint32_t& key);
  // Makes `view.key` (reserved by the caller, who alone writes its slot) grant `view`.
  void Publish(const WindowView& view);
  // Revokes `key` and frees its slot.
  void Release(std::uint32_t key);
  // Revokes `key` if it still grants what `check` accepts, keeping the slot reserved for its
  // owner (who still Releases it). For a peer's Send with Invalidate. True when revoked.
  template <class Check>
  bool Invalidate(std::uint32_t key, Check check) {
    const std::uint32_t slot = key >> 8;
    if (slot >= capacity_) return false;
    std::lock_guard lock(write_mutex_);
    const WindowView view = windows_[slot].Read();
    if (view.key != key || key == 0 || !check(view)) return false;
    windows_[slot].Write(WindowView{});
    return true;
  }

  // What `key` grants now: a view whose key is 0 when nothing does (no such key, a stale
  // generation, a released slot). Lock-free; safe from progress threads.
  WindowView Find(std::uint32_t key) const;

 private:
  const std::uint32_t capacity_;
  std::unique_ptr<MemoryWindow[]> windows_;
  std::unique_ptr<std::uint8_t[]> generations_;
  std::mutex mutex_;        // guards free_ and generations_ (control path only)
  std::mutex write_mutex_;  // one writer per window at a time (Publish, Release, Invalidate)
  std::vector<std::uint32_t> free_;
};

}  // namespace softdat::core
