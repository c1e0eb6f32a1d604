// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EP data path: posting receives and requests, what the transport reports about them (buffers
// for arriving messages, placements, finished work, the target side of RDMA), receive accounting
// queries and high watermarks.
#include <algorithm>

#include "base/log.h"
#include "core/dto_event.h"
#include "core/ep.h"
#include "core/ep_counting.h"
#include "core/remote_check.h"
#include "core/ia.h"
#include "core/local_iov.h"
#include "core/memory_table.h"
#include "core/rmr.h"
#include "core/srq.h"
#include "srq/ep_recv_queue.h"

namespace softdat::core {
namespace {

constexpr DAT_COMPLETION_FLAGS kRequestPostFlags = static_cast<DAT_COMPLETION_FLAGS>(
    DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG |
    DAT_COMPLETION_BARRIER_FENCE_FLAG);
// Solicited wait is a Send's alone.
constexpr DAT_COMPLETION_FLAGS kRdmaPostFlags =
    static_cast<DAT_COMPLETION_FLAGS>(kRequestPostFlags & ~DAT_COMPLETION_SOLICITED_WAIT_FLAG);
constexpr DAT_COMPLETION_FLAGS kBindFlags = static_cast<DAT_COMPLETION_FLAGS>(
    DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG);

// A post's completion flags: only those of `allowed`, and DAT_COMPLETION_UNSIGNALLED_FLAG only
// where the EP's completion flags attribute (`attribute`) enables unsignalled completions.
Status CheckCompletionFlags(DAT_COMPLETION_FLAGS flags, DAT_COMPLETION_FLAGS allowed, DAT_COMPLETION_FLAGS attribute) {
  if ((flags & ~allowed) != 0 ||
      ((flags & DAT_COMPLETION_UNSIGNALLED_FLAG) && (attribute & DAT_COMPLETION_UNSIGNALLED_FLAG) == 0))
    return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
  return Status::Ok();
}

transport::RecvTarget TargetOf(const srq::RecvBuffer& buffer) {
  return transport::RecvTarget{std::span<const Segment>(buffer.segments, buffer.num_segments), buffer.capacity};
}

}  // namespace

Status Ep::PostRecv(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie,
                    DAT_COMPLETION_FLAGS flags) {
  std::shared_lock resources(resources_mutex_);  // dat_ep_modify may not replace receive_ meanwhile
  if (Status postable = receive_->CanPost(); !postable.ok()) return postable;
  if (num_segments < 0 || num_segments > attr_.max_recv_iov) return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
  if (num_segments > 0 && local_iov == nullptr) return Status(Code::kInvalidParameter, Detail::kParamLocalIov);
  if (Status status = CheckCompletionFlags(flags, DAT_COMPLETION_UNSIGNALLED_FLAG, attr_.recv_completion_flags);
      !status.ok())
    return status;
  SegmentRoom<srq::EpRecvQueue::kMaxRecvIov> room;
  const std::span<Segment> segments = room.span();
  CheckedIov checked;
  if (Status status = CheckLocalIov(ia_->memory(), pz_, {local_iov, static_cast<std::size_t>(num_segments)},
                                    LocalUse::kReceive, Detail::kParamLocalIov, segments, checked,
                                    SharedLocalIovCache::Use(recv_iov_cache_).get());
      !status.ok())
    return status;
  const std::span<const Segment> posted_segments = segments.first(checked.count);
  CountPostRecv(counters_, checked.length);
  srq::ReceiveSource::Posted posted;
  DAT_EP_STATE current;
  if (device_receives_) {
    // Queued and posted down under mutex_, so OnEnded (which sets DISCONNECTED under it) either
    // comes after and flushes it, or came before and the buffer stays off the ended endpoint and
    // is flushed by core alone.
    std::lock_guard lock(mutex_);
    if (Status status = receive_->Post(cookie, posted_segments, flags, posted); !status.ok()) return status;
    current = state();
    if (Status status = PostDeviceRecvLocked(posted.recv_id, posted_segments); !status.ok()) return status;
  } else {
    if (Status status = receive_->Post(cookie, posted_segments, flags, posted); !status.ok()) return status;
    current = state();
  }
  if (current == DAT_EP_STATE_DISCONNECTED) {
    resources.unlock();  // an EVD post runs with no lock held
    Deliver();           // "the posted Recv is immediately flushed to recv_evd_handle"
  } else if (posted.resumes && (current == DAT_EP_STATE_CONNECTED || current == DAT_EP_STATE_DISCONNECT_PENDING)) {
    endpoint_->RecvBuffersAvailable();  // only when a message waits for this buffer
  }
  return Status::Ok();
}

Status Ep::PostDeviceRecvLocked(std::uint64_t recv_id, std::span<const Segment> segments) {
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
    receive_->Withdraw();
    return status;
  }
  return Status::Ok();
}

Status Ep::PostSend(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie,
                    DAT_COMPLETION_FLAGS flags, bool invalidate, DAT_RMR_CONTEXT invalidate_key) {
  if (datagram_) {
    SOFTDAT_LOG(kWarn, "dat_ep_post_send: EP %p is a UD endpoint: its sends name a destination (dat_ib_post_send_ud)",
                static_cast<void*>(this));
    return Status(Code::kInvalidParameter, Detail::kParamHandle);
  }
  RequestSpec spec =
      RequestSpec::Of(DAT_DTO_SEND, transport::WorkKind::kSend, local_iov, num_segments, cookie, nullptr, flags);
  spec.invalidate = invalidate;
  spec.invalidate_key = invalidate_key;
  return PostRequest(spec);
}

Status Ep::PostRdma(DAT_DTOS operation, DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov,
                    DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote_iov, DAT_COMPLETION_FLAGS flags) {
  if (datagram_) return Status(Code::kModelNotSupported);  // UD has no RDMA
  return PostRequest(RequestSpec::Of(
      operation, operation == DAT_DTO_RDMA_WRITE ? transport::WorkKind::kRdmaWrite : transport::WorkKind::kRdmaRead,
      local_iov, num_segments, cookie, remote_iov, flags));
}

Status Ep::PostRequest(const RequestSpec& spec) {
  using transport::WorkKind;
  bool deliver = false;
  {
    // The post lock from the first check on: dat_ep_modify changes the attributes under it.
    std::lock_guard post(post_mutex_);
    const WorkKind kind = spec.kind;
    const DAT_COUNT max_iov = kind == WorkKind::kRdmaRead                                          ? attr_.max_rdma_read_iov
                              : kind == WorkKind::kRdmaWrite || kind == WorkKind::kRdmaWriteImmediate ? attr_.max_rdma_write_iov
                              : kind == WorkKind::kSend || kind == WorkKind::kSendDatagram          ? attr_.max_request_iov
                                                                                                   : 1;  // atomics
    if (spec.num_segments < 0 || spec.num_segments > max_iov)
      return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
    if (spec.num_segments > 0 && spec.local_iov == nullptr) return Status(Code::kInvalidParameter, Detail::kParamLocalIov);
    const bool sends = kind == WorkKind::kSend || kind == WorkKind::kSendDatagram;
    if (!sends) {
      if (spec.remote == nullptr) return Status(Code::kInvalidParameter, Detail::kParamRemoteBuffer);
      if (kind == WorkKind::kRdmaRead && !ia_->capabilities().rdma_read) return Status(Code::kModelNotSupported);
    }
    const DAT_COMPLETION_FLAGS allowed = sends ? kRequestPostFlags : kRdmaPostFlags;
    if (Status status = CheckCompletionFlags(spec.flags, allowed, attr_.request_completion_flags); !status.ok())
      return status;
    if (attr_.max_request_dtos == 0) return Status(Code::kInsufficientResources);
    if (Status status = PostRequestLocked(spec, deliver); !status.ok()) return status;
  }
  // Outside every lock: delivery posts to EVDs.
  if (deliver) Deliver();
  return Status::Ok();
}

Status Ep::PostRequestLocked(const RequestSpec& spec, bool& deliver) {
  using transport::WorkKind;
  RequestQueue::Request* request = requests_->Reserve();
  if (request == nullptr) return Status(Code::kInsufficientResources);
  // A Read's and an atomic's local vector is where the device writes.
  const LocalUse use = kLocalUseOf[static_cast<std::size_t>(spec.kind)];
  CheckedIov checked;
  if (Status status = CheckLocalIov(ia_->memory(), pz_, {spec.local_iov, static_cast<std::size_t>(spec.num_segments)},
                                    use, Detail::kParamLocalIov,
                                    {request->segments, requests_->max_iov()}, checked, &request_iov_cache_);
      !status.ok())
    return status;
  // The transport's limit, not the EP attribute: RNIC providers enforce only the device's
  // maximum, and stock consumers rely on it (dtest asks for max_rdma_size 64 KiB, then writes 4 MiB).
  const transport::Capabilities& caps = ia_->capabilities();
  std::uint64_t limit = caps.max_rdma_size;
  std::uint64_t length = checked.length;
  const DAT_RMR_TRIPLET* remote = spec.remote;
  switch (spec.kind) {
    case WorkKind::kSend: limit = caps.max_message_size; break;
    case WorkKind::kRdmaRead:
      // A Read brings the remote segment's length into the local vector, which must hold it.
      if (remote->segment_length > checked.length) return Status(Code::kInvalidParameter, Detail::kParamRemoteBuffer);
      length = remote->segment_length;
      break;
    case WorkKind::kRdmaWrite:
    case WorkKind::kRdmaWriteImmediate:
      if (checked.length > remote->segment_length) return Status(Code::kInvalidParameter, Detail::kParamRemoteBuffer);
      break;
    case WorkKind::kFetchAdd:
    case WorkKind::kCompareSwap:
      // The original value: 8 bytes, in one segment.
      if (checked.count != 1 || checked.length < 8) {
        SOFTDAT_LOG(kWarn, "dat_ib_post_%s: the local buffer must be one segment of at least 8 bytes (given %zu "
                    "segment(s), %llu bytes)", spec.kind == WorkKind::kFetchAdd ? "fetch_and_add" : "cmp_and_swap",
                    checked.count, static_cast<unsigned long long>(checked.length));
        return Status(Code::kInvalidParameter, Detail::kParamLocalIov);
      }
      length = 8;
      request->segments[0].length = 8;
      break;
    case WorkKind::kSendDatagram: limit = caps.max_datagram; break;
  }
  if (length > limit) {
    SOFTDAT_LOG(kWarn, "dat_ep_post: %llu bytes exceed the transport's max %s size of %llu",
                static_cast<unsigned long long>(length),
                spec.kind == WorkKind::kSend ? "message" : spec.kind == WorkKind::kSendDatagram ? "datagram" : "RDMA",
                static_cast<unsigned long long>(limit));
    return Status(Code::kInvalidParameter, Detail::kParamLocalIov);
  }
  request->cookie = spec.cookie;
  request->operation = spec.operation;
  request->flags = spec.flags;
  request->num_segments = static_cast<std::uint32_t>(checked.count);
  request->length = length;

  // Under the state lock from the check to the transport post: either the connection's end
  // (OnEnded, which takes this lock) flushes this request, or this request sees the end.
  std::lock_guard lock(mutex_);
  const DAT_EP_STATE current = state();
  // A UD EP sends whether or not it resolved a peer yet (UNCONNECTED or CONNECTED).
  if (current != DAT_EP_STATE_CONNECTED && current != DAT_EP_STATE_DISCONNECTED &&
      !(datagram_ && current == DAT_EP_STATE_UNCONNECTED)) {
    return Status(Code::kInvalidState, current == DAT_EP_STATE_DISCONNECT_PENDING ? Detail::kEpDisconnPending
                                                                                  : Detail::kEpNotReady);
  }
  const std::uint64_t id = requests_->Commit();
  CountPost(counters_, spec.kind, length);
  if (current == DAT_EP_STATE_DISCONNECTED || !connection_live_) {
    // Allowed, and flushed at once (dat_ep_post_send).
    (void)requests_->Finish(id, transport::WorkStatus::kFlushed, 0);
    deliver = true;
    return Status::Ok();
  }
  // Every member named, in order: default-initialized and then assigned, the Work was first
  // zeroed whole with `rep stos` (GCC's choice for 80 bytes), a third of this function's samples
  // in the busy same-host message rate (perf).
  const transport::Work work{
      .id = id,
      .kind = spec.kind,
      .local = {request->segments, request->num_segments},
      .length = length,
      .solicited = (spec.flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) != 0,
      .fence = (spec.flags & DAT_COMPLETION_BARRIER_FENCE_FLAG) != 0,
      .unsignaled = (spec.flags & (DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG)) != 0,
      .invalidate = spec.invalidate,
      .invalidate_key = spec.invalidate_key,
      .remote_address = remote != nullptr ? remote->virtual_address : 0,
      .remote_key = remote != nullptr ? remote->rmr_context : 0,
      .immediate = spec.immediate,
      .compare_add = spec.compare_add,
      .swap = spec.swap,
      .destination = spec.destination,
      .quiet_success = (spec.flags & DAT_COMPLETION_SUPPRESS_FLAG) != 0,
  };
  if (Status status = endpoint_->Post(work); !status.ok()) {
    if (status.code() == Code::kInvalidState) {
      // The connection is ending and its OnEnded is on its way (the transport took nothing): as
      // on an EP already disconnected, the request is accepted and flushed then (OnEnded takes
      // mutex_, held here, and flushes every request committed before it).
      SOFTDAT_LOG(kDebug, "dat_ep_post: the %s endpoint is ending; request %llu will be flushed",
                  ia_->name().c_str(), static_cast<unsigned long long>(id));
      return Status::Ok();
    }
    requests_->Abandon(id);
    return status;
  }
  if (spec.kind == WorkKind::kSendDatagram && caps.datagram_done_at_post) {
    // The datagram left (a UDP send): nothing more will be heard of it.
    (void)requests_->Finish(id, transport::WorkStatus::kSuccess, static_cast<std::uint32_t>(length));
    deliver = true;
  }
  return Status::Ok();
}

Status Ep::PostBind(Rmr* rmr, DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags, std::uint64_t& request,
                    bool& connected) {
  if (Status status = CheckCompletionFlags(flags, kBindFlags, attr_.request_completion_flags); !status.ok())
    return status;
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
  MarkReady(kDeliverRequests);  // the caller delivers once its RMR lock is released
}

transport::RecvAcquire Ep::AcquireRecv(std::uint32_t msn, transport::RecvTarget& target) {
  if (device_receives_) {
    SOFTDAT_LOG(kError, "EP %p: a device transport asked for a receive buffer (message %u)",
                static_cast<void*>(this), msn);
    return transport::RecvAcquire::kRefused;
  }
  srq::RecvBuffer buffer{};
  switch (receive_->TakeForMessage(msn, buffer)) {
    case srq::ReceiveSource::TakeResult::kTaken: break;
    case srq::ReceiveSource::TakeResult::kNotReady:
      // A datagram with no receive buffer is dropped by the transport (UD allows loss): counted.
      if (datagram_) ia_->counters().AddShared(DCNT_IA_DIAG_ERR_RQ_UDSDPRD);
      return transport::RecvAcquire::kNotReady;
    case srq::ReceiveSource::TakeResult::kRefused: return transport::RecvAcquire::kRefused;
  }
  AfterRecvTaken();
  target = TargetOf(buffer);
  return transport::RecvAcquire::kTaken;
}

void Ep::AfterRecvTaken() {
  if (srq_ != nullptr && srq_->low_watermark_pending()) MarkReady(kDeliverSrq);
  if (receive_->watermarks_armed()) {
    bool connected;
    {
      std::lock_guard lock(mutex_);
      connected = ConnectedForWatermarks();
    }
    ActOnWatermarks(receive_->CheckHighWatermarks(connected));
  }
}

transport::WholeReceive Ep::ReceiveWhole(std::uint32_t msn, std::span<const std::uint8_t> bytes,
                                         const transport::RecvInfo& info) {
  if (device_receives_) {
    SOFTDAT_LOG(kError, "EP %p: a device transport handed over message %u", static_cast<void*>(this), msn);
    return transport::WholeReceive::kRefused;
  }
  // NotesOf's without its invalidation, which the caller (TransportEvents) leaves to the steps.
  const srq::RecvNotes notes{info.solicited, false, 0, info.extension};
  const srq::ReceiveSource::WholeResult result = receive_->TakeAndPlace(msn, bytes, notes);
  switch (result) {
    case srq::ReceiveSource::WholeResult::kPlaced:
    case srq::ReceiveSource::WholeResult::kTooLong: break;
    case srq::ReceiveSource::WholeResult::kNotReady:
      if (datagram_) ia_->counters().AddShared(DCNT_IA_DIAG_ERR_RQ_UDSDPRD);
      return transport::WholeReceive::kNotReady;
    case srq::ReceiveSource::WholeResult::kRefused: return transport::WholeReceive::kRefused;
  }
  AfterRecvTaken();
  MarkReady(kDeliverReceives);
  return result == srq::ReceiveSource::WholeResult::kPlaced ? transport::WholeReceive::kPlaced
                                                             : transport::WholeReceive::kTooLong;
}

srq::RecvNotes Ep::NotesOf(transport::WorkStatus status, const transport::RecvInfo& info) {
  srq::RecvNotes notes{info.solicited, info.invalidated, info.invalidate_key, info.extension};
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
  const Status placed = receive_->Place(msn, info.length, ToDtoStatus(status), NotesOf(status, info));
  if (!placed.ok()) {
    SOFTDAT_LOG(kWarn, "EP %p: the transport completed message %u, which holds no buffer (%s)",
                static_cast<void*>(this), msn, CodeName(placed.code()));
    return;
  }
  MarkReady(kDeliverReceives);
}

void Ep::OnDeviceRecvDone(std::uint64_t recv_id, transport::WorkStatus status, const transport::RecvInfo& info) {
  if (!device_receives_) {
    SOFTDAT_LOG(kError, "EP %p: device receive completion %llu on a software receive path",
                static_cast<void*>(this), static_cast<unsigned long long>(recv_id));
    return;
  }
  // Taken and placed in one step (the receive source clamps the length to the buffer). An RDMA
  // Write with immediate data placed nothing in it.
  std::uint32_t msn = 0;
  const std::uint64_t length = info.extension.immediate ? 0 : info.length;
  if (receive_->CompleteDeviceChosen(recv_id, length, ToDtoStatus(status), NotesOf(status, info), msn) !=
      srq::ReceiveSource::TakeResult::kTaken) {
    WarnUnknownDeviceRecv(recv_id);
    return;
  }
  MarkReady(kDeliverReceives);
}

void Ep::WarnUnknownDeviceRecv(std::uint64_t recv_id) const {
  SOFTDAT_LOG(kWarn, "EP %p: the device completed receive %llu, which names no buffer it holds",
              static_cast<const void*>(this), static_cast<unsigned long long>(recv_id));
}

void Ep::OnWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) {
  if (FinishRequest(id, status, length)) MarkReady(kDeliverRequests);
}

bool Ep::FinishRequest(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) {
  if (requests_->Finish(id, status, length)) return true;
  SOFTDAT_LOG(kDebug, "EP %p: completion of unknown or finished request %llu ignored", static_cast<void*>(this),
              static_cast<unsigned long long>(id));
  return false;
}

transport::RemoteResolution Ep::ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                              transport::RemoteAccess access) {
  const transport::RemoteResolution resolved = ResolveWindow(ia_->memory().Find(key), pz_, this, address, length, access);
  // What an RNIC's responder counts as remote access errors (DAT_IB diagnostic counter).
  if (resolved.check != transport::RemoteCheck::kOk) ia_->counters().AddShared(DCNT_IA_DIAG_ERR_RQ_RAE);
  return resolved;
}

Status Ep::RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const {
  std::shared_lock resources(resources_mutex_);
  receive_->RecvQuery(nbufs_allocated, bufs_alloc_span);
  return Status::Ok();
}

Status Ep::SetWatermark(DAT_COUNT soft_high_watermark, DAT_COUNT hard_high_watermark) {
  std::shared_lock resources(resources_mutex_);
  bool connected;
  {
    std::lock_guard lock(mutex_);
    connected = ConnectedForWatermarks();
  }
  srq::ReceiveSource::Crossing crossed;
  if (Status status = receive_->SetHighWatermarks(soft_high_watermark, hard_high_watermark, connected, crossed);
      !status.ok())
    return status;
  // "If the new high watermark values are below the current number of Receive DTOs at EP, an
  // asynchronous event will be generated immediately."
  ActOnWatermarks(crossed);
  resources.unlock();  // an EVD post runs with no lock held
  Deliver(0);          // the consumer's own call: what the crossing made ready goes out now
  return Status::Ok();
}

bool Ep::ConnectedForWatermarks() const {
  const DAT_EP_STATE current = state();
  return connection_live_ && (current == DAT_EP_STATE_CONNECTED || current == DAT_EP_STATE_DISCONNECT_PENDING);
}

void Ep::ActOnWatermarks(srq::ReceiveSource::Crossing crossed) {
  if (!crossed.soft && !crossed.hard) return;
  {
    std::lock_guard lock(mutex_);
    if (crossed.soft) soft_watermark_pending_ = true;
    if (crossed.hard) broken_by_watermark_ = true;  // the connection ends as BROKEN
  }
  if (crossed.hard) {
    SOFTDAT_LOG(kInfo, "EP %p holds %u receive buffers, above its hard high watermark: breaking the connection",
                static_cast<void*>(this), receive_->held());
    endpoint_->Disconnect(false);
  }
  if (crossed.soft) MarkReady(kDeliverAll);
}

void Ep::OnSrqBuffersPosted() {
  const DAT_EP_STATE current = state();
  if (current == DAT_EP_STATE_CONNECTED || current == DAT_EP_STATE_DISCONNECT_PENDING)
    endpoint_->RecvBuffersAvailable();
}

}  // namespace softdat::core
