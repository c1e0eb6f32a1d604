// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT IB extension counters (dat_ib_query_counters, dat_ib_print_counters) of an IA, an EP
// and an EVD, indexed by the header's DCNT_* values.
//
// Cheap enough to leave on: a counter is a relaxed atomic that its writers bump with a load and a
// store, not a read-modify-write, so an increment costs what a plain one does and a query from
// another thread reads a whole value. That is exact where one thread at a time writes a counter,
// which is where the callers bump them: an EP's request counters under its post lock, its receive
// counters in its delivery turn, an EVD's inside its queue lock. Counters that many threads bump
// at once (the IA's error counts, off the data path) use AddShared, a true atomic add.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "base/status.h"
#include "core/dat_ib.h"

namespace softdat::core {

template <std::size_t N>
class CounterSet {
 public:
  static constexpr std::size_t kCount = N;

  // One writer at a time for `which` (see above).
  void Add(std::size_t which, std::uint64_t n = 1) {
    std::atomic<std::uint64_t>& value = values_[which];
    value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  // Any number of writers (error paths).
  void AddShared(std::size_t which, std::uint64_t n = 1) { values_[which].fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t Get(std::size_t which) const { return values_[which].load(std::memory_order_relaxed); }
  void Reset(std::size_t which) { values_[which].store(0, std::memory_order_relaxed); }

 private:
  std::array<std::atomic<std::uint64_t>, N> values_{};
};

using IaCounters = CounterSet<DCNT_IA_ALL_COUNTERS>;
// One more slot than reported: a sink for kinds without a data counter (core/ep_counting.h).
using EpCounters = CounterSet<DCNT_EP_ALL_COUNTERS + 1>;
using EvdCounters = CounterSet<DCNT_EVD_ALL_COUNTERS>;

extern const char* const kIaCounterNames[DCNT_IA_ALL_COUNTERS];
extern const char* const kEpCounterNames[DCNT_EP_ALL_COUNTERS];
extern const char* const kEvdCounterNames[DCNT_EVD_ALL_COUNTERS];

// dat_ib_query_counters on a set whose values `read(i)` gives: `which` one counter (into out[0])
// or N (the ..._ALL_COUNTERS value: all of them, out[0..N-1]); `reset` zeroes what was read.
// kInvalidParameter (the counter argument) for another value.
template <std::size_t N, class Read, class Zero>
Status QueryCounters(int which, std::uint64_t* out, bool reset, Read read, Zero zero) {
  if (which < 0 || static_cast<std::size_t>(which) > N) return Status(Code::kInvalidParameter, Detail::kParamCounter);
  const std::size_t first = static_cast<std::size_t>(which) == N ? 0 : static_cast<std::size_t>(which);
  const std::size_t last = static_cast<std::size_t>(which) == N ? N : first + 1;
  for (std::size_t i = first; i < last; ++i) {
    out[i - first] = read(i);
    if (reset) zero(i);
  }
  return Status::Ok();
}

// dat_ib_print_counters: one line per counter on standard output ("<what> <handle>: NAME value"),
// as OFED DAPL prints them.
template <std::size_t N, class Read, class Zero>
Status PrintCounters(const char* what, const void* handle, const char* const (&names)[N], int which, bool reset,
                     Read read, Zero zero) {
  std::uint64_t values[N];
  if (Status status = QueryCounters<N>(which, values, reset, read, zero); !status.ok()) return status;
  const std::size_t first = static_cast<std::size_t>(which) == N ? 0 : static_cast<std::size_t>(which);
  const std::size_t count = static_cast<std::size_t>(which) == N ? N : 1;
  for (std::size_t i = 0; i < count; ++i)
    std::printf("%s %p: %s %llu\n", what, handle, names[first + i], static_cast<unsigned long long>(values[i]));
  std::fflush(stdout);
  return Status::Ok();
}

// The query (`out` set) or the print (`out` null) of a CounterSet whose first N slots are the
// DCNT_* values that `names` names.
template <std::size_t N, std::size_t Slots>
Status ReadCounters(CounterSet<Slots>& set, const char* const (&names)[N], const char* what, const void* handle,
                    int which, std::uint64_t* out, bool reset) {
  static_assert(N <= Slots);
  const auto read = [&set](std::size_t i) { return set.Get(i); };
  const auto zero = [&set](std::size_t i) { set.Reset(i); };
  if (out == nullptr) return PrintCounters(what, handle, names, which, reset, read, zero);
  return QueryCounters<N>(which, out, reset, read, zero);
}

}  // namespace softdat::core
