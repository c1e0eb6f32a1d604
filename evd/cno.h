// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A consumer notification object: dat_cno_wait, dat_cno_modify_agent, dat_cno_query and the
// in-use rule of dat_cno_free. EventQueues attached to it (EventQueue::SetCno) trigger it when an
// event arrives at an enabled EVD that has no waiter of its own; a thread in Wait learns which EVD
// triggered. A trigger that finds no waiter is remembered (one pending trigger), so a consumer
// that checks its EVDs and then waits cannot miss the event that arrived in between.
//
// Lock order: EventQueue::mutex_ then Cno::mutex_ (see event_queue.h); a Cno never calls into an
// EventQueue, and never runs the proxy agent under a lock.
#pragma once

#include <dat2/udat.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>

#include "base/mutex.h"
#include "base/status.h"

namespace softdat::evd {

class EventQueue;
class ProgressHook;

// What dat_cno_query needs that evd/ owns, plus what tests and core check.
struct CnoInfo {
  DAT_OS_WAIT_PROXY_AGENT agent{};
  std::size_t attached = 0;  // EventQueues whose CNO this is
  std::size_t waiters = 0;   // threads inside Wait
  bool triggered = false;    // a trigger is pending
};

class Cno {
 public:
  explicit Cno(const DAT_OS_WAIT_PROXY_AGENT& agent = {}) : agent_(agent) {}
  ~Cno();
  Cno(const Cno&) = delete;
  Cno& operator=(const Cno&) = delete;

  // dat_cno_fd_create: from now on a trigger also makes this file descriptor readable, so a
  // consumer can poll() it with its other descriptors; Take() clears it. kInsufficientResources
  // when no descriptor can be had. Returns the descriptor, which the Cno owns and closes.
  Status EnableFd(int& fd);

  // dat_cno_trigger: takes the pending trigger without blocking (null when there is none) and
  // clears the descriptor's readiness.
  EventQueue* Take();

  // dat_cno_wait: consumes the pending trigger, or blocks for one, and sets *triggered to the
  // EventQueue that caused it. kTimeout when timeout_us expires first (DAT_TIMEOUT_INFINITE
  // waits forever, 0 polls); kInvalidParameter/kParamEvd for a null output. Several threads may
  // wait; each trigger releases exactly one of them. With a `hook`, the waiter drives the
  // transport's progress first, as an EVD waiter does (EventQueue::Wait): until its timeout
  // (busy-poll, where nothing else would move the events that trigger it), or until the
  // transport moved nothing for spin_us, then it hands over (Pause) and sleeps.
  Status Wait(DAT_TIMEOUT timeout_us, EventQueue** triggered, ProgressHook* hook = nullptr);

  // dat_cno_modify_agent. The agent is called once, with the triggering EVD's owner handle, when
  // a trigger arrives while none is pending, and is then cleared: the consumer re-arms it with
  // ModifyAgent, as the reference implementation (DAPL) behaves.
  void ModifyAgent(const DAT_OS_WAIT_PROXY_AGENT& agent);

  // dat_cno_free's check: kInvalidState/kCnoInUse while an EVD is attached or a thread waits.
  Status CheckFree() const;

  CnoInfo Query() const;

 private:
  friend class EventQueue;

  // A proxy agent call captured under the lock and made after every lock is released.
  struct AgentCall {
    DAT_OS_WAIT_PROXY_AGENT agent{};
    DAT_EVD_HANDLE evd = nullptr;
    // Queues the call for this thread's next safe point (base/deferred_calls.h): the agent is
    // consumer code and may call back into softdat, so it never runs inside softdat's frames.
    void Defer() const;
  };

  // Called by `source` with its mutex held (lock order above).
  AgentCall Trigger(EventQueue* source, DAT_EVD_HANDLE owner);
  void Attach();
  void Detach(const EventQueue* source);

  mutable softdat::Mutex mutex_;
  std::condition_variable_any wakeup_;
  DAT_OS_WAIT_PROXY_AGENT agent_;
  EventQueue* pending_ = nullptr;  // the EVD of the pending trigger; null when untriggered
  std::size_t attached_ = 0;
  std::size_t waiters_ = 0;
  int fd_ = -1;  // an eventfd, after EnableFd
};

}  // namespace softdat::evd
