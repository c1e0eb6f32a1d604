// The busy-poll interface an EventQueue waiter drives instead of sleeping. A transport that wants
// low-latency completions (polling a socket or a CQ from the waiting thread) implements it; the
// queue only calls it and never knows which transport is behind it.
#pragma once

namespace softdat::evd {

class ProgressHook {
 public:
  // Moves the transport forward once, possibly calling EventQueue::Post on the queue being waited
  // on (the waiter holds no queue lock while it calls this). Returns whether anything happened;
  // when nothing did, the waiter yields the CPU before polling again, so an idle busy-poll does
  // not starve the progress threads on a small machine.
  // Must not throw (noexcept): the waiter has released the queue lock around the call.
  virtual bool Progress() noexcept = 0;

 protected:
  // Not deleted through this interface: the queue never owns its hook.
  ~ProgressHook() = default;
};

}  // namespace softdat::evd
