// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The memory a key (lmr_context or rmr_context, the STag of the TCP transport) grants access to:
// an address range, privileges, a protection zone and, for a window bound to an endpoint, that
// endpoint. MemoryTable keeps one per key slot; an LMR's never changes while it lives, an RMR
// gets a fresh key (and so a rewritten window) at each dat_rmr_bind.
//
// Progress threads read windows concurrently with binds (the target side of RDMA), so the fields
// sit behind a sequence lock: a reader copies them and retries if a writer was in between, and a
// writer (the control path, one at a time per window) never blocks a reader.
#pragma once

#include <dat2/udat.h>

#include <atomic>
#include <cstdint>

namespace softdat::core {

class Pz;

struct WindowView {
  std::uint32_t key = 0;  // 0: the window grants nothing (an unbound RMR)
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  DAT_MEM_PRIV_FLAGS privileges = DAT_MEM_PRIV_NONE_FLAG;
  const Pz* pz = nullptr;
  const void* endpoint = nullptr;  // RMR bound to an EP: only that EP's peer may use it
  bool is_lmr = false;             // an LMR's context: also valid in local LMR triplets

  // True when [address, address + length) lies inside the window (no overflow).
  bool Contains(std::uint64_t start, std::uint64_t size) const {
    return start >= address && size <= length && start - address <= length - size;
  }
  bool Allows(DAT_MEM_PRIV_FLAGS wanted) const { return (privileges & wanted) == wanted; }
};

class MemoryWindow {
 public:
  // A consistent copy of the fields.
  WindowView Read() const {
    for (;;) {
      const std::uint32_t before = sequence_.load(std::memory_order_acquire);
      if (before & 1) continue;  // a write is under way
      WindowView view;
      view.key = key_.load(std::memory_order_relaxed);
      view.address = address_.load(std::memory_order_relaxed);
      view.length = length_.load(std::memory_order_relaxed);
      view.privileges = privileges_.load(std::memory_order_relaxed);
      view.pz = pz_.load(std::memory_order_relaxed);
      view.endpoint = endpoint_.load(std::memory_order_relaxed);
      view.is_lmr = is_lmr_.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (sequence_.load(std::memory_order_relaxed) == before) return view;
    }
  }

  // One writer at a time (callers serialize binds of one RMR).
  void Write(const WindowView& view) {
    const std::uint32_t sequence = sequence_.load(std::memory_order_relaxed);
    sequence_.store(sequence + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    key_.store(view.key, std::memory_order_relaxed);
    address_.store(view.address, std::memory_order_relaxed);
    length_.store(view.length, std::memory_order_relaxed);
    privileges_.store(view.privileges, std::memory_order_relaxed);
    pz_.store(view.pz, std::memory_order_relaxed);
    endpoint_.store(view.endpoint, std::memory_order_relaxed);
    is_lmr_.store(view.is_lmr, std::memory_order_relaxed);
    sequence_.store(sequence + 2, std::memory_order_release);
  }

 private:
  std::atomic<std::uint32_t> sequence_{0};
  std::atomic<std::uint32_t> key_{0};
  std::atomic<std::uint64_t> address_{0};
  std::atomic<std::uint64_t> length_{0};
  std::atomic<DAT_MEM_PRIV_FLAGS> privileges_{DAT_MEM_PRIV_NONE_FLAG};
  std::atomic<const Pz*> pz_{nullptr};
  std::atomic<const void*> endpoint_{nullptr};
  std::atomic<bool> is_lmr_{false};
};

}  // namespace softdat::core
