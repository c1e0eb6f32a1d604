// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FutexSharedLock: the reader-writer lock under softdat::SharedMutex, for locks that readers take
// on the data path and writers almost never (an EP's resources: every dat_ep_post_recv reads
// them, dat_ep_modify and a connection's set-up replace them). Uncontended, a reader's lock and
// unlock are one atomic operation each; glibc's pthread_rwlock (std::shared_mutex) spent about
// 120 instructions a pair in the verbs round trip's profile. A writer first takes a FutexLock
// among writers, then sets the writer bit, which holds new readers off, and sleeps until the
// readers inside have left; the last of them wakes it. Readers cannot starve a writer: new ones
// wait while the bit is set. A writer's unlock wakes the sleeping readers with one futex call.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/futex_lock.h"

namespace softdat {

class FutexSharedLock {
 public:
  FutexSharedLock() = default;
  FutexSharedLock(const FutexSharedLock&) = delete;
  FutexSharedLock& operator=(const FutexSharedLock&) = delete;

  void lock_shared() {
    if (!try_lock_shared()) LockSharedContended();
  }
  // Fails only while a writer holds the lock or waits for it.
  bool try_lock_shared() {
    std::uint32_t state = state_.load(std::memory_order_relaxed);
    while ((state & kWriter) == 0)
      if (state_.compare_exchange_weak(state, state + 1, std::memory_order_acquire, std::memory_order_relaxed))
        return true;
    return false;
  }
  void unlock_shared() {
    // The last reader out while a writer waits for it: wake the writer.
    if (state_.fetch_sub(1, std::memory_order_release) == (kWriter | 1)) Wake();
  }

  void lock();
  bool try_lock();
  void unlock();

 private:
  static constexpr std::uint32_t kWriter = 1u << 31;  // below it: the readers inside
  void LockSharedContended();
  void Wake();

  std::atomic<std::uint32_t> state_{0};
  FutexLock writers_;  // one writer at a time
};

}  // namespace softdat
