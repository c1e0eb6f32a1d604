// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FutexLock's contended paths: a short spin, then sleeping on the futex word.
#include "base/futex_lock.h"

#include "base/futex.h"

namespace softdat {
namespace {

constexpr int kSpins = 100;  // a critical section of softdat is short: the holder is usually out by then

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void FutexLock::LockContended() {
  for (int i = 0; i < kSpins; ++i) {
    Pause();
    std::uint32_t expected = kFree;
    if (state_.load(std::memory_order_relaxed) == kFree &&
        state_.compare_exchange_weak(expected, kHeld, std::memory_order_acquire, std::memory_order_relaxed))
      return;
  }
  // Mark that someone sleeps (the holder's unlock then wakes one), and sleep while it is held. A
  // thread that takes the lock this way keeps the mark: the lock may have other sleepers.
  while (state_.exchange(kSleepers, std::memory_order_acquire) != kFree)
    (void)Futex(&state_, FUTEX_WAIT, kSleepers);
}

void FutexLock::WakeOne() { (void)Futex(&state_, FUTEX_WAKE, 1); }

}  // namespace softdat
