// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The futex system call on a 32-bit atomic word, process-private: what FutexLock and
// FutexSharedLock sleep and wake on.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace softdat {

// FUTEX_WAIT (sleeps while the word holds `value`) or FUTEX_WAKE (wakes up to `value` sleepers).
inline long Futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value) {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op | FUTEX_PRIVATE_FLAG, value, nullptr,
                   nullptr, 0);
}

}  // namespace softdat
