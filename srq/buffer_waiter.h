// How an SRQ tells an endpoint that found no buffer for an arriving message that buffers were
// posted: core/'s EP implements it by letting its transport endpoint go on (RecvBuffersAvailable).
// The SrqPool keeps the waiting list (srq_pool.h), so the rule "every waiter hears of the next
// post, once" lives in srq/ with the buffers it is about.
#pragma once

namespace softdat::srq {

class SrqPool;

class BufferWaiter {
 public:
  // Called once per wait, after a buffer was posted, from the posting thread and with no lock of
  // the pool held (it may call back into the pool). Must not block.
  virtual void OnBuffersPosted() = 0;

 protected:
  // Not owned through this interface: the pool never deletes a waiter.
  ~BufferWaiter() = default;

 private:
  friend class SrqPool;
  bool queued_ = false;  // on the pool's waiting list (guarded by the pool's lock)
};

}  // namespace softdat::srq
