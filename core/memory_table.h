// An IA's table of registered memory: maps an lmr_context / rmr_context (a 32-bit key, the STag
// of the TCP transport) to its LMR, without a lock on lookup. A key is slot << 8 | generation, as
// iWARP STags are index plus key, so a stale or guessed key of a reused slot does not match.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "core/lmr.h"

namespace softdat::core {

class MemoryTable {
 public:
  explicit MemoryTable(std::uint32_t capacity);

  std::uint32_t capacity() const { return capacity_; }

  // Reserves a slot and returns its key (kInsufficientResources, kMemoryRegion when full).
  Status Reserve(std::uint32_t& key);
  // Publishes `lmr` under the key Reserve returned.
  void Publish(std::uint32_t key, Lmr* lmr);
  // Unpublishes and frees the slot of `key`.
  void Release(std::uint32_t key);

  // The live LMR named by `key`, or nullptr. Lock-free; safe from progress threads.
  Lmr* Find(std::uint32_t key) const;

 private:
  const std::uint32_t capacity_;
  std::unique_ptr<std::atomic<Lmr*>[]> slots_;
  std::unique_ptr<std::uint8_t[]> generations_;
  std::mutex mutex_;  // guards free_ and generations_ (control path only)
  std::vector<std::uint32_t> free_;
};

}  // namespace softdat::core
