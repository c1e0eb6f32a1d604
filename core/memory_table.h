// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// An IA's table of memory keys: maps an lmr_context / rmr_context (a 32-bit key, the STag of the
// TCP transport) to what it grants, without a lock on lookup. A key is slot << 8 | generation, as
// iWARP STags are index plus key, so a stale or guessed key of a reused slot does not match. LMRs
// and RMRs share the key space, as they share the STag space on a NIC. The table owns one
// MemoryWindow per slot for its whole life, so a reader racing a release reads a window that
// simply no longer matches its key, never freed memory.
//
// On a device transport (Capabilities::device_memory_keys) the NIC issues the keys: an LMR's
// lmr_context is the device's local key, so the table cannot derive the slot from the key and
// looks it up in a map instead (posts only: the NIC resolves remote keys itself). The window
// still lives in a slot, so posts check LMR bounds, PZ and privileges the same way. A post finds
// a device key's slot without the map's lock through a hint (below), checked against the window.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "core/memory_window.h"

namespace softdat::core {

// Told of every key that starts or stops granting access, so that a transport whose peers check
// keys themselves (tcp's same-host path) publishes the same (core/ia.h forwards to the transport).
// Control path; called with no lock of the table held.
class KeyObserver {
 public:
  virtual void Published(const WindowView& view) = 0;
  // Returns only when no access through `key` can be in flight any more.
  virtual void Revoked(std::uint32_t key) = 0;

 protected:
  ~KeyObserver() = default;
};

class MemoryTable {
 public:
  // `device_keys`: keys come from the device (ReserveDeviceKey), not from Reserve.
  explicit MemoryTable(std::uint32_t capacity, bool device_keys = false);

  std::uint32_t capacity() const { return capacity_; }
  // Who hears of every Publish and revocation (Release, Invalidate); set before the first key.
  void set_observer(KeyObserver* observer) { observer_ = observer; }
  bool device_keys() const { return device_keys_; }

  // Device keys: reserves a slot for `device_key`, which then names it in Publish, Release and
  // Find. kInsufficientResources, kMemoryRegion when full; kInvalidParameter when the key is
  // already in the table (a device never gives one key twice) or the table issues its own keys.
  Status ReserveDeviceKey(std::uint32_t device_key);

  // Reserves a slot and returns its fresh key (kInsufficientResources, kMemoryRegion when full).
  // The key grants nothing until Publish.
  Status Reserve(std::uint32_t& key);
  // Makes `view.key` (reserved by the caller, who alone writes its slot) grant `view`.
  void Publish(const WindowView& view);
  // Revokes `key` and frees its slot (after the observer's revocation returned).
  void Release(std::uint32_t key);
  // Revokes `key` if it still grants what `check` accepts, keeping the slot reserved for its
  // owner (who still Releases it). For a peer's Send with Invalidate. True when revoked.
  template <class Check>
  bool Invalidate(std::uint32_t key, Check check) {
    std::uint32_t slot = 0;
    if (!SlotOf(key, slot)) return false;
    {
      std::lock_guard lock(write_mutex_);
      const WindowView view = windows_[slot].Read();
      if (view.key != key || key == 0 || !check(view)) return false;
      WriteLocked(slot, WindowView{});
    }
    if (observer_ != nullptr) observer_->Revoked(key);
    return true;
  }

  // What `key` grants now: a view whose key is 0 when nothing does (no such key, a stale
  // generation, a released slot). Lock-free; safe from progress threads.
  WindowView Find(std::uint32_t key) const;
  // How many window writes (Publish, Release, Invalidate) have completed: a view read by Find
  // after this returned `n` is still what its key grants for as long as writes() is still `n`
  // (LocalIovCache).
  std::uint64_t writes() const { return writes_.load(std::memory_order_acquire); }

 private:
  // Under write_mutex_: `slot`'s window becomes `view`, and the write is counted (writes()).
  void WriteLocked(std::uint32_t slot, const WindowView& view) {
    windows_[slot].Write(view);
    writes_.fetch_add(1, std::memory_order_release);
  }
  // Where `key` would live: its high bits for the table's own keys, the map for device keys.
  bool SlotOf(std::uint32_t key, std::uint32_t& slot) const;

  const std::uint32_t capacity_;
  const bool device_keys_;
  KeyObserver* observer_ = nullptr;
  std::unique_ptr<MemoryWindow[]> windows_;
  std::unique_ptr<std::uint8_t[]> generations_;
  softdat::Mutex mutex_;        // guards free_ and generations_ (control path only)
  softdat::Mutex write_mutex_;  // one writer per window at a time (Publish, Release, Invalidate)
  std::atomic<std::uint64_t> writes_{0};  // see writes(); bumped under write_mutex_ after each write
  std::vector<std::uint32_t> free_;
  mutable softdat::SharedMutex device_mutex_;  // guards device_slots_ (posts read it shared)
  std::unordered_map<std::uint32_t, std::uint32_t> device_slots_;  // device key -> slot
  // Device keys: key << 32 | slot, where the map last put `key`, at HintIndex(key). Only a
  // hint: Find trusts it only when that slot's window carries the key, which a slot does only
  // while it holds that key's registration (a device never gives one key to two live regions).
  // So a stale or overwritten hint costs a map lookup, never a wrong answer. Without it every
  // post took the map's reader lock (profile: a third of a verbs post's instructions).
  std::uint32_t HintIndex(std::uint32_t key) const;
  std::uint32_t hint_bits_ = 0;
  std::unique_ptr<std::atomic<std::uint64_t>[]> device_hints_;
};

}  // namespace softdat::core
