// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Helpers shared by the evd/ tests: numbered events, queue creation, a bounded spin for "another
// thread has reached this state" (never a sleep), cleanup on early test exit, Status printing.
#pragma once

#include <dat2/udat.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <thread>
#include <utility>

#include "base/status.h"
#include "evd/event_queue.h"

namespace softdat {

// gtest finds this through ADL, so failures read "timeout/17" instead of raw bytes.
inline void PrintTo(const Status& status, std::ostream* os) {
  *os << CodeName(status.code()) << "/" << static_cast<int>(status.detail());
}

namespace evd::testing {

// Long enough that a loaded 2-core CI machine (or TSAN) never hits it unless the code is wrong.
inline constexpr DAT_TIMEOUT kLongTimeoutUs = 30'000'000;

// An event tagged with its producer and sequence number, checkable after delivery.
inline DAT_EVENT MakeEvent(std::uint64_t producer, std::uint64_t seq) {
  DAT_EVENT event{};
  event.event_number = DAT_SOFTWARE_EVENT;
  event.event_extension_data[0] = producer;
  event.event_extension_data[1] = seq;
  return event;
}
inline std::uint64_t ProducerOf(const DAT_EVENT& event) { return event.event_extension_data[0]; }
inline std::uint64_t SeqOf(const DAT_EVENT& event) { return event.event_extension_data[1]; }

// A queue of at least `qlen` entries, or nullptr with a test failure recorded.
inline std::unique_ptr<EventQueue> NewQueue(DAT_COUNT qlen) {
  std::unique_ptr<EventQueue> queue;
  const Status status = EventQueue::Create(qlen, &queue);
  EXPECT_EQ(status, Status::Ok());
  return queue;
}

// How many events `queue` holds (dat_evd_query's count).
inline std::size_t QueuedEvents(const EventQueue& queue) { return static_cast<std::size_t>(queue.Query().count); }

// Spins (yielding) until `condition` holds; false if it still does not after `limit`. Used to
// learn that another thread has entered a wait, never as the assertion itself.
template <class Condition>
bool Eventually(Condition condition, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// Runs its function on scope exit, so a failed ASSERT still releases and joins helper threads.
template <class F>
class Finally {
 public:
  explicit Finally(F f) : f_(std::move(f)) {}
  ~Finally() { f_(); }
  Finally(const Finally&) = delete;
  Finally& operator=(const Finally&) = delete;

 private:
  F f_;
};

}  // namespace evd::testing
}  // namespace softdat
