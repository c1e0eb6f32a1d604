// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FutexLock: the exclusive lock under softdat::Mutex. Uncontended, lock and unlock are one atomic
// operation each and a handful of instructions; glibc's pthread_mutex_lock/unlock (std::mutex)
// spend about 60 instructions a pair on its type dispatch, owner and user counts, which a
// profile of the same-host Send ping-pong found at 18% of the client's instructions (about 20
// pairs per round trip). Contended, a waiter spins briefly and then sleeps on a futex, as glibc
// does: the three-state lock of Drepper's "Futexes Are Tricky" (0 free, 1 held, 2 held with
// sleepers), so an unlock makes the futex syscall only when someone may sleep.
#pragma once

#include <atomic>
#include <cstdint>

namespace softdat {

class FutexLock {
 public:
  FutexLock() = default;
  FutexLock(const FutexLock&) = delete;
  FutexLock& operator=(const FutexLock&) = delete;

  void lock() {
    std::uint32_t expected = kFree;
    if (state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire, std::memory_order_relaxed)) return;
    LockContended();
  }
  bool try_lock() {
    std::uint32_t expected = kFree;
    return state_.compare_exchange_strong(expected, kHeld, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kSleepers) WakeOne();
  }

 private:
  static constexpr std::uint32_t kFree = 0, kHeld = 1, kSleepers = 2;
  void LockContended();
  void WakeOne();

  std::atomic<std::uint32_t> state_{kFree};
};

}  // namespace softdat
