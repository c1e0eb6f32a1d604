// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The event ring behind one DAT EVD, with the transport-independent semantics of dat_evd_wait,
// dat_evd_dequeue, dat_evd_post_se, dat_evd_enable/disable, dat_evd_set/clear_unwaitable,
// dat_evd_resize, dat_evd_query, dat_evd_modify_cno and overflow. core/ binds it to a handle; the
// transports' progress threads Post into it; the application thread dequeues or waits.
//
// On a device the ring is mostly empty: a DTO EVD's events come from a completion queue
// (SetCompletionSource) that Dequeue and Wait poll themselves when the ring has nothing, and the
// first event that poll produces goes straight into the caller's DAT_EVENT, without passing
// through the ring (the rest of the batch is queued). A waiter that stops spinning arms the
// completion queue and sleeps on its descriptor and the queue's own eventfd.
//
// Locking: one mutex guards the ring and the state; one condition variable wakes a sleeping
// waiter (an eventfd does, when it sleeps on a completion source's descriptor). When an EVD has a CNO, Post triggers it while still holding the queue mutex, so the
// lock order is EventQueue::mutex_ then Cno::mutex_, and a Cno never calls into an EventQueue.
// Holding the queue lock makes SetCno(nullptr) a fence: once it returns no Post can touch the old
// CNO, so core may free a CNO as soon as Cno::CheckFree says nothing is attached. The CNO's proxy
// agent (application code) runs after every lock is released.
#pragma once

#include <dat2/udat.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/mutex.h"
#include "base/status.h"
#include "evd/completion_source.h"
#include "evd/progress_hook.h"

namespace softdat::evd {

class Cno;
class Deadline;

// What an EVD's counters (the DAT IB extension's DCNT_EVD_*) need that evd/ counts, under the
// queue's own lock: events posted (DTO completions, others), waits that slept, wake-ups given.
struct EventQueueTally {
  std::uint64_t dto_posted = 0;    // DTO and RMR bind completions, the IB extension's DTO events
  std::uint64_t other_posted = 0;  // connection, connection request and asynchronous events
  std::uint64_t sleeps = 0;
  std::uint64_t wakeups = 0;
};

// What dat_evd_query needs that evd/ owns.
struct EventQueueInfo {
  DAT_COUNT qlen = 0;       // actual capacity (the requested length rounded up to a power of two)
  DAT_COUNT count = 0;      // events queued now
  bool enabled = true;      // DAT_EVD_STATE_ENABLED (else DISABLED)
  bool waitable = true;     // DAT_EVD_STATE_WAITABLE (else UNWAITABLE)
  bool overflowed = false;  // an event was ever dropped for lack of room (the EVD is in error)
  bool waiter = false;      // a thread is inside Wait
  Cno* cno = nullptr;
  DAT_EVD_HANDLE owner = nullptr;  // what SetOwner gave: the handle a CNO wait reports
};

class EventQueue {
 public:
  // The largest qlen Create and Resize accept; core reports it as max_evd_qlen. A power of two,
  // so rounding a valid request up never exceeds it.
  static constexpr DAT_COUNT kMaxQueueLength = DAT_COUNT{1} << 20;

  // dat_evd_create's ring: at least `min_qlen` entries. kInvalidParameter/kParamQlen if min_qlen
  // < 1 or > kMaxQueueLength; kInsufficientResources/kMemory if the ring cannot be allocated. *out
  // is set only on success.
  static Status Create(DAT_COUNT min_qlen, std::unique_ptr<EventQueue>* out);

  // Detaches from its CNO. The owner must make sure no thread is in Wait (CheckFree) and no
  // producer can still Post.
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // Whether an event notifies: a signalled event wakes a waiter whose threshold it meets and
  // triggers the CNO; an unsignalled one (DAT_COMPLETION_UNSIGNALLED_FLAG, or a Recv of a
  // SOLICITED_WAIT endpoint whose Send was not solicited) is only queued: a waiter counts it once
  // something else wakes it, or when its timeout expires.
  enum class Notify : std::uint8_t { kSignal, kQuiet };

  // A provider event from a progress thread. When the ring is full the event is not stored, the
  // queue enters overflow and this returns kQueueFull; the owner then asks TakeOverflow whether
  // to raise DAT_ASYNC_ERROR_EVD_OVERFLOW. Never allocates, never blocks beyond the mutex.
  Status Post(const DAT_EVENT& event, Notify notify = Notify::kSignal);

  // dat_evd_post_se: a consumer's software event. kInvalidParameter/kParamEvent unless its
  // event_number is DAT_SOFTWARE_EVENT. A full ring refuses it with kQueueFull without entering
  // overflow: the consumer was told and keeps its event, nothing was lost. (That the EVD was
  // created with DAT_EVD_SOFTWARE_FLAG is core's check: the queue does not know its flags.)
  Status PostSoftware(const DAT_EVENT& event);

  // True once per overflow episode (a run of Posts that found the ring full, ended by a Post that
  // fits), so one burst of drops raises one asynchronous overflow event, not one per drop.
  bool TakeOverflow();

  // dat_evd_dequeue: the oldest event, or kQueueEmpty. Never blocks; allowed when disabled or
  // unwaitable. kInvalidParameter/kParamEvent for a null event. With a completion source and an empty
  // ring it polls the source first (a batch: what does not go to `event` is queued).
  Status Dequeue(DAT_EVENT* event);

  // A consumer's dequeue that found the ring empty moves the transport on its thread (`hook`);
  // the first event that Posts here while the ring is still empty goes straight to `into` (true
  // when it did), the rest to the ring. `moved`: what the hook returned. Called without mutex_.
  bool ProgressInto(ProgressHook& hook, DAT_EVENT* into, bool& moved);

  // dat_evd_wait: blocks until at least `threshold` events are queued, then dequeues the oldest
  // into *event and sets *nmore (if not null) to how many remain. timeout_us is in microseconds;
  // DAT_TIMEOUT_INFINITE waits forever and 0 polls. Failures, with outputs untouched:
  //   kInvalidParameter/kParamThreshold  threshold < 1 or above the actual qlen
  //   kInvalidParameter/kParamEvent      event is null
  //   kInvalidState/kEvdWaiter another thread is already waiting here
  //   kInvalidState/kEvdUnwaitable  the EVD is unwaitable
  //   kInterrupted             SetUnwaitable was called during the wait
  //   kTimeout                 fewer than `threshold` events when the timeout expired
  // Quiet events count toward the threshold but do not end a wait by themselves: a wait they
  // satisfy returns when a signalled event arrives or when its timeout expires.
  // With a progress hook set, the waiter spins on the hook (polling it at least once even for a
  // zero timeout): until the timeout when the hook's spin_us() is 0 (busy-poll), else for
  // spin_us before it calls the hook's Pause() and sleeps. A completion source is polled on
  // every turn of the spin; once the spin is over the waiter arms it, polls it once more and
  // sleeps on its descriptor, so a completion wakes this waiter and no one else. Woken by a
  // completion, a waiter returns what the completion produced even when that is a quiet event.
  Status Wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT* event, DAT_COUNT* nmore);

  // dat_evd_enable/disable. A disabled EVD still queues events and still wakes its own waiter;
  // it only stops triggering its CNO. Enabling does not trigger the CNO for events already queued
  // (as in the reference implementation): a consumer dequeues after enabling.
  void Enable();
  void Disable();

  // dat_evd_set_unwaitable wakes a current waiter with kInterrupted and makes later waits fail;
  // dat_evd_clear_unwaitable makes waits possible again.
  void SetUnwaitable();
  void ClearUnwaitable();

  // dat_evd_resize to at least `qlen` entries, keeping every queued event in order. Control path:
  // it allocates. kInvalidParameter/kParamQlen if qlen < 1 or > kMaxQueueLength; kInvalidState if more
  // than qlen events are queued; kInvalidState/kEvdWaiter while a thread waits (its threshold was
  // checked against the old length); kInsufficientResources/kMemory if allocation fails.
  Status Resize(DAT_COUNT qlen);

  // Makes room for at least `qlen` events, keeping every queued event in order; never shrinks.
  // Unlike Resize it may run while a thread waits: a longer ring keeps the waiter's threshold
  // valid. For room the provider reserves for events it promises (core keeps one async EVD entry
  // per SRQ EP for its DAT_ASYNC_ERROR_EP_BROKEN). Control path: it allocates.
  // kInvalidParameter/kParamQlen if qlen < 1 or > kMaxQueueLength; kInsufficientResources/kMemory
  // if allocation fails.
  Status Grow(DAT_COUNT qlen);

  // dat_evd_modify_cno (and the CNO given to dat_evd_create): attaches to `cno`, or detaches for
  // nullptr. A pending CNO trigger naming this queue is dropped on detach. See the locking note.
  void SetCno(Cno* cno);

  // The DAT_EVD_HANDLE core binds to this queue. Opaque here: it is only handed to a CNO's proxy
  // agent, which DAT calls with the EVD that triggered.
  void SetOwner(DAT_EVD_HANDLE owner);

  // The transport progress a waiter spins on (nullptr: none, it sleeps at once). Set on the
  // control path, not during a Wait; the hook must outlive its use here.
  void SetProgressHook(ProgressHook* hook);

  // The device completion queue behind this queue (see above), or nullptr to detach it. Set on
  // the control path while no thread dequeues or waits (right after Create, before destruction);
  // the source must outlive its use here. kInsufficientResources/kMemory when the waiter's
  // eventfd cannot be made.
  Status SetCompletionSource(CompletionSource* source);

  // kInvalidState/kEvdInUse while a thread waits here: freeing the EVD would pull the ring from
  // under it. (Other users of the EVD, such as endpoints, are core's to count.)
  Status CheckFree() const;

  EventQueueInfo Query() const;
  // The counts so far; `reset` zeroes them.
  EventQueueTally Tally(bool reset);

 private:
  EventQueue(std::unique_ptr<DAT_EVENT[]> ring, std::size_t capacity);

  enum class OnFull { kOverflow, kRefuse };
  Status PostInternal(const DAT_EVENT& event, OnFull on_full, Notify notify);
  void PopLocked(DAT_EVENT* event);
  // Polls the completion source for as many completions as the ring has room (at most a batch).
  // With `into`, the first event Posted on this thread while the ring is empty is written there
  // rather than queued; true when that happened. `polled` gets how many completions were taken.
  // Called without mutex_.
  bool PollSource(DAT_EVENT* into, std::uint32_t& polled);
  // Wait's turn of polling: unlocks, polls (capturing when the waiter would take the first event),
  // relocks. True when an event was captured into `event`.
  bool PollForWaiter(std::unique_lock<softdat::Mutex>& lock, DAT_COUNT threshold, DAT_EVENT* event,
                     std::uint32_t& polled);
  // Sleeps (without mutex_) until the source's descriptor or wake_fd_ is readable, or `until`.
  void SleepOnDescriptors(const Deadline& until);

  mutable softdat::Mutex mutex_;
  std::condition_variable_any wakeup_;  // the one waiter, when it sleeps

  std::unique_ptr<DAT_EVENT[]> ring_;
  std::size_t capacity_;  // a power of two
  std::size_t head_ = 0;  // index of the oldest event
  std::size_t count_ = 0;
  // count_, readable without the lock (written under it): a dequeue that finds the ring empty,
  // every turn of a consumer's spin, returns without taking the lock.
  std::atomic<std::size_t> queued_{0};

  bool enabled_ = true;
  bool waitable_ = true;
  bool overflowed_ = false;         // sticky, for Query
  bool in_overflow_episode_ = false;
  bool overflow_unreported_ = false;

  bool waiting_ = false;            // a thread is inside Wait
  bool waiter_sleeps_ = false;      // ... and blocks rather than busy-polling
  bool waiter_on_fd_ = false;       // ... on the source's descriptor and wake_fd_, not on wakeup_
  // SetUnwaitable happened during the current wait (false outside a wait). Written under mutex_;
  // a spinning waiter also reads it between its idle turns without the lock.
  std::atomic<bool> waiter_interrupted_{false};
  DAT_COUNT waiter_threshold_ = 0;

  Cno* cno_ = nullptr;
  DAT_EVD_HANDLE owner_ = nullptr;
  ProgressHook* hook_ = nullptr;
  // Events written into a consumer's dequeue (PollSource, ProgressInto) rather than the ring:
  // counted without mutex_, added to the tally when it is read.
  std::atomic<std::uint64_t> captured_dto_{0};
  std::atomic<std::uint64_t> captured_other_{0};
  EventQueueTally tally_;
  // Set on the control path only (SetCompletionSource), read by Dequeue without the lock.
  CompletionSource* source_ = nullptr;
  int wake_fd_ = -1;  // an eventfd: wakes a waiter sleeping on the source's descriptor
  // cno_ != nullptr, readable without the lock: a queue with a CNO takes no event past its ring.
  std::atomic<bool> has_cno_{false};
  // capacity_, readable without the lock: how much a poll of the source may bring in.
  std::atomic<std::size_t> capacity_hint_{0};
};

}  // namespace softdat::evd
