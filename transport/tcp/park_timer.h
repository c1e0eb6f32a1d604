// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ParkTimer: where the default mode's parked progress thread sleeps (TcpTransport::Park). Its
// wake-up is a timerfd at an absolute CLOCK_MONOTONIC time (MonotonicNs) which the consumers'
// polls move later without waking it (Postpone), and an eventfd that wakes it at once (Wake).
// A timed wait on a condition variable can only be moved by waking the sleeper, and on a small
// machine each wake-up preempts a spinning consumer: a parked thread that woke every hand-off
// period to see whether consumers still polled held the default mode's 8 B p99 at 11.6 us, 6.5
// with this timer (medians of six runs; PERFORMANCE.md, "Progress").
#pragma once

#include <atomic>
#include <cstdint>

namespace softdat::transport::tcp {

class ParkTimer {
 public:
  ParkTimer();  // usable() says whether both descriptors opened
  ~ParkTimer();
  ParkTimer(const ParkTimer&) = delete;
  ParkTimer& operator=(const ParkTimer&) = delete;

  bool usable() const { return timer_fd_ >= 0 && wake_fd_ >= 0; }
  // The sleeper (one thread): returns at `at_ns`, or later if Postpone moved it, or at a Wake
  // (one that came before the call included). Then Leave, or sleep again.
  void SleepUntil(std::uint64_t at_ns) noexcept;
  // The sleeper, leaving the park: Postpone does nothing until the next SleepUntil.
  void Leave() noexcept { due_ns_.store(0, std::memory_order_relaxed); }
  // Any thread, `now_ns` being a poll the sleeper waits out: once the wake-up is less than an
  // eighth of `period_ns` away, moves it to now_ns + period_ns. About one system call per period
  // while consumers poll, and never a wake-up later than period_ns after the poll that set it.
  void Postpone(std::uint64_t now_ns, std::uint64_t period_ns) noexcept;
  // Any thread: the sleeper returns now.
  void Wake() noexcept;

 private:
  void Arm(std::uint64_t at_ns) noexcept;

  int timer_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<std::uint64_t> due_ns_{0};  // the armed wake-up (0: nobody sleeps here)
};

}  // namespace softdat::transport::tcp
