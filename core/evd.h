// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The EVD handle object: binds an evd::EventQueue (all event semantics) to a DAT handle, its IA,
// its stream flags and its CNO, and counts the EPs and SRQs that feed it so dat_evd_free can
// refuse while they exist. Post is what producers (transports, SRQ low watermark) call: it turns
// an overflow into DAT_ASYNC_ERROR_EVD_OVERFLOW on the IA's async EVD.
//
// On a transport with completion queues (verbs), a DTO EVD is also one device CQ, sized by its
// queue length and shared by every EP that names the EVD (the EPs' transport endpoints are given
// it): dat_evd_dequeue and dat_evd_wait poll it on the consumer's thread, through the queue's
// CompletionSource, and its completions become this EVD's events on that same thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/mutex.h"

#include "base/status.h"
#include "core/counters.h"
#include "core/handle.h"
#include "evd/completion_source.h"
#include "evd/event_queue.h"
#include "transport/completion_queue.h"

namespace softdat::core {

class Ia;
class Cno;

class Evd : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kEvd;

  // dat_evd_create. The async EVD of dat_ia_open is made by MakeAsync.
  static Status Create(Ia* ia, DAT_COUNT min_qlen, Cno* cno, DAT_EVD_FLAGS flags, Evd** out);
  static Status MakeAsync(Ia* ia, DAT_COUNT min_qlen, Evd** out);
  // dat_evd_free: kInvalidState/kEvdInUse while an EP or SRQ uses it, while a thread waits on it,
  // or for the IA's async EVD.
  static Status Free(Evd* evd);
  // Destroys without checks (abrupt IA close).
  static void Destroy(Evd* evd);

  void Query(DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM& param) const;
  Status ModifyCno(Cno* cno);
  Status PostSoftware(const DAT_EVENT& event);
  // dat_evd_enable, dat_evd_disable, dat_evd_resize, dat_evd_set_unwaitable, dat_evd_clear_unwaitable.
  void Enable();
  void Disable();
  Status Resize(DAT_COUNT qlen);
  void SetUnwaitable();
  void ClearUnwaitable();

  // A provider event. Never blocks, never allocates; on overflow the event is dropped (an SRQ
  // buffer it held is released) and the IA's async EVD gets one DAT_ASYNC_ERROR_EVD_OVERFLOW
  // per overflow episode. Quiet events are queued without notifying (EventQueue::Notify).
  void Post(const DAT_EVENT& event, evd::EventQueue::Notify notify = evd::EventQueue::Notify::kSignal);

  // dat_evd_dequeue / dat_evd_wait: the queue's rules, plus releasing the SRQ buffer a taken
  // receive completion held. In busy-poll mode a dequeue first drives the transport once.
  // `nmore` may be null.
  Status Dequeue(DAT_EVENT& event);
  Status Wait(DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT& event, DAT_COUNT* nmore);

  // dat_ib_query_counters / dat_ib_print_counters (a DCNT_EVD_* or DCNT_EVD_ALL_COUNTERS).
  Status QueryCounters(int which, DAT_UINT64* out, bool reset);
  Status PrintCounters(int which, bool reset);

  Ia* ia() const { return ia_; }
  DAT_EVD_FLAGS flags() const { return flags_; }
  // The device CQ behind a DTO EVD, or null (no device CQs on this transport, or not a DTO EVD).
  transport::CompletionQueue* completion_queue() const { return cq_.get(); }
  Cno* cno() const { return cno_.load(std::memory_order_acquire); }
  evd::EventQueue& queue() { return *queue_; }
  const evd::EventQueue& queue() const { return *queue_; }

  void AddUser() { users_.fetch_add(1, std::memory_order_relaxed); }
  void RemoveUser() { users_.fetch_sub(1, std::memory_order_release); }

  // Public for NewHandle; use Create.
  Evd(Ia* ia, DAT_EVD_FLAGS flags, std::unique_ptr<evd::EventQueue> queue);

 private:
  // A handle object has no vtable: the queue's completion source is this member, forwarding to
  // the transport's CQ, and it hears what the CQ reports outside a poll.
  class CqSource final : public evd::CompletionSource, public transport::CompletionQueueEvents {
   public:
    explicit CqSource(Evd& evd) : evd_(evd) {}
    std::uint32_t Poll(std::uint32_t max) noexcept override { return evd_.cq_->Poll(max); }
    void Arm() noexcept override { evd_.cq_->Arm(); }
    int wait_fd() const noexcept override { return evd_.cq_->wait_fd(); }
    void TakeNotifications() noexcept override { evd_.cq_->TakeNotifications(); }
    void SetWatched(bool watched) noexcept override { evd_.cq_->SetWatched(watched); }
    void OnOverflow() override { evd_.OnCqOverflow(); }

   private:
    Evd& evd_;
  };

  // A DTO EVD on a transport with device CQs gets its CQ; kOk without one.
  Status AttachCompletionQueue();
  // The device dropped completions of this EVD's CQ: DAT_ASYNC_ERROR_EVD_OVERFLOW to the IA's
  // asynchronous EVD, as when the EVD's own ring drops an event.
  void OnCqOverflow();
  void ReportOverflow();

  Ia* ia_;
  DAT_EVD_FLAGS flags_;
  std::unique_ptr<evd::EventQueue> queue_;
  std::unique_ptr<transport::CompletionQueue> cq_;
  CqSource cq_source_{*this};
  std::atomic<Cno*> cno_{nullptr};
  std::atomic<int> users_{0};
  // The consumer's calls (dequeues, waits), counted here; the rest the queue counts under its
  // lock (EventQueueTally), from `tally_base_` on (where a reset left them).
  EvdCounters counters_;
  softdat::Mutex tally_mutex_;
  std::uint64_t tally_base_[DCNT_EVD_ALL_COUNTERS] = {};
  // One counter's value from `tally` (its queue-counted ones) or counters_.
  std::uint64_t CounterValue(std::size_t which, const evd::EventQueueTally& tally) const;
  Status CountersQuery(int which, DAT_UINT64* out, bool reset, bool print);
};

}  // namespace softdat::core
