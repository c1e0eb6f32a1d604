// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What an EventQueue waiter (dat_evd_wait) and a dequeue drive instead of waiting for someone
// else: the transport's progress on the calling thread (reading its sockets or polling its CQ).
// The queue only calls it and never knows which transport is behind it.
#pragma once

#include <cstdint>

namespace softdat::evd {

class ProgressHook {
 public:
  // Moves the transport forward once, possibly calling EventQueue::Post on the queue being waited
  // on (the waiter holds no queue lock while it calls this). Returns whether anything happened.
  // Must not throw (noexcept): the waiter has released the queue lock around the call.
  virtual bool Progress() noexcept = 0;

  // Whether a consumer that dequeued an event should also call Progress now, though its queue is
  // not empty (the transport says holding back more would cost it). Must be cheap.
  virtual bool ProgressDue() const noexcept = 0;

  // How long a waiter spins on Progress calls that move nothing before it sleeps, in
  // microseconds; 0 spins until its timeout (busy-poll: nothing else drives the transport).
  virtual std::uint32_t spin_us() const noexcept = 0;

  // The waiter stops spinning and will sleep: whoever else drives progress takes over.
  virtual void Pause() noexcept = 0;
  // The wait that called Pause returns: called once for each Pause, with no queue lock held.
  virtual void Resume() noexcept {}

 protected:
  // Not deleted through this interface: the queue never owns its hook.
  ~ProgressHook() = default;
};

}  // namespace softdat::evd
