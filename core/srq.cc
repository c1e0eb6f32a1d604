// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// SRQ create, free, post, query, resize and low watermark: handle and memory checks here, every
// SRQ rule in srq::SrqPool.
#include "core/srq.h"

#include <algorithm>

#include "base/log.h"
#include "core/async_events.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/local_iov.h"
#include "core/pz.h"

namespace softdat::core {
namespace {

std::atomic<std::uint64_t> next_serial{1};

}  // namespace

Srq::Srq(Ia* ia, Pz* pz, std::unique_ptr<srq::SrqPool> pool)
    : ia_(ia), pz_(pz), pool_(std::move(pool)), serial_(next_serial.fetch_add(1)) {}

Status Srq::Create(Ia* ia, Pz* pz, const DAT_SRQ_ATTR& attr, Srq** out) {
  if (!ia->capabilities().srq) {
    SOFTDAT_LOG(kWarn, "dat_srq_create: the %s transport has no shared receive queues", ia->name().c_str());
    return Status(Code::kModelNotSupported);
  }
  if (pz->ia() != ia) return Status(Code::kInvalidHandle, Detail::kPz);
  const SrqLimits limits = ia->srq_limits();
  if (attr.max_recv_dtos < 1 || static_cast<std::uint32_t>(attr.max_recv_dtos) > limits.max_recv_dtos ||
      attr.max_recv_iov < 0 || static_cast<std::uint32_t>(attr.max_recv_iov) > limits.max_recv_iov ||
      attr.low_watermark < 0 || attr.low_watermark > attr.max_recv_dtos) {
    SOFTDAT_LOG(kWarn,
                "dat_srq_create: attributes max_recv_dtos=%d max_recv_iov=%d low_watermark=%d out of "
                "range for %s (max_recv_dtos 1..%u, max_recv_iov 0..%u, low_watermark 0..max_recv_dtos)",
                attr.max_recv_dtos, attr.max_recv_iov, attr.low_watermark, ia->name().c_str(),
                limits.max_recv_dtos, limits.max_recv_iov);
    return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  }
  std::unique_ptr<srq::SrqPool> pool;
  if (Status status = srq::SrqPool::Create(static_cast<std::uint32_t>(attr.max_recv_dtos),
                                           static_cast<std::uint32_t>(attr.max_recv_iov), nullptr, pool);
      !status.ok())
    return status;
  Srq* srq = NewHandle<Srq>(ia->provider, ia, pz, std::move(pool));
  if (ia->capabilities().receive_model == transport::ReceiveModel::kDevice) {
    if (Status status = srq->CreateDeviceSrq(); !status.ok()) {
      DeleteHandle(srq);
      return status;
    }
  }
  srq->pool_->SetListener(&srq->listener_);
  pz->AddUser();
  ia->Track(srq);
  *out = srq;
  if (attr.low_watermark != DAT_SRQ_LW_DEFAULT) (void)srq->SetLowWatermark(attr.low_watermark);
  return Status::Ok();
}

Status Srq::CreateDeviceSrq() {
  const srq::SrqPool::Snapshot shape = pool_->Query();
  // As large as the pool, but never past what the device offers (the pool rounds sizes up to a
  // power of two; the device's maximum need not be one).
  const std::uint32_t size = std::min(shape.max_recv_dtos, ia_->capabilities().max_srq_work);
  if (Status status = ia_->transport().CreateDeviceSrq(*pz_->domain(), size, shape.max_recv_iov,
                                                       &device_adapter_, device_srq_);
      !status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_srq_create: the %s device cannot make an SRQ of %u buffers of %u segments (%s)",
                ia_->name().c_str(), size, shape.max_recv_iov, CodeName(status.code()));
    return status;
  }
  if (device_srq_ == nullptr) {
    SOFTDAT_LOG(kError, "dat_srq_create: the %s transport made no device SRQ", ia_->name().c_str());
    return Status(Code::kInternal);
  }
  device_adapter_.size_.store(size, std::memory_order_release);
  pool_->AttachDevice(&device_adapter_);
  return Status::Ok();
}

Status Srq::Free(Srq* srq) {
  if (const auto users = srq->pool_->user_count(); users > 0) {
    SOFTDAT_LOG(kWarn, "dat_srq_free: SRQ %p is still used by %u EPs: free them first", static_cast<void*>(srq),
                static_cast<unsigned>(users));
    return Status(Code::kInvalidState, Detail::kSrqInUse);
  }
  srq->ia_->Untrack(srq);
  Destroy(srq);
  return Status::Ok();
}

void Srq::Destroy(Srq* srq) {
  srq->pool_->SetListener(nullptr);
  srq->device_srq_.reset();  // no limit event after this
  srq->pz_->RemoveUser();
  DeleteHandle(srq);
}

Status Srq::CheckEndpointPz(const Pz* pz) const {
  // The NIC checks an SRQ buffer's key against the PD of the QP that takes it, so an EP of another
  // PZ could never use one.
  if (pz != pz_ && device_srq_ != nullptr) {
    SOFTDAT_LOG(kWarn, "dat_ep_create_with_srq: this device cannot share an SRQ across PZs "
                       "(srq_ep_pz_difference_supported is FALSE)");
    return Status(Code::kModelNotSupported);
  }
  return Status::Ok();
}

Status Srq::PostRecv(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie) {
  const srq::SrqPool::Snapshot shape = pool_->Query();
  if (num_segments < 0 || static_cast<std::uint32_t>(num_segments) > shape.max_recv_iov)
    return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
  if (num_segments > 0 && local_iov == nullptr) return Status(Code::kInvalidParameter, Detail::kParamLocalIov);
  SegmentRoom<srq::SrqPool::kMaxRecvIov> room;
  const std::span<Segment> segments = room.span();
  CheckedIov checked;
  const std::span<const DAT_LMR_TRIPLET> iov(local_iov, static_cast<std::size_t>(num_segments));
  if (Status status = CheckLocalIov(ia_->memory(), pz_, iov, LocalUse::kReceive, Detail::kParamLocalIov,
                                    segments, checked, SharedLocalIovCache::Use(iov_cache_).get());
      !status.ok())
    return status;
  const Status status = pool_->Post(cookie, segments.first(checked.count));
  DeliverLowWatermark();
  return status;
}

void Srq::AddRecvEvd(Evd* evd) {
  if (evd == nullptr || evd->completion_queue() == nullptr) return;
  std::lock_guard lock(recv_evds_mutex_);
  for (auto& [known, count] : recv_evds_) {
    if (known == evd) {
      ++count;
      return;
    }
  }
  recv_evds_.emplace_back(evd, 1);
}

void Srq::RemoveRecvEvd(Evd* evd) {
  if (evd == nullptr || evd->completion_queue() == nullptr) return;
  std::lock_guard lock(recv_evds_mutex_);
  for (auto it = recv_evds_.begin(); it != recv_evds_.end(); ++it) {
    if (it->first == evd && --it->second == 0) {
      recv_evds_.erase(it);
      return;
    }
  }
}

void Srq::PollRecvCompletionQueues() const {
  std::vector<Evd*> evds;
  {
    std::lock_guard lock(recv_evds_mutex_);
    for (const auto& [evd, count] : recv_evds_) {
      evd->AddUser();  // not freed while polled (dat_evd_free answers "in use" meanwhile)
      evds.push_back(evd);
    }
  }
  for (Evd* evd : evds) {
    // Into the EVD's ring: the consumer dequeues them as usual.
    (void)evd->completion_queue()->Poll(UINT32_MAX);
    evd->RemoveUser();
  }
}

void Srq::Query(DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM& param) const {
  if (mask & DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT) PollRecvCompletionQueues();
  const srq::SrqPool::Snapshot snapshot = pool_->Query();
  if (mask & DAT_SRQ_FIELD_IA_HANDLE) param.ia_handle = ia_;
  if (mask & DAT_SRQ_FIELD_SRQ_STATE) param.srq_state = DAT_SRQ_STATE_OPERATIONAL;
  if (mask & DAT_SRQ_FIELD_PZ_HANDLE) param.pz_handle = pz_;
  if (mask & DAT_SRQ_FIELD_MAX_RECV_DTO) param.max_recv_dtos = static_cast<DAT_COUNT>(snapshot.max_recv_dtos);
  if (mask & DAT_SRQ_FIELD_MAX_RECV_IOV) param.max_recv_iov = static_cast<DAT_COUNT>(snapshot.max_recv_iov);
  if (mask & DAT_SRQ_FIELD_LOW_WATERMARK) param.low_watermark = static_cast<DAT_COUNT>(snapshot.low_watermark);
  if (mask & DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT)
    param.available_dto_count = static_cast<DAT_COUNT>(snapshot.available_dto_count);
  if (mask & DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT)
    param.outstanding_dto_count = static_cast<DAT_COUNT>(snapshot.outstanding_dto_count);
}

Status Srq::Resize(DAT_COUNT max_recv_dtos) {
  if (max_recv_dtos < 1 || static_cast<std::uint32_t>(max_recv_dtos) > ia_->srq_limits().max_recv_dtos)
    return Status(Code::kInvalidParameter, Detail::kParamSrqMaxRecvDto);
  const Status status = pool_->Resize(static_cast<std::uint32_t>(max_recv_dtos));
  DeliverLowWatermark();
  return status;
}

Status Srq::SetLowWatermark(DAT_COUNT low_watermark) {
  const Status status = pool_->SetLowWatermark(low_watermark);
  DeliverLowWatermark();
  return status;
}

void Srq::DeliverLowWatermark() {
  if (!low_watermark_pending_.load(std::memory_order_acquire) ||
      !low_watermark_pending_.exchange(false, std::memory_order_acq_rel))
    return;
  Evd* async = ia_->async_evd();
  if (async == nullptr) {
    SOFTDAT_LOG(kWarn, "SRQ %p fell below its low watermark, but its IA has no async EVD to tell",
                static_cast<void*>(this));
    return;
  }
  async->Post(AsyncEvent(kWatermarkEventNumber, async, this, DAT_SRQ_LOW_WATERMARK_EVENT));
}

Status Srq::DeviceAdapter::PostRecv(std::uint32_t slot, std::span<const srq::RecvSegment> segments) {
  const Status status = srq_.device_srq_->PostRecv(slot, segments);
  if (!status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_srq_post_recv: the %s device refused the receive (%s)", srq_.ia_->name().c_str(),
                CodeName(status.code()));
  }
  return status;
}

Status Srq::DeviceAdapter::ArmLimit(std::uint32_t limit) {
  const Status status = srq_.device_srq_->ArmLimit(limit);
  // kInvalidParameter for a limit in range means "already below it", which the pool handles.
  if (!status.ok() && status.code() != Code::kInvalidParameter) {
    SOFTDAT_LOG(kWarn, "dat_srq_set_lw: the %s device refused the SRQ limit %u (%s)", srq_.ia_->name().c_str(),
                limit, CodeName(status.code()));
  }
  return status;
}

Status Srq::DeviceAdapter::Grow(std::uint32_t size) {
  const Status status = srq_.ia_->capabilities().srq_resize ? srq_.device_srq_->Resize(size)
                                                           : Status(Code::kModelNotSupported);
  if (!status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_srq_resize: the %s device cannot grow its SRQ from %u to %u buffers (%s)%s",
                srq_.ia_->name().c_str(), this->size(), size, CodeName(status.code()),
                status.code() == Code::kModelNotSupported ? ": it cannot resize SRQs (siw cannot)" : "");
    return status;
  }
  size_.store(size, std::memory_order_release);
  return Status::Ok();
}

bool Srq::DeviceAdapter::has_limit_event() const { return srq_.ia_->capabilities().srq_limit; }

std::uint32_t Srq::DeviceAdapter::max_size() const { return srq_.ia_->capabilities().max_srq_work; }

}  // namespace softdat::core
