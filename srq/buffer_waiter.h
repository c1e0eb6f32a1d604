// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// How an SRQ tells an endpoint that found no buffer for an arriving message that a buffer is
// there for it now: core/'s EP implements it by letting its transport endpoint go on
// (RecvBuffersAvailable). The SrqPool keeps the waiting endpoints in arrival order (srq_pool.h)
// and wakes one per posted buffer, as an RNIC hands SRQ buffers to messages in arrival order:
// waking every waiter on every post made each post cost O(waiters) and collapsed a 1,000-
// connection fan-in into a thundering herd.
#pragma once

namespace softdat::srq {

class SrqPool;

class BufferWaiter {
 public:
  // Called once per wait, when a buffer was posted for this waiter, from the thread that posted
  // it (or closed another waiter) and with no lock of the pool held. Must not block and must
  // not call back into the pool: it only lets the endpoint go on, whose next Take (or Close)
  // settles the wake-up.
  virtual void OnBuffersPosted() = 0;

 protected:
  // Not owned through this interface: the pool never deletes a waiter.
  ~BufferWaiter() = default;

 private:
  friend class SrqPool;
  // Guarded by the pool's lock. kWoken: told of a buffer and not yet back with a Take.
  enum class WaitState : unsigned char { kIdle, kQueued, kWoken };
  WaitState wait_state_ = WaitState::kIdle;
  BufferWaiter* prev_ = nullptr;  // the pool's intrusive FIFO of queued waiters
  BufferWaiter* next_ = nullptr;
};

}  // namespace softdat::srq
