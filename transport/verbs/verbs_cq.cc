// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsCq: ibv_create_cq with its own completion channel, polling into the endpoints' events,
// arming, and the table of the QPs that report here.
#include "transport/verbs/verbs_cq.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/verbs/verbs_endpoint.h"
#include "transport/verbs/verbs_transport.h"

namespace softdat::transport::verbs {
namespace {

// Completions taken per ibv_poll_cq: a burst's worth, on the stack.
constexpr std::uint32_t kBatch = 16;

}  // namespace

VerbsCq::VerbsCq(VerbsTransport& transport) : AsyncTarget(transport), transport_(transport) {}

Status VerbsCq::Create(VerbsTransport& transport, std::uint32_t entries, std::unique_ptr<VerbsCq>& out) {
  std::unique_ptr<VerbsCq> cq(new VerbsCq(transport));
  ibv_context* context = transport.device().context;
  // Busy-poll: nobody sleeps on a CQ, so it needs no channel.
  if (!transport.busy_poll()) {
    cq->channel_ = ibv_create_comp_channel(context);
    if (cq->channel_ == nullptr) return Status(Code::kInsufficientResources);
    const int flags = fcntl(cq->channel_->fd, F_GETFL);
    if (flags < 0 || fcntl(cq->channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0)
      return Status(Code::kInsufficientResources);
  }
  const int max_cqe = std::max(1, transport.device().attr.max_cqe);
  const int cqe = static_cast<int>(std::clamp<std::uint32_t>(entries, 1, static_cast<std::uint32_t>(max_cqe)));
  cq->cq_ = ibv_create_cq(context, cqe, static_cast<AsyncTarget*>(cq.get()), cq->channel_, 0);
  if (cq->cq_ == nullptr) {
    SOFTDAT_LOG(kWarn, "verbs: ibv_create_cq of %d entries failed: %s", cqe, std::strerror(errno));
    return Status(Code::kInsufficientResources);
  }
  cq->capacity_ = static_cast<std::uint32_t>(cq->cq_->cqe);
  out = std::move(cq);
  return Status::Ok();
}

VerbsCq::~VerbsCq() {
  if (cq_ != nullptr) {
    if (watched_) SetWatched(false);
    transport_.async_events().Detach(this, &cq_->cq_context);
    // The progress may be inside an event of this queue (a CQ error) or a poll of it: let it end.
    transport_.turn().WaitUnlessMine();
    turn_.WaitUnlessMine();
    ibv_destroy_cq(cq_);
  }
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
}

void VerbsCq::Add(std::uint32_t qp_num, VerbsEndpoint* endpoint) {
  std::lock_guard lock(table_mutex_);
  endpoints_[qp_num] = endpoint;
  changes_.fetch_add(1, std::memory_order_seq_cst);
}

void VerbsCq::Remove(std::uint32_t qp_num) {
  {
    std::lock_guard lock(table_mutex_);
    endpoints_.erase(qp_num);
    changes_.fetch_add(1, std::memory_order_seq_cst);
  }
  turn_.WaitUnlessMine();
}

// Under turn_.
VerbsEndpoint* VerbsCq::Find(std::uint32_t qp_num) {
  Hint& hint = hints_[qp_num % kHints];
  if (hint.endpoint != nullptr && hint.qp_num == qp_num && hint.changes == changes_.load(std::memory_order_seq_cst))
    return hint.endpoint;
  std::lock_guard lock(table_mutex_);
  const auto found = endpoints_.find(qp_num);
  if (found == endpoints_.end()) return nullptr;
  hint = Hint{qp_num, changes_.load(std::memory_order_relaxed), found->second};
  return found->second;
}

std::uint32_t VerbsCq::Poll(std::uint32_t max) noexcept {
  if (!turn_.TryTake()) return 0;
  const std::uint32_t taken = PollTurnHeld(max);
  turn_.Release();
  return taken;
}

std::uint32_t VerbsCq::PollTurnHeld(std::uint32_t max) {
  ibv_wc wc[kBatch];
  std::uint32_t total = 0;
  while (total < max) {
    const int want = static_cast<int>(std::min(kBatch, max - total));
    const int n = ibv_poll_cq(cq_, want, wc);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) {
      // Found afresh for each completion: an event may take another endpoint of this queue away.
      if (VerbsEndpoint* endpoint = Find(wc[i].qp_num))
        endpoint->OnCompletion(wc[i]);
      else
        SOFTDAT_LOG(kDebug, "verbs: completion of QP %u, which has ended, dropped", wc[i].qp_num);
    }
    total += static_cast<std::uint32_t>(n);
    if (n < want) break;
  }
  return total;
}

bool VerbsCq::TryDrain() {
  if (!turn_.TryTake()) return false;
  while (PollTurnHeld(UINT32_MAX) > 0) {}
  turn_.Release();
  return true;
}

void VerbsCq::Arm() noexcept {
  if (channel_ != nullptr) ibv_req_notify_cq(cq_, 0);
}

void VerbsCq::TakeNotifications() noexcept {
  if (channel_ == nullptr) return;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(channel_, &cq, &context) == 0) ibv_ack_cq_events(cq, 1);
}

void VerbsCq::OnNotification() {
  TakeNotifications();
  // Armed first, then polled: what came before the arm is polled now, what comes after raises
  // the next notification.
  Arm();
  (void)Poll(UINT32_MAX);
}

void VerbsCq::SetWatched(bool watched) {
  if (watched == watched_) return;
  watched_ = watched;
  transport_.Watch(this, watched);
  // Armed, then polled: what completed before now reaches the EVD (and its CNO) at once.
  if (watched) {
    Arm();
    (void)Poll(UINT32_MAX);
  }
}

Status VerbsCq::Resize(std::uint32_t entries) {
  if (entries <= capacity()) return Status::Ok();
  if (static_cast<std::int64_t>(entries) > transport_.device().attr.max_cqe) return Status(Code::kInsufficientResources);
  if (const int rc = ibv_resize_cq(cq_, static_cast<int>(entries)); rc != 0)
    return Status(rc == EOPNOTSUPP || rc == ENOSYS ? Code::kModelNotSupported : Code::kInsufficientResources);
  capacity_ = static_cast<std::uint32_t>(cq_->cqe);
  return Status::Ok();
}

void VerbsCq::OnAsyncEvent(ibv_event_type type) {
  if (type != IBV_EVENT_CQ_ERR) return;
  SOFTDAT_LOG(kWarn,
              "verbs: a completion queue of %u entries overflowed: more DTOs completed to its EVD than its "
              "evd_qlen; the connections on it fail",
              capacity());
  ReportOverflow();  // the consumer hears DAT_ASYNC_ERROR_EVD_OVERFLOW
}

}  // namespace softdat::transport::verbs
