// EP data path: posting receives and requests, what the transport reports about them (buffers
// for arriving messages, placements, finished work, the target side of RDMA), receive accounting
// queries and high watermarks.
#include <algorithm>

#include "base/log.h"
#include "core/dto_event.h"
#include "core/ep.h"
#include "core/ia.h"
#include "core/local_iov.h"
#include "core/memory_table.h"
#include "core/rmr.h"
#include "core/srq.h"

namespace softdat::core {
namespace {

constexpr DAT_COMPLETION_FLAGS kRequestPostFlags = static_cast<DAT_COMPLETION_FLAGS>(
    DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG |
    DAT_COMPLETION_BARRIER_FENCE_FLAG);

transport::RecvTarget TargetOf(const srq::RecvBuffer& buffer) {
  return transport::RecvTarget{std::span<const Segment>(buffer.segments, buffer.num_segments), buffer.capacity};
}

}  // namespace

Status Ep::PostRecv(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie,
                    DAT_COMPLETION_FLAGS flags) {
  if (srq_ != nullptr) {
    SOFTDAT_LOG(kInfo, "dat_ep_post_recv: this EP takes its receive buffers from an SRQ");
    return Status(Code::kInvalidState, Detail::kEpNotReady);
  }
  if (num_segments < 0 || num_segments > attr_.max_recv_iov) return Status(Code::kInvalidParameter, Detail::kArg2);
  if (num_segments > 0 && local_iov == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
  if ((flags & ~DAT_COMPLETION_UNSIGNALLED_FLAG) != 0 ||
      ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
       (attr_.recv_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG) == 0))
    return Status(Code::kInvalidParameter, Detail::kArg5);
  Segment segments[srq::EpRecvQueue::kMaxRecvIov];
  CheckedIov checked;
  if (Status status = CheckLocalIov(ia_->memory(), pz_, {local_iov, static_cast<std::size_t>(num_segments)},
                                    LocalUse::kReceive, Detail::kArg3, segments, checked);
      !status.ok())
    return status;
  if (device_receives_) {
    DAT_EP_STATE current;
    {
      std::lock_guard lock(mutex_);
      current = state();
      if (Status status = PostDeviceRecvLocked(cookie, {segments, checked.count}, flags); !status.ok())
        return status;
    }
    if (current == DAT_EP_STATE_DISCONNECTED) Deliver();
    return Status::Ok();
  }
  if (Status status = recv_queue_->Post(cookie, {segments, checked.count}, flags); !status.ok()) return status;
  const DAT_EP_STATE current = state();
  if (current == DAT_EP_STATE_DISCONNECTED) {
    Deliver();  // "the posted Recv is immediately flushed to recv_evd_handle"
  } else if (current == DAT_EP_STATE_CONNECTED || current == DAT_EP_STATE_DISCONNECT_PENDING) {
    endpoint_->RecvBuffersAvailable();
  }
  return Status::Ok();
}

Status Ep::PostDeviceRecvLocked(DAT_DTO_COOKIE cookie, std::span<const Segment> segments,
                                DAT_COMPLETION_FLAGS flags) {
  // Queued first, so a completion racing the post finds its buffer; under mutex_, so OnEnded
  // (which sets DISCONNECTED under it) either comes after and flushes it, or came before and the
  // buffer stays off the ended endpoint and is flushed by core alone.
  if (Status status = recv_queue_->Post(cookie, segments, flags); !status.ok()) return status;
  const std::uint64_t recv_id = ++device_recv_posted_;
  if (state() == DAT_EP_STATE_DISCONNECTED) return Status::Ok();
  const Status status = endpoint_->PostRecv(recv_id, segments);
  if (status.code() == Code::kInvalidState) {
    // The connection is ending and its OnEnded is on its way (the transport took no receive):
    // as on a DAT EP that is already disconnected, the buffer is accepted and flushed then.
    SOFTDAT_LOG(kDebug, "dat_ep_post_recv: the %s endpoint is ending; receive %llu will be flushed",
                ia_->name().c_str(), static_cast<unsigned long long>(recv_id));
    return Status::Ok();
  }
  if (!status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_ep_post_recv: the %s device refused the receive (%s)", ia_->name().c_str(),
                CodeName(status.code()));
    (void)recv_queue_->Withdraw();
    --device_recv_posted_;
    return status;
  }
  return Status::Ok();
}

Status Ep::PostSend(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie,
                    DAT_COMPLETION_FLAGS flags, bool invalidate, DAT_RMR_CONTEXT invalidate_key) {
  if (num_segments < 0 || num_segments > attr_.max_request_iov) return Status(Code::kInvalidParameter, Detail::kArg2);
  if (num_segments > 0 && local_iov == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
  return PostRequest(DAT_DTO_SEND, {local_iov, static_cast<std::size_t>(num_segments)}, cookie, nullptr, flags,
                     invalidate, invalidate_key);
}

Status Ep::PostRdma(DAT_DTOS operation, DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov,
                    DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote_iov, DAT_COMPLETION_FLAGS flags) {
  const DAT_COUNT max_iov = operation == DAT_DTO_RDMA_READ ? attr_.max_rdma_read_iov : attr_.max_rdma_write_iov;
  if (num_segments < 0 || num_segments > max_iov) return Status(Code::kInvalidParameter, Detail::kArg2);
  if (num_segments > 0 && local_iov == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
  if (remote_iov == nullptr) return Status(Code::kInvalidParameter, Detail::kArg5);
  if (operation == DAT_DTO_RDMA_READ && !ia_->capabilities().rdma_read) return Status(Code::kModelNotSupported);
  return PostRequest(operation, {local_iov, static_cast<std::size_t>(num_segments)}, cookie, remote_iov, flags,
                     false, 0);
}

Status Ep::PostRequest(DAT_DTOS operation, std::span<const DAT_LMR_TRIPLET> local_iov, DAT_DTO_COOKIE cookie,
                       const DAT_RMR_TRIPLET* remote, DAT_COMPLETION_FLAGS flags, bool invalidate,
                       DAT_RMR_CONTEXT invalidate_key) {
  const Detail flags_argument = remote != nullptr ? Detail::kArg6 : Detail::kArg5;
  if ((flags & ~kRequestPostFlags) != 0 ||
      ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
       (attr_.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG) == 0) ||
      (operation != DAT_DTO_SEND && (flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG)))
    return Status(Code::kInvalidParameter, flags_argument);
  if (attr_.max_request_dtos == 0) return Status(Code::kInsufficientResources);

  bool flushed = false;
  if (Status status = PostRequestLocked(operation, local_iov, cookie, remote, flags, invalidate, invalidate_key,
                                        flushed);
      !status.ok())
    return status;
  // Outside every lock: delivery may run a CNO agent, which may post again.
  if (flushed) Deliver();
  return Status::Ok();
}

Status Ep::PostRequestLocked(DAT_DTOS operation, std::span<const DAT_LMR_TRIPLET> local_iov,
                             DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote, DAT_COMPLETION_FLAGS flags,
                             bool invalidate, DAT_RMR_CONTEXT invalidate_key, bool& flushed) {
  std::lock_guard post(post_mutex_);
  RequestQueue::Request* request = requests_->Reserve();
  if (request == nullptr) return Status(Code::kInsufficientResources);
  const LocalUse use = operation == DAT_DTO_RDMA_READ ? LocalUse::kReceive : LocalUse::kTransmit;
  CheckedIov checked;
  if (Status status = CheckLocalIov(ia_->memory(), pz_, local_iov, use, Detail::kArg3,
                                    {request->segments, requests_->max_iov()}, checked);
      !status.ok())
    return status;
  // The transport's limit, not the EP attribute: RNIC providers enforce only the device's
  // maximum, and stock consumers rely on it (dtest asks for max_rdma_size 64 KiB, then writes 4 MiB).
  const std::uint64_t limit =
      operation == DAT_DTO_SEND ? ia_->capabilities().max_message_size : ia_->capabilities().max_rdma_size;
  std::uint64_t length = checked.length;
  if (operation == DAT_DTO_RDMA_READ) {
    // A Read brings the remote segment's length into the local vector, which must hold it.
    if (remote->segment_length > checked.length) return Status(Code::kInvalidParameter, Detail::kArg5);
    length = remote->segment_length;
  } else if (operation == DAT_DTO_RDMA_WRITE && checked.length > remote->segment_length) {
    return Status(Code::kInvalidParameter, Detail::kArg5);
  }
  if (length > limit) {
    SOFTDAT_LOG(kInfo, "dat_ep_post: %llu bytes exceed the transport's max %s size of %llu",
                static_cast<unsigned long long>(length), operation == DAT_DTO_SEND ? "message" : "RDMA",
                static_cast<unsigned long long>(limit));
    return Status(Code::kInvalidParameter, Detail::kArg3);
  }
  request->cookie = cookie;
  request->operation = operation;
  request->flags = flags;
  request->num_segments = static_cast<std::uint32_t>(checked.count);
  request->length = length;

  // Under the state lock from the check to the transport post: either the connection's end
  // (OnEnded, which takes this lock) flushes this request, or this request sees the end.
  std::lock_guard lock(mutex_);
  const DAT_EP_STATE current = state();
  if (current != DAT_EP_STATE_CONNECTED && current != DAT_EP_STATE_DISCONNECTED) {
    return Status(Code::kInvalidState, current == DAT_EP_STATE_DISCONNECT_PENDING ? Detail::kEpDisconnPending
                                                                                  : Detail::kEpNotReady);
  }
  const std::uint64_t id = requests_->Commit();
  if (current == DAT_EP_STATE_DISCONNECTED || !connection_live_) {
    // Allowed, and flushed at once (dat_ep_post_send).
    (void)requests_->Finish(id, transport::WorkStatus::kFlushed, 0);
    flushed = true;
    return Status::Ok();
  }
  transport::Work work;
  work.id = id;
  work.kind = operation == DAT_DTO_SEND        ? transport::WorkKind::kSend
              : operation == DAT_DTO_RDMA_WRITE ? transport::WorkKind::kRdmaWrite
                                                : transport::WorkKind::kRdmaRead;
  work.local = {request->segments, request->num_segments};
  work.length = length;
  work.solicited = (flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) != 0;
  work.fence = (flags & DAT_COMPLETION_BARRIER_FENCE_FLAG) != 0;
  work.invalidate = invalidate;
  work.invalidate_key = invalidate_key;
  if (remote != nullptr) {
    work.remote_address = remote->virtual_address;
    work.remote_key = remote->rmr_context;
  }
  if (Status status = endpoint_->Post(work); !status.ok()) {
    requests_->Abandon(id);
    return status;
  }
  return Status::Ok();
}

Status Ep::PostBind(Rmr* rmr, DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags, std::uint64_t& request,
                    bool& connected) {
  if ((flags & ~(DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG)) != 0 ||
      ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) &&
       (attr_.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG) == 0))
    return Status(Code::kInvalidParameter, Detail::kArg8);
  std::lock_guard post(post_mutex_);
  std::lock_guard lock(mutex_);
  const DAT_EP_STATE current = state();
  if (current != DAT_EP_STATE_CONNECTED && current != DAT_EP_STATE_DISCONNECTED)
    return Status(Code::kInvalidState, current == DAT_EP_STATE_DISCONNECT_PENDING ? Detail::kEpDisconnPending
                                                                                  : Detail::kEpNotReady);
  RequestQueue::Request* entry = requests_->Reserve();
  if (entry == nullptr) return Status(Code::kInsufficientResources);
  entry->cookie = cookie;
  entry->operation = DAT_DTO_BIND_MW;
  entry->flags = flags;
  entry->rmr = rmr;
  request = requests_->Commit();
  connected = current == DAT_EP_STATE_CONNECTED && connection_live_;
  return Status::Ok();
}

void Ep::FinishBind(std::uint64_t request, bool bound) {
  // A window is in place as soon as dat_rmr_bind returns: nothing is in flight to wait for.
  (void)requests_->Finish(request, bound ? transport::WorkStatus::kSuccess : transport::WorkStatus::kFlushed, 0);
  Deliver();
}

transport::RecvAcquire Ep::AcquireRecv(std::uint32_t msn, transport::RecvTarget& target) {
  if (device_receives_) {
    SOFTDAT_LOG(kError, "EP %p: a device transport asked for a receive buffer (message %u)",
                static_cast<void*>(this), msn);
    return transport::RecvAcquire::kRefused;
  }
  srq::RecvBuffer buffer{};
  if (srq_ == nullptr) {
    switch (recv_queue_->Take(msn, buffer)) {
      case srq::EpRecvQueue::TakeResult::kTaken: break;
      case srq::EpRecvQueue::TakeResult::kNotReady: return transport::RecvAcquire::kNotReady;
      case srq::EpRecvQueue::TakeResult::kRefused: return transport::RecvAcquire::kRefused;
    }
  } else {
    if (srq_account_ == nullptr) return transport::RecvAcquire::kRefused;
    srq::SrqPool::TakeResult taken = srq_->pool().Take(*srq_account_, msn, buffer);
    if (taken == srq::SrqPool::TakeResult::kEmpty) {
      srq_->WaitForBuffers(this);
      taken = srq_->pool().Take(*srq_account_, msn, buffer);  // see Srq::WaitForBuffers
    }
    if (taken == srq::SrqPool::TakeResult::kEmpty) return transport::RecvAcquire::kNotReady;
    if (taken == srq::SrqPool::TakeResult::kRefused) return transport::RecvAcquire::kRefused;
    CheckHighWatermarks(ReceivesHeld());
  }
  target = TargetOf(buffer);
  return transport::RecvAcquire::kTaken;
}

srq::RecvNotes Ep::NotesOf(transport::WorkStatus status, const transport::RecvInfo& info) {
  srq::RecvNotes notes{info.solicited, info.invalidated, info.invalidate_key};
  if (info.invalidated && status == transport::WorkStatus::kSuccess) {
    // Send with Invalidate: the named window of this EP's PZ stops granting access now.
    if (!Rmr::InvalidateByPeer(*ia_, pz_, info.invalidate_key)) {
      SOFTDAT_LOG(kInfo, "EP %p: peer asked to invalidate key 0x%x, which names no RMR of this PZ",
                  static_cast<void*>(this), info.invalidate_key);
      notes.invalidated = false;
    }
  }
  return notes;
}

void Ep::OnRecvDone(std::uint32_t msn, transport::WorkStatus status, const transport::RecvInfo& info) {
  const srq::RecvNotes notes = NotesOf(status, info);
  const DAT_DTO_COMPLETION_STATUS dto_status = ToDtoStatus(status);
  const Status placed = srq_ == nullptr ? recv_queue_->Place(msn, info.length, dto_status, notes)
                        : srq_account_ != nullptr
                            ? srq_->pool().Place(*srq_account_, msn, info.length, dto_status, notes)
                            : Status(Code::kInvalidState);
  if (!placed.ok()) {
    SOFTDAT_LOG(kWarn, "EP %p: the transport completed message %u, which holds no buffer (%s)",
                static_cast<void*>(this), msn, CodeName(placed.code()));
    return;
  }
  Deliver();
}

void Ep::OnDeviceRecvDone(std::uint64_t recv_id, transport::WorkStatus status, const transport::RecvInfo& info) {
  if (!device_receives_) {
    SOFTDAT_LOG(kError, "EP %p: device receive completion %llu on a software receive path",
                static_cast<void*>(this), static_cast<unsigned long long>(recv_id));
    return;
  }
  // Which message of this connection it is: for the EP's own queue the buffer's position (RC
  // completes receives in posting order, so recv_id - base is the MSN); on an SRQ, the count of
  // completions so far (the device completes in the peer's send order).
  // Only a completion that names a buffer moves the count on: a stray one must not open a gap
  // that in-order delivery would wait on forever.
  std::uint32_t msn = 0;
  std::uint64_t expected = 0;
  {
    std::lock_guard lock(mutex_);
    expected = device_recv_expected_;
    msn = srq_ == nullptr ? static_cast<std::uint32_t>(recv_id - device_recv_base_) : device_srq_msn_ + 1;
  }
  if (srq_ == nullptr && recv_id != expected) {
    SOFTDAT_LOG(kWarn, "EP %p: the device completed receive %llu, expected %llu: out of posting order",
                static_cast<void*>(this), static_cast<unsigned long long>(recv_id),
                static_cast<unsigned long long>(expected));
  }
  srq::RecvBuffer buffer{};
  bool taken = false;
  if (srq_ == nullptr) {
    taken = recv_queue_->Take(msn, buffer) == srq::EpRecvQueue::TakeResult::kTaken;
  } else if (srq_account_ != nullptr && recv_id <= UINT32_MAX) {
    taken = srq_->pool().TakePosted(*srq_account_, msn, static_cast<std::uint32_t>(recv_id), buffer) ==
            srq::SrqPool::TakeResult::kTaken;
  }
  if (!taken) {
    SOFTDAT_LOG(kWarn, "EP %p: the device completed receive %llu, which names no buffer it holds",
                static_cast<void*>(this), static_cast<unsigned long long>(recv_id));
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (srq_ == nullptr) {
      device_recv_expected_ = recv_id + 1;
    } else {
      device_srq_msn_ = msn;
    }
  }
  const srq::RecvNotes notes = NotesOf(status, info);
  // A device reports kLocalLength with what it could place at most; never more than the buffer.
  const std::uint64_t length = std::min<std::uint64_t>(info.length, buffer.capacity);
  const DAT_DTO_COMPLETION_STATUS dto_status = ToDtoStatus(status);
  const Status placed = srq_ == nullptr ? recv_queue_->Place(msn, length, dto_status, notes)
                                        : srq_->pool().Place(*srq_account_, msn, length, dto_status, notes);
  if (!placed.ok()) {
    SOFTDAT_LOG(kWarn, "EP %p: device receive %llu could not be placed (%s)", static_cast<void*>(this),
                static_cast<unsigned long long>(recv_id), CodeName(placed.code()));
    return;
  }
  Deliver();
}

void Ep::OnWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) {
  if (!requests_->Finish(id, status, length)) {
    SOFTDAT_LOG(kDebug, "EP %p: completion of unknown or finished request %llu ignored",
                static_cast<void*>(this), static_cast<unsigned long long>(id));
    return;
  }
  Deliver();
}

transport::RemoteResolution Ep::ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                              transport::RemoteAccess access) {
  const WindowView window = ia_->memory().Find(key);
  if (window.key == 0) return {transport::RemoteCheck::kInvalidKey, nullptr};
  if (window.pz != pz_ || (window.endpoint != nullptr && window.endpoint != this))
    return {transport::RemoteCheck::kNotAssociated, nullptr};
  const DAT_MEM_PRIV_FLAGS needed =
      access == transport::RemoteAccess::kRead ? DAT_MEM_PRIV_REMOTE_READ_FLAG : DAT_MEM_PRIV_REMOTE_WRITE_FLAG;
  if (!window.Allows(needed)) return {transport::RemoteCheck::kAccessRights, nullptr};
  if (!window.Contains(address, length)) return {transport::RemoteCheck::kBounds, nullptr};
  return {transport::RemoteCheck::kOk, reinterpret_cast<std::uint8_t*>(address)};
}

Status Ep::RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const {
  if (recv_queue_ != nullptr) {
    recv_queue_->RecvQuery(nbufs_allocated, bufs_alloc_span);
    return Status::Ok();
  }
  std::lock_guard lock(mutex_);
  if (device_receives_ && connection_live_) {
    // The device takes SRQ buffers without telling anyone until it completes them: what this EP
    // holds now is unknown until the connection ends (then the device holds nothing).
    if (nbufs_allocated != nullptr) *nbufs_allocated = DAT_VALUE_UNKNOWN;
    if (bufs_alloc_span != nullptr) *bufs_alloc_span = DAT_VALUE_UNKNOWN;
    return Status::Ok();
  }
  if (srq_account_ == nullptr) {
    if (nbufs_allocated != nullptr) *nbufs_allocated = 0;
    if (bufs_alloc_span != nullptr) *bufs_alloc_span = 0;
    return Status::Ok();
  }
  return srq_->pool().RecvQuery(*srq_account_, nbufs_allocated, bufs_alloc_span);
}

Status Ep::SetWatermark(DAT_COUNT soft_high_watermark, DAT_COUNT hard_high_watermark) {
  if (soft_high_watermark < 0 && soft_high_watermark != DAT_WATERMARK_INFINITE)
    return Status(Code::kInvalidParameter, Detail::kArg2);
  if (hard_high_watermark < 0 && hard_high_watermark != DAT_WATERMARK_INFINITE)
    return Status(Code::kInvalidParameter, Detail::kArg3);
  // On a device the NIC hands SRQ buffers to an EP unseen, so a finite high watermark could never
  // fire; the IA says so (srq_watermarks_supported 0x1). Refuse it rather than ignore it.
  if (device_receives_ && srq_ != nullptr &&
      (soft_high_watermark != DAT_WATERMARK_INFINITE || hard_high_watermark != DAT_WATERMARK_INFINITE)) {
    SOFTDAT_LOG(kWarn, "dat_ep_set_watermark: this device cannot count the buffers an SRQ EP holds "
                       "(srq_watermarks_supported has no EP high watermark bits)");
    return Status(Code::kModelNotSupported);
  }
  {
    std::lock_guard lock(mutex_);
    soft_high_watermark_ = soft_high_watermark;
    hard_high_watermark_ = hard_high_watermark;
    soft_armed_ = soft_high_watermark != DAT_WATERMARK_INFINITE;
  }
  // "If the new high watermark values are below the current number of Receive DTOs at EP, an
  // asynchronous event will be generated immediately."
  CheckHighWatermarks(ReceivesHeld());
  return Status::Ok();
}

void Ep::CheckHighWatermarks(std::uint32_t held) {
  bool soft = false;
  bool hard = false;
  {
    std::lock_guard lock(mutex_);
    if (soft_armed_ && held > static_cast<std::uint32_t>(soft_high_watermark_)) {
      soft_armed_ = false;  // one event per setting
      soft_watermark_pending_ = true;
      soft = true;
    }
    const DAT_EP_STATE current = state();
    if (hard_high_watermark_ != DAT_WATERMARK_INFINITE && !hard_tripped_ &&
        held > static_cast<std::uint32_t>(hard_high_watermark_) && connection_live_ &&
        (current == DAT_EP_STATE_CONNECTED || current == DAT_EP_STATE_DISCONNECT_PENDING)) {
      hard_tripped_ = true;  // the connection breaks: DAT_CONNECTION_EVENT_BROKEN
      hard = true;
    }
  }
  if (hard) {
    SOFTDAT_LOG(kInfo, "EP %p holds %u receive buffers, above its hard high watermark: breaking the connection",
                static_cast<void*>(this), held);
    endpoint_->Disconnect(false);
  }
  if (soft) Deliver();
}

void Ep::OnSrqBuffersPosted() {
  const DAT_EP_STATE current = state();
  if (current == DAT_EP_STATE_CONNECTED || current == DAT_EP_STATE_DISCONNECT_PENDING)
    endpoint_->RecvBuffersAvailable();
}

}  // namespace softdat::core
