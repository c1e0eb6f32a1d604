// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// When a DAT wait gives up: turns a DAT_TIMEOUT (microseconds, DAT_TIMEOUT_INFINITE for never,
// 0 for a poll) into a point on the steady clock, so waits are immune to wall-clock changes and
// spurious wakeups do not restart the timeout.
#pragma once

#include <dat2/udat.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/mutex.h"

namespace softdat::evd {

class Deadline {
 public:
  explicit Deadline(DAT_TIMEOUT timeout_us)
      : infinite_(timeout_us == DAT_TIMEOUT_INFINITE),
        at_(std::chrono::steady_clock::now() + std::chrono::microseconds(timeout_us)) {}
  // From a clock reading the caller already took.
  Deadline(DAT_TIMEOUT timeout_us, std::chrono::steady_clock::time_point now)
      : infinite_(timeout_us == DAT_TIMEOUT_INFINITE), at_(now + std::chrono::microseconds(timeout_us)) {}

  bool infinite() const { return infinite_; }
  std::chrono::steady_clock::time_point at() const { return at_; }
  bool Expired() const { return !infinite_ && std::chrono::steady_clock::now() >= at_; }
  // Against a clock reading the caller already took (a spin reads the clock every few turns).
  bool ExpiredAt(std::chrono::steady_clock::time_point now) const { return !infinite_ && now >= at_; }

  // Sleeps on `cv` until notified (or spuriously woken) or the deadline passes. Callers recheck
  // their condition and Expired() after it returns.
  void SleepOn(std::condition_variable_any& cv, std::unique_lock<softdat::Mutex>& lock) const {
    if (infinite_)
      cv.wait(lock);
    else
      cv.wait_until(lock, at_);
  }

 private:
  bool infinite_;
  std::chrono::steady_clock::time_point at_;
};

}  // namespace softdat::evd
