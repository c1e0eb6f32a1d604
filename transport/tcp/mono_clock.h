// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The monotonic clock in nanoseconds, as the data path reads it (coalescing windows, the
// progress thread's hand-over): one vDSO call, no allocation.
#pragma once

#include <time.h>

#include <cstdint>

namespace softdat::transport::tcp {

inline std::uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace softdat::transport::tcp
