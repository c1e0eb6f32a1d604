// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EVD create, free, query, CNO binding, software events and provider posts.
#include "core/evd.h"

#include "base/dat_names.h"
#include "base/log.h"
#include "core/cno.h"
#include "core/ia.h"
#include "core/srq_buffer_release.h"

namespace softdat::core {
namespace {

constexpr DAT_EVD_FLAGS kKnownFlags = static_cast<DAT_EVD_FLAGS>(
    DAT_EVD_SOFTWARE_FLAG | DAT_EVD_CR_FLAG | DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG |
    DAT_EVD_RMR_BIND_FLAG | DAT_EVD_ASYNC_FLAG);

}  // namespace

Evd::Evd(Ia* ia, DAT_EVD_FLAGS flags, std::unique_ptr<evd::EventQueue> queue)
    : ia_(ia), flags_(flags), queue_(std::move(queue)) {
  queue_->SetOwner(this);
  queue_->SetProgressHook(ia->progress_hook());
}

Status Evd::Create(Ia* ia, DAT_COUNT min_qlen, Cno* cno, DAT_EVD_FLAGS flags, Evd** out) {
  if ((flags & ~kKnownFlags) != 0 || flags == 0) return Status(Code::kInvalidParameter, Detail::kParamFlags);
  if ((flags & DAT_EVD_ASYNC_FLAG) != 0) {
    // One async EVD per IA: dat_ia_open made it (or the consumer said one exists elsewhere).
    SOFTDAT_LOG(kWarn, "dat_evd_create: the IA already has its asynchronous EVD");
    return Status(Code::kInvalidParameter, Detail::kParamFlags);
  }
  std::unique_ptr<evd::EventQueue> queue;
  if (Status status = evd::EventQueue::Create(min_qlen, &queue); !status.ok()) return status;
  Evd* evd = NewHandle<Evd>(ia->provider, ia, flags, std::move(queue));
  if (Status status = evd->AttachCompletionQueue(); !status.ok()) {
    DeleteHandle(evd);
    return status;
  }
  if (cno != nullptr) {
    evd->queue_->SetCno(&cno->cno());
    evd->cno_.store(cno, std::memory_order_release);
  }
  ia->Track(evd);
  *out = evd;
  return Status::Ok();
}

Status Evd::AttachCompletionQueue() {
  if ((flags_ & DAT_EVD_DTO_FLAG) == 0) return Status::Ok();
  // As many completions as the ring holds events: the consumer sizes a DTO EVD for the DTOs that
  // may complete to it, and the CQ holds what it has not polled yet.
  const auto entries = static_cast<std::uint32_t>(queue_->Query().qlen);
  const Status status = ia_->transport().CreateCompletionQueue(entries, cq_);
  if (status.code() == Code::kModelNotSupported) return Status::Ok();  // completions come from progress
  if (!status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_evd_create: the %s device cannot make a completion queue of %u entries (%s)",
                ia_->name().c_str(), entries, CodeName(status.code()));
    return status;
  }
  if (Status attached = queue_->SetCompletionSource(&cq_source_); !attached.ok()) {
    cq_.reset();
    return attached;
  }
  cq_->SetEvents(&cq_source_);
  return Status::Ok();
}

void Evd::OnCqOverflow() {
  SOFTDAT_LOG(kWarn, "EVD %p overflowed: its device completion queue of %u entries dropped completions (make the "
              "EVD's qlen larger)", static_cast<void*>(this), cq_->capacity());
  ReportOverflow();
}

Status Evd::MakeAsync(Ia* ia, DAT_COUNT min_qlen, Evd** out) {
  std::unique_ptr<evd::EventQueue> queue;
  if (min_qlen < 1) min_qlen = 1;
  if (Status status = evd::EventQueue::Create(min_qlen, &queue); !status.ok()) return status;
  Evd* evd = NewHandle<Evd>(ia->provider, ia, DAT_EVD_ASYNC_FLAG, std::move(queue));
  *out = evd;
  return Status::Ok();
}

Status Evd::Free(Evd* evd) {
  if (evd == evd->ia_->async_evd()) return Status(Code::kInvalidState, Detail::kEvdInUse);
  if (evd->users_.load(std::memory_order_acquire) > 0)
    return Status(Code::kInvalidState, Detail::kEvdInUse);
  if (Status status = evd->queue_->CheckFree(); !status.ok()) return status;
  evd->ia_->Untrack(evd);
  Destroy(evd);
  return Status::Ok();
}

void Evd::Destroy(Evd* evd) {
  evd->queue_->SetCno(nullptr);
  // No EP names the EVD any more (Free checks; abrupt close takes EPs down first): nothing of
  // its CQ is left to report.
  (void)evd->queue_->SetCompletionSource(nullptr);
  evd->cq_.reset();
  // Receive completions nobody will take still hold SRQ buffers: give them back.
  DAT_EVENT event;
  while (evd->queue_->Dequeue(&event).ok()) ReleaseSrqBuffer(event);
  DeleteHandle(evd);
}

Status Evd::Dequeue(DAT_EVENT& event) {
  evd::ProgressHook* const hook = ia_->progress_hook();
  counters_.Add(DCNT_EVD_DEQUEUE);
  Status status = queue_->Dequeue(&event);
  if (status.code() == Code::kQueueEmpty) {
    // Nothing queued: move the transport on this thread, then look again. A consumer spinning on
    // dat_evd_dequeue thus drives its own progress and never waits for a thread it starves.
    counters_.Add(DCNT_EVD_DEQUEUE_POLL);
    bool moved = false;
    if (hook != nullptr && queue_->ProgressInto(*hook, &event, moved)) {
      status = Status::Ok();  // the first event the progress made, written in place
    } else if (moved) {
      status = queue_->Dequeue(&event);
    }
    if (status.ok()) counters_.Add(DCNT_EVD_DEQUEUE_POLL_FOUND);
  } else if (status.ok() && hook != nullptr && hook->ProgressDue()) {
    // Events queued, and the transport holds back much Work posted while reaping them (a consumer
    // answering each completion with a post, over many endpoints): move it now, while those
    // posts are still in cache, rather than once thousands of them wait for this queue to empty.
    (void)hook->Progress();
  }
  counters_.Add(status.ok() ? DCNT_EVD_DEQUEUE_FOUND : DCNT_EVD_DEQUEUE_NOT_FOUND);
  if (status.ok()) ReleaseSrqBuffer(event);
  return status;
}

Status Evd::Wait(DAT_TIMEOUT timeout, DAT_COUNT threshold, DAT_EVENT& event, DAT_COUNT* nmore) {
  counters_.Add(DCNT_EVD_WAIT);
  Status status = queue_->Wait(timeout, threshold, &event, nmore);
  if (status.ok()) ReleaseSrqBuffer(event);
  return status;
}

std::uint64_t Evd::CounterValue(std::size_t which, const evd::EventQueueTally& tally) const {
  switch (which) {
    case DCNT_EVD_WAIT_BLOCKED: return tally.sleeps - tally_base_[which];
    case DCNT_EVD_WAIT_NOTIFY: return tally.wakeups - tally_base_[which];
    case DCNT_EVD_CONN_CALLBACK: return tally.other_posted - tally_base_[which];
    case DCNT_EVD_DTO_CALLBACK: return tally.dto_posted - tally_base_[which];
    default: return counters_.Get(which);
  }
}

Status Evd::CountersQuery(int which, DAT_UINT64* out, bool reset, bool print) {
  std::lock_guard lock(tally_mutex_);
  const evd::EventQueueTally tally = queue_->Tally(false);
  const auto read = [&](std::size_t i) { return CounterValue(i, tally); };
  // A reset of a queue-counted one moves its base to where it stands.
  const auto zero = [&](std::size_t i) {
    const bool queue_counted = i == DCNT_EVD_WAIT_BLOCKED || i == DCNT_EVD_WAIT_NOTIFY ||
                               i == DCNT_EVD_CONN_CALLBACK || i == DCNT_EVD_DTO_CALLBACK;
    if (queue_counted) {
      tally_base_[i] += CounterValue(i, tally);
    } else {
      counters_.Reset(i);
    }
  };
  if (print) return core::PrintCounters("EVD", this, kEvdCounterNames, which, reset, read, zero);
  return core::QueryCounters<DCNT_EVD_ALL_COUNTERS>(which, out, reset, read, zero);
}

Status Evd::QueryCounters(int which, DAT_UINT64* out, bool reset) { return CountersQuery(which, out, reset, false); }
Status Evd::PrintCounters(int which, bool reset) { return CountersQuery(which, nullptr, reset, true); }

void Evd::Enable() { queue_->Enable(); }
void Evd::Disable() { queue_->Disable(); }
Status Evd::Resize(DAT_COUNT qlen) {
  if (cq_ != nullptr && qlen > 0 && static_cast<std::uint32_t>(qlen) > cq_->capacity()) {
    // The CQ grows first: a ring longer than its CQ could promise room the device does not have.
    if (Status status = cq_->Resize(static_cast<std::uint32_t>(qlen)); !status.ok()) {
      SOFTDAT_LOG(kWarn, "dat_evd_resize: the %s device cannot grow the EVD's completion queue to %d entries (%s)",
                  ia_->name().c_str(), qlen, CodeName(status.code()));
      return status;
    }
  }
  return queue_->Resize(qlen);
}
void Evd::SetUnwaitable() { queue_->SetUnwaitable(); }
void Evd::ClearUnwaitable() { queue_->ClearUnwaitable(); }

void Evd::Query(DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM& param) const {
  const evd::EventQueueInfo info = queue_->Query();
  if (mask & DAT_EVD_FIELD_IA_HANDLE) param.ia_handle = ia_;
  if (mask & DAT_EVD_FIELD_EVD_QLEN) param.evd_qlen = info.qlen;
  if (mask & DAT_EVD_FIELD_EVD_STATE) {
    param.evd_state = static_cast<DAT_EVD_STATE>(
        (info.enabled ? DAT_EVD_STATE_ENABLED : DAT_EVD_STATE_DISABLED) |
        (info.waitable ? DAT_EVD_STATE_WAITABLE : DAT_EVD_STATE_UNWAITABLE));
  }
  if (mask & DAT_EVD_FIELD_CNO) param.cno_handle = cno();
  if (mask & DAT_EVD_FIELD_EVD_FLAGS) param.evd_flags = flags_;
}

Status Evd::ModifyCno(Cno* cno) {
  queue_->SetCno(cno != nullptr ? &cno->cno() : nullptr);
  cno_.store(cno, std::memory_order_release);
  return Status::Ok();
}

Status Evd::PostSoftware(const DAT_EVENT& event) {
  if ((flags_ & DAT_EVD_SOFTWARE_FLAG) == 0) return Status(Code::kInvalidParameter, Detail::kParamHandle);
  DAT_EVENT copy = event;
  copy.evd_handle = this;
  return queue_->PostSoftware(copy);
}

void Evd::Post(const DAT_EVENT& event, evd::EventQueue::Notify notify) {
  if (queue_->Post(event, notify).ok()) return;
  DAT_EVENT dropped = event;
  ReleaseSrqBuffer(dropped);
  if (!queue_->TakeOverflow()) return;
  SOFTDAT_LOG(kWarn, "EVD %p overflowed: a %s was dropped (make the EVD's qlen larger)", static_cast<void*>(this),
              DatEventText(static_cast<std::uint32_t>(event.event_number)).text);
  ReportOverflow();
}

void Evd::ReportOverflow() {
  Evd* async = ia_->async_evd();
  if (async == nullptr || async == this) return;
  DAT_EVENT overflow{};
  overflow.event_number = DAT_ASYNC_ERROR_EVD_OVERFLOW;
  overflow.evd_handle = async;
  overflow.event_data.asynch_error_event_data.dat_handle = this;
  overflow.event_data.asynch_error_event_data.reason = DAT_ASYNC_ERROR_EVD_OVERFLOW;
  (void)async->queue_->Post(overflow);
}

}  // namespace softdat::core
