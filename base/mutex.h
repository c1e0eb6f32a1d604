// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// softdat's mutexes: an exclusive lock (FutexLock) and a reader-writer lock (FutexSharedLock)
// that, in debug builds (no NDEBUG), count how many softdat locks the calling thread holds, so
// that code which must run with none held — an EVD post, which may trigger a CNO, and the CNO's
// proxy agent, which is consumer code that may call straight back into softdat — can assert it
// (AssertNoLocksHeld). Every lock of the library is one of these; the test suite runs debug
// builds, so every path it exercises is checked. In optimized builds they are the bare locks
// with no extra work.
#pragma once

#include <mutex>
#include <shared_mutex>

#include "base/futex_lock.h"
#include "base/futex_shared_lock.h"

namespace softdat {

namespace lock_tracking {
#ifdef NDEBUG
inline void Acquired() {}
inline void Released() {}
#else
void Acquired();
void Released();
#endif
}  // namespace lock_tracking

// How many softdat locks this thread holds (always 0 in optimized builds).
int LocksHeld();

// Aborts with a log line naming `what` when this thread holds a softdat lock (debug builds).
void AssertNoLocksHeld(const char* what);

// The exclusive side of a std mutex type, counted.
template <class Std>
class Tracked {
 public:
  void lock() {
    mutex_.lock();
    lock_tracking::Acquired();
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    lock_tracking::Acquired();
    return true;
  }
  void unlock() {
    lock_tracking::Released();
    mutex_.unlock();
  }

 protected:
  Std mutex_;
};

// Exclusive locks are FutexLocks (futex_lock.h: a fraction of std::mutex's instructions).
class Mutex final : public Tracked<FutexLock> {};

// Reader-writer locks are FutexSharedLocks (futex_shared_lock.h): a reader's pair is two atomic
// operations, where std::shared_mutex's costs about 120 instructions.
class SharedMutex final : public Tracked<FutexSharedLock> {
 public:
  void lock_shared() {
    mutex_.lock_shared();
    lock_tracking::Acquired();
  }
  bool try_lock_shared() {
    if (!mutex_.try_lock_shared()) return false;
    lock_tracking::Acquired();
    return true;
  }
  void unlock_shared() {
    lock_tracking::Released();
    mutex_.unlock_shared();
  }
};

}  // namespace softdat
