// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Where a DTO EVD's events come from on a device: a completion queue the consumer's own dequeue
// and wait poll (core adapts the transport's CompletionQueue to this). Polling it makes the
// transport report completions on the polling thread, which core turns into events Posted to the
// EventQueue; the queue hands the first of them straight to the dequeuing consumer (see
// EventQueue::Dequeue). The queue never knows which transport is behind it.
#pragma once

#include <cstdint>

namespace softdat::evd {

class CompletionSource {
 public:
  // Takes up to `max` completions; each may Post events to the queue on this thread (the
  // queue's lock is not held). Returns how many it took. Must not throw.
  virtual std::uint32_t Poll(std::uint32_t max) noexcept = 0;
  // After Arm, the next completion makes wait_fd() readable.
  virtual void Arm() noexcept = 0;
  // What a waiter sleeps on; -1 for none (the waiter then sleeps on the queue's own wakeup).
  virtual int wait_fd() const noexcept = 0;
  // Consumes what made wait_fd() readable.
  virtual void TakeNotifications() noexcept = 0;
  // The queue has a CNO: completions must be noticed while nobody polls or waits.
  virtual void SetWatched(bool watched) noexcept = 0;

 protected:
  // Not deleted through this interface: the queue never owns its source.
  ~CompletionSource() = default;
};

}  // namespace softdat::evd
