// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FutexSharedLock's writer side and contended reader path: sleeping on the futex word.
#include "base/futex_shared_lock.h"

#include <climits>

#include "base/futex.h"

namespace softdat {

void FutexSharedLock::LockSharedContended() {
  std::uint32_t state = state_.load(std::memory_order_relaxed);
  for (;;) {
    if ((state & kWriter) != 0) {
      // Sleeps only if the word is still what was seen: a writer's unlock in between changed it.
      (void)Futex(&state_, FUTEX_WAIT, state);
      state = state_.load(std::memory_order_relaxed);
      continue;
    }
    if (state_.compare_exchange_weak(state, state + 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
  }
}

void FutexSharedLock::lock() {
  writers_.lock();
  std::uint32_t state = state_.fetch_or(kWriter, std::memory_order_acquire);
  // Readers inside: each leaving one changes the word, and the last wakes this thread.
  while ((state & ~kWriter) != 0) {
    (void)Futex(&state_, FUTEX_WAIT, state | kWriter);
    state = state_.load(std::memory_order_acquire);
  }
}

bool FutexSharedLock::try_lock() {
  if (!writers_.try_lock()) return false;
  std::uint32_t expected = 0;
  if (state_.compare_exchange_strong(expected, kWriter, std::memory_order_acquire, std::memory_order_relaxed))
    return true;
  writers_.unlock();
  return false;
}

void FutexSharedLock::unlock() {
  state_.fetch_and(~kWriter, std::memory_order_release);
  Wake();  // readers may sleep on the bit (a writer is rare: one syscall is its price)
  writers_.unlock();
}

void FutexSharedLock::Wake() { (void)Futex(&state_, FUTEX_WAKE, INT_MAX); }

}  // namespace softdat
