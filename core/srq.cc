// SRQ create, free, post, query, resize and low watermark, and the receiver-not-ready wakeups of
// the endpoints that take buffers from it.
#include "core/srq.h"

#include <algorithm>
#include <bit>
#include <span>

#include "base/log.h"
#include "core/async_events.h"
#include "core/ep.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/local_iov.h"
#include "core/pz.h"

namespace softdat::core {
namespace {

std::atomic<std::uint64_t> next_serial{1};

}  // namespace

Srq::Srq(Ia* ia, Pz* pz, std::unique_ptr<srq::SrqPool> pool)
    : ia_(ia), pz_(pz), pool_(std::move(pool)), serial_(next_serial.fetch_add(1)) {
  endpoints_.reserve(kMaxEndpoints);
  waiting_.reserve(kMaxEndpoints);
  waking_.reserve(kMaxEndpoints);
}

Status Srq::Create(Ia* ia, Pz* pz, const DAT_SRQ_ATTR* attr, Srq** out) {
  if (attr == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
  if (out == nullptr) return Status(Code::kInvalidParameter, Detail::kArg4);
  if (pz->ia() != ia) return Status(Code::kInvalidHandle, Detail::kPz);
  const SrqLimits limits = ia->srq_limits();
  if (attr->max_recv_dtos < 1 || static_cast<std::uint32_t>(attr->max_recv_dtos) > limits.max_recv_dtos ||
      attr->max_recv_iov < 0 || static_cast<std::uint32_t>(attr->max_recv_iov) > limits.max_recv_iov ||
      attr->low_watermark < 0 || attr->low_watermark > attr->max_recv_dtos) {
    SOFTDAT_LOG(kInfo,
                "dat_srq_create: attributes max_recv_dtos=%d max_recv_iov=%d low_watermark=%d out of "
                "range (max_recv_dtos 1..%u, max_recv_iov 0..%u, low_watermark 0..max_recv_dtos)",
                attr->max_recv_dtos, attr->max_recv_iov, attr->low_watermark, limits.max_recv_dtos,
                limits.max_recv_iov);
    return Status(Code::kInvalidParameter, Detail::kArg3);
  }
  std::unique_ptr<srq::SrqPool> pool;
  if (Status status = srq::SrqPool::Create(static_cast<std::uint32_t>(attr->max_recv_dtos),
                                           static_cast<std::uint32_t>(attr->max_recv_iov), nullptr, pool);
      !status.ok())
    return status;
  Srq* srq = NewHandle<Srq>(ia->provider, ia, pz, std::move(pool));
  if (ia->capabilities().receive_model == transport::ReceiveModel::kDevice) {
    // The device's limit event stands in for the pool's watermark, so the pool keeps no listener.
    if (Status status = srq->CreateDeviceSrq(); !status.ok()) {
      DeleteHandle(srq);
      return status;
    }
  } else {
    srq->pool_->SetListener(&srq->listener_);
  }
  pz->AddUser();
  ia->Track(srq);
  *out = srq;
  if (attr->low_watermark != DAT_SRQ_LW_DEFAULT) (void)srq->SetLowWatermark(attr->low_watermark);
  return Status::Ok();
}

// The device queue for a pool of `pool_size` buffers: as large, but never past what the device
// offers (the pool rounds sizes up to a power of two; the device's maximum need not be one, and
// the consumer asked for no more than that maximum).
std::uint32_t Srq::DeviceSize(std::uint32_t pool_size) const {
  return std::min(pool_size, ia_->capabilities().max_srq_work);
}

Status Srq::CreateDeviceSrq() {
  const srq::SrqPool::Snapshot shape = pool_->Query();
  const std::uint32_t size = DeviceSize(shape.max_recv_dtos);
  if (Status status = ia_->transport().CreateDeviceSrq(*pz_->domain(), size, shape.max_recv_iov, &device_events_,
                                                       device_srq_);
      !status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_srq_create: the %s device cannot make an SRQ of %u buffers of %u segments (%s)",
                ia_->name().c_str(), size, shape.max_recv_iov, CodeName(status.code()));
    return status;
  }
  if (device_srq_ == nullptr) {
    SOFTDAT_LOG(kError, "dat_srq_create: the %s transport made no device SRQ", ia_->name().c_str());
    return Status(Code::kInternal);
  }
  device_capacity_ = size;
  return Status::Ok();
}

Status Srq::Free(Srq* srq) {
  {
    std::lock_guard lock(srq->endpoints_mutex_);
    if (!srq->endpoints_.empty()) return Status(Code::kInvalidState, Detail::kSrqInUse);
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

Status Srq::PostRecv(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie) {
  const srq::SrqPool::Snapshot shape = pool_->Query();
  if (num_segments < 0 || static_cast<std::uint32_t>(num_segments) > shape.max_recv_iov)
    return Status(Code::kInvalidParameter, Detail::kArg2);
  if (num_segments > 0 && local_iov == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
  Segment segments[srq::SrqPool::kMaxRecvIov];
  CheckedIov checked;
  const std::span<const DAT_LMR_TRIPLET> iov(local_iov, static_cast<std::size_t>(num_segments));
  if (Status status = CheckLocalIov(ia_->memory(), pz_, iov, LocalUse::kReceive, Detail::kArg3,
                                    segments, checked);
      !status.ok())
    return status;
  if (device_srq_ != nullptr) return PostDeviceRecv(cookie, std::span<const Segment>(segments, checked.count));
  if (Status status = pool_->Post(cookie, std::span<const Segment>(segments, checked.count));
      !status.ok())
    return status;
  if (any_waiting_.load(std::memory_order_acquire)) WakeWaiters();
  return Status::Ok();
}

Status Srq::PostDeviceRecv(DAT_DTO_COOKIE cookie, std::span<const Segment> segments) {
  // The pool first: it enforces the queue limit, and a completion racing the post finds the slot.
  std::uint32_t slot = 0;
  if (Status status = pool_->Post(cookie, segments, &slot); !status.ok()) return status;
  if (Status status = device_srq_->PostRecv(slot, segments); !status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_srq_post_recv: the %s device refused the receive (%s)", ia_->name().c_str(),
                CodeName(status.code()));
    (void)pool_->Withdraw(slot);
    return status;
  }
  return Status::Ok();
}

Status Srq::Query(DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM* param) const {
  if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
  const srq::SrqPool::Snapshot snapshot = pool_->Query();
  if (mask & DAT_SRQ_FIELD_IA_HANDLE) param->ia_handle = ia_;
  if (mask & DAT_SRQ_FIELD_SRQ_STATE) param->srq_state = DAT_SRQ_STATE_OPERATIONAL;
  if (mask & DAT_SRQ_FIELD_PZ_HANDLE) param->pz_handle = pz_;
  if (mask & DAT_SRQ_FIELD_MAX_RECV_DTO) param->max_recv_dtos = static_cast<DAT_COUNT>(snapshot.max_recv_dtos);
  if (mask & DAT_SRQ_FIELD_MAX_RECV_IOV) param->max_recv_iov = static_cast<DAT_COUNT>(snapshot.max_recv_iov);
  if (mask & DAT_SRQ_FIELD_LOW_WATERMARK) param->low_watermark = static_cast<DAT_COUNT>(snapshot.low_watermark);
  if (mask & DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT)
    param->available_dto_count = static_cast<DAT_COUNT>(snapshot.available_dto_count);
  if (mask & DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT)
    param->outstanding_dto_count = static_cast<DAT_COUNT>(snapshot.outstanding_dto_count);
  return Status::Ok();
}

Status Srq::Resize(DAT_COUNT max_recv_dtos) {
  if (max_recv_dtos < 1 || static_cast<std::uint32_t>(max_recv_dtos) > ia_->srq_limits().max_recv_dtos)
    return Status(Code::kInvalidParameter, Detail::kArg2);
  if (device_srq_ != nullptr) return ResizeDevice(static_cast<std::uint32_t>(max_recv_dtos));
  return pool_->Resize(static_cast<std::uint32_t>(max_recv_dtos));
}

Status Srq::ResizeDevice(std::uint32_t max_recv_dtos) {
  // srq/'s rules first (outstanding buffers, low watermark): a refused resize touches no device.
  if (Status status = pool_->CheckResize(max_recv_dtos); !status.ok()) return status;
  const std::uint32_t size = DeviceSize(std::bit_ceil(max_recv_dtos));
  {
    // Serializes resizes, so device_capacity_ only grows. Shrinking leaves the device queue as
    // it is: the pool's limit is what keeps posts within the new size.
    std::lock_guard lock(device_mutex_);
    if (size > device_capacity_) {
      const Status status = ia_->capabilities().srq_resize ? device_srq_->Resize(size)
                                                           : Status(Code::kModelNotSupported);
      if (!status.ok()) {
        SOFTDAT_LOG(kWarn, "dat_srq_resize: the %s device cannot grow its SRQ from %u to %u buffers (%s)%s",
                    ia_->name().c_str(), device_capacity_, size, CodeName(status.code()),
                    status.code() == Code::kModelNotSupported ? ": it cannot resize SRQs (siw cannot)" : "");
        return status;
      }
      device_capacity_ = size;
    }
  }
  return pool_->Resize(max_recv_dtos);
}

Status Srq::SetLowWatermark(DAT_COUNT low_watermark) {
  if (device_srq_ != nullptr) return SetDeviceLowWatermark(low_watermark);
  return pool_->SetLowWatermark(low_watermark);
}

Status Srq::SetDeviceLowWatermark(DAT_COUNT low_watermark) {
  if (!ia_->capabilities().srq_limit) {
    SOFTDAT_LOG(kWarn, "dat_srq_set_lw: the %s device has no SRQ limit event", ia_->name().c_str());
    return Status(Code::kModelNotSupported);
  }
  // The pool checks the value and keeps it (dat_srq_query, resize rules); having no listener, it
  // raises nothing itself.
  if (Status status = pool_->SetLowWatermark(low_watermark); !status.ok()) return status;
  const auto limit = static_cast<std::uint32_t>(low_watermark);
  bool below = false;
  {
    std::lock_guard lock(device_mutex_);
    // The pool counts buffers the device took but has not completed as still on the SRQ, so if
    // even its count is below the watermark the device's is too: fire now, as the software path
    // does, and leave the device disarmed.
    below = limit != 0 && pool_->Query().available_dto_count < limit;
    limit_armed_ = limit != 0 && !below;
  }
  const Status armed = device_srq_->ArmLimit(below ? 0 : limit);
  if (!armed.ok()) {
    {
      std::lock_guard lock(device_mutex_);
      limit_armed_ = false;
    }
    if (limit == 0 || below || armed.code() != Code::kInvalidParameter) {
      SOFTDAT_LOG(kWarn, "dat_srq_set_lw: the %s device refused the SRQ limit %u (%s)", ia_->name().c_str(),
                  limit, CodeName(armed.code()));
      return armed;
    }
    // The value is in range (the pool checked it), so the device refuses because it already
    // holds fewer buffers than that (rxe: EINVAL): the event is due now.
    SOFTDAT_LOG(kInfo, "dat_srq_set_lw: the %s device is already below %u buffers", ia_->name().c_str(), limit);
    below = true;
  }
  if (below) OnLowWatermark();
  return Status::Ok();
}

void Srq::OnDeviceLimit() {
  {
    std::lock_guard lock(device_mutex_);
    if (!limit_armed_) {
      SOFTDAT_LOG(kInfo, "SRQ %p: device limit event without an armed low watermark, ignored",
                  static_cast<void*>(this));
      return;
    }
    limit_armed_ = false;
  }
  OnLowWatermark();
}

void Srq::OnLowWatermark() {
  Evd* async = ia_->async_evd();
  if (async == nullptr) {
    SOFTDAT_LOG(kWarn, "SRQ %p fell below its low watermark, but its IA has no async EVD to tell",
                static_cast<void*>(this));
    return;
  }
  async->Post(AsyncEvent(kWatermarkEventNumber, async, this, DAT_SRQ_LOW_WATERMARK_EVENT));
}

Status Srq::AttachEndpoint(Ep* ep) {
  std::lock_guard lock(endpoints_mutex_);
  if (endpoints_.size() >= kMaxEndpoints) return Status(Code::kInsufficientResources, Detail::kResourceSrq);
  endpoints_.push_back(ep);
  return Status::Ok();
}

void Srq::DetachEndpoint(Ep* ep) {
  std::lock_guard wake(wake_mutex_);
  std::lock_guard lock(endpoints_mutex_);
  std::erase(endpoints_, ep);
  std::erase(waiting_, ep);
  any_waiting_.store(!waiting_.empty(), std::memory_order_release);
}

void Srq::WaitForBuffers(Ep* ep) {
  std::lock_guard lock(endpoints_mutex_);
  if (std::find(waiting_.begin(), waiting_.end(), ep) == waiting_.end()) waiting_.push_back(ep);
  any_waiting_.store(true, std::memory_order_release);
}

void Srq::WakeWaiters() {
  std::lock_guard wake(wake_mutex_);
  {
    std::lock_guard lock(endpoints_mutex_);
    waking_.swap(waiting_);
    waiting_.clear();
    any_waiting_.store(false, std::memory_order_release);
  }
  for (Ep* ep : waking_) ep->OnSrqBuffersPosted();
  waking_.clear();
}

}  // namespace softdat::core
