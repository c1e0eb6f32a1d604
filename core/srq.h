// The SRQ handle object: binds an srq::SrqPool (every SRQ rule of the spec) to a DAT handle, its
// IA and PZ, the endpoints that take buffers from it, and the IA's async EVD for the low-watermark
// event. Receive completions of its buffers name the EP that took them (core/ep.h), never the SRQ.
//
// On a device transport (receive model kDevice) the SRQ also owns a transport::DeviceSrq: every
// buffer posted to the pool is posted down as recv_id = its pool slot, the device's limit event
// stands in for the pool's low watermark, and a resize that grows past what the device queue
// holds asks the device first.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "base/status.h"
#include "core/handle.h"
#include "srq/low_watermark_listener.h"
#include "srq/srq_pool.h"
#include "transport/device_resources.h"

namespace softdat::core {

class Ia;
class Pz;
class Ep;

class Srq : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kSrq;

  // dat_srq_create. A low_watermark other than DAT_SRQ_LW_DEFAULT is armed at once, so (the SRQ
  // being empty) its event fires at once, as the man page warns.
  static Status Create(Ia* ia, Pz* pz, const DAT_SRQ_ATTR* attr, Srq** out);
  // dat_srq_free: kInvalidState/kSrqInUse while an EP uses it.
  static Status Free(Srq* srq);
  // Destroys without checks (abrupt IA close, after every EP is gone).
  static void Destroy(Srq* srq);

  Status PostRecv(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie);
  Status Query(DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM* param) const;
  Status Resize(DAT_COUNT max_recv_dtos);
  Status SetLowWatermark(DAT_COUNT low_watermark);

  Ia* ia() const { return ia_; }
  Pz* pz() const { return pz_; }
  srq::SrqPool& pool() { return *pool_; }
  // The device's SRQ, which EPs created with this SRQ share (null on software transports).
  transport::DeviceSrq* device_srq() const { return device_srq_.get(); }
  // Unique across the process: lets a stale completion tell a freed SRQ from a new one that
  // reuses its handle storage.
  std::uint64_t serial() const { return serial_; }

  // Endpoints using this SRQ (dat_ep_create_with_srq / dat_ep_free). Attach fails with
  // kInsufficientResources beyond kMaxEndpoints.
  Status AttachEndpoint(Ep* ep);
  void DetachEndpoint(Ep* ep);
  // An attached EP found no buffer for a message (receiver not ready): it is told
  // (Ep::OnSrqBuffersPosted) when one is posted. The caller must try to take a buffer once more
  // after this returns: a post that raced ahead of the registration saw no waiter. (The pool's
  // mutex orders the two: if that retry misses the buffer, the post comes later and sees us.)
  void WaitForBuffers(Ep* ep);

  static constexpr std::uint32_t kMaxEndpoints = 4096;

  // Public for NewHandle; use Create.
  Srq(Ia* ia, Pz* pz, std::unique_ptr<srq::SrqPool> pool);

 private:
  void OnLowWatermark();
  void OnDeviceLimit();
  void WakeWaiters();
  Status CreateDeviceSrq();
  std::uint32_t DeviceSize(std::uint32_t pool_size) const;
  Status PostDeviceRecv(DAT_DTO_COOKIE cookie, std::span<const Segment> segments);
  Status ResizeDevice(std::uint32_t max_recv_dtos);
  Status SetDeviceLowWatermark(DAT_COUNT low_watermark);

  // No vtable in a handle object: the pool's listener interface is this member.
  class Listener final : public srq::LowWatermarkListener {
   public:
    explicit Listener(Srq& srq) : srq_(srq) {}
    void OnLowWatermark() override { srq_.OnLowWatermark(); }

   private:
    Srq& srq_;
  };
  Listener listener_{*this};

  class DeviceEvents final : public transport::DeviceSrqEvents {
   public:
    explicit DeviceEvents(Srq& srq) : srq_(srq) {}
    void OnLimitReached() override { srq_.OnDeviceLimit(); }

   private:
    Srq& srq_;
  };
  DeviceEvents device_events_{*this};

  Ia* ia_;
  Pz* pz_;
  std::unique_ptr<srq::SrqPool> pool_;
  const std::uint64_t serial_;

  // Device receive model. Declared after the pool, so destroyed before it: it holds the pool's buffers.
  std::unique_ptr<transport::DeviceSrq> device_srq_;
  std::mutex device_mutex_;
  bool limit_armed_ = false;           // one event per dat_srq_set_lw, whatever the device says
  std::uint32_t device_capacity_ = 0;  // buffers the device queue was made or grown to hold

  // Attached endpoints and which of them wait for buffers. Control path and RNR path only; the
  // vectors are reserved to kMaxEndpoints at creation, so waking never allocates.
  // Lock order: wake_mutex_ then endpoints_mutex_. A waker holds wake_mutex_ while it calls the
  // endpoints it took off waiting_, so DetachEndpoint (which takes it too) never returns while an
  // endpoint being freed is still being woken.
  std::mutex wake_mutex_;
  std::mutex endpoints_mutex_;
  std::vector<Ep*> endpoints_;
  std::vector<Ep*> waiting_;
  std::vector<Ep*> waking_;  // guarded by wake_mutex_
  std::atomic<bool> any_waiting_{false};
};

}  // namespace softdat::core
