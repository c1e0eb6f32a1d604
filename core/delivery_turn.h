// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Lets many threads ask for "deliver what is ready" while only one of them delivers at a time,
// with no lock held while it hands events to EVDs (a CNO proxy agent, consumer code, runs inside
// that hand-off and may call straight back into softdat).
//
// Request() returns true to exactly one caller at a time: that caller delivers, then calls
// Done() in a loop until it returns true. Every Request() made while a delivery runs makes the
// running deliverer go round once more, so nothing that became ready is left behind.
//
//   if (turn.Request()) do { DeliverEverythingReady(); } while (!turn.Done());
#pragma once

#include <atomic>
#include <cstdint>

namespace softdat::core {

class DeliveryTurn {
 public:
  // True when the caller must deliver now.
  bool Request() { return pending_.fetch_add(1, std::memory_order_acq_rel) == 0; }

  // Called by the deliverer after a pass: true when no Request() came in during it.
  bool Done() {
    const std::uint32_t seen = taken_;
    // What the next turn starts with, written while this one still holds the turn: once the
    // count drops to zero another thread may deliver and read it.
    taken_ = 1;
    const std::uint32_t before = pending_.fetch_sub(seen, std::memory_order_acq_rel);
    if (before == seen) return true;
    taken_ = before - seen;  // the requests that arrived meanwhile: one more pass covers them
    return false;
  }

 private:
  std::atomic<std::uint32_t> pending_{0};
  std::uint32_t taken_ = 1;  // requests the current pass accounts for (deliverer only)
};

}  // namespace softdat::core
