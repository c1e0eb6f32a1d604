// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ParkTimer: the timerfd and eventfd of the parked progress thread's sleep.
#include "transport/tcp/park_timer.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace softdat::transport::tcp {

ParkTimer::ParkTimer()
    : timer_fd_(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!usable())
    SOFTDAT_LOG(kWarn, "tcp: no timerfd or eventfd for the progress thread's park (%s): it wakes every handoff_us "
                "while consumers poll", std::strerror(errno));
}

ParkTimer::~ParkTimer() {
  if (timer_fd_ >= 0) ::close(timer_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ParkTimer::Arm(std::uint64_t at_ns) noexcept {
  itimerspec spec{};
  // 0 would disarm the timer: a wake-up due at once is due in a nanosecond.
  if (at_ns == 0) at_ns = 1;
  spec.it_value.tv_sec = static_cast<time_t>(at_ns / 1'000'000'000);
  spec.it_value.tv_nsec = static_cast<long>(at_ns % 1'000'000'000);
  (void)::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

void ParkTimer::SleepUntil(std::uint64_t at_ns) noexcept {
  due_ns_.store(at_ns, std::memory_order_relaxed);
  Arm(at_ns);  // also clears an expiry a late Postpone of an earlier park left
  pollfd fds[2] = {{timer_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  if (::poll(fds, 2, -1) <= 0) return;  // interrupted: the caller looks again
  std::uint64_t count;
  if (fds[0].revents != 0) (void)!::read(timer_fd_, &count, sizeof count);
  if (fds[1].revents != 0) (void)!::read(wake_fd_, &count, sizeof count);
}

void ParkTimer::Postpone(std::uint64_t now_ns, std::uint64_t period_ns) noexcept {
  std::uint64_t due = due_ns_.load(std::memory_order_relaxed);
  // Nobody sleeps, or the wake-up is here (the sleeper looks at the polls itself), or still more
  // than an eighth of the period away. Each move is a timerfd_settime, which now and then
  // reprograms the CPU's timer: about 0.7 us at the median on the development VM, but 18 us at
  // the 90th percentile (a VM exit). Moved every half period, it put the default mode's 8 B p99
  // at 9-10 us; every seven eighths, at 1-9 us. A consumer that polls more often than every
  // eighth of the period (the transport stamps every 8th call) keeps the thread asleep.
  if (due == 0 || due <= now_ns || due - now_ns >= period_ns / 8) return;
  const std::uint64_t later = now_ns + period_ns;
  // One poller moves it; racing ones find it moved. A settime that lands after a later one only
  // brings the wake-up forward: the sleeper finds the polls recent and sleeps again.
  if (!due_ns_.compare_exchange_strong(due, later, std::memory_order_relaxed)) return;
  Arm(later);
}

void ParkTimer::Wake() noexcept {
  if (wake_fd_ < 0) return;
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

}  // namespace softdat::transport::tcp
