// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The per-thread count of softdat locks held, and the assertion built on it.
#include "base/mutex.h"

#include <cstdlib>

#include "base/log.h"

namespace softdat {

#ifndef NDEBUG
namespace {
thread_local int held = 0;
}  // namespace

namespace lock_tracking {
void Acquired() { ++held; }
void Released() { --held; }
}  // namespace lock_tracking

int LocksHeld() { return held; }

void AssertNoLocksHeld(const char* what) {
  if (held == 0) return;
  SOFTDAT_LOG(kError, "internal error: %s runs with %d softdat lock(s) held", what, held);
  std::abort();
}
#else
int LocksHeld() { return 0; }
void AssertNoLocksHeld(const char*) {}
#endif

}  // namespace softdat
