// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The SRQ handle object: a thin binding of an srq::SrqPool (every SRQ rule of the spec: buffers,
// posting checks, low watermark, resize, waiting endpoints) to a DAT handle, its IA and PZ, the
// memory checks of posted segments, and the IA's async EVD for the low-watermark event. Receive
// completions of its buffers name the EP that took them (core/ep.h), never the SRQ; each EP
// created with the SRQ reaches the pool through its own srq::SrqAccount.
//
// On a device transport (receive model kDevice) the SRQ also owns the device's SRQ
// (transport::DeviceSrq), which the pool drives through the DeviceQueue adapter below: the pool
// posts every buffer down under its slot number, arms the device's limit event for the low
// watermark and grows the device queue when a resize needs it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "core/handle.h"
#include "core/local_iov.h"
#include "srq/device_queue.h"
#include "srq/low_watermark_listener.h"
#include "srq/srq_pool.h"
#include "transport/device_resources.h"

namespace softdat::core {

class Evd;
class Ia;
class Pz;

class Srq : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kSrq;

  // dat_srq_create. kModelNotSupported (with a log line) when the IA's transport has no SRQ. A
  // low_watermark other than DAT_SRQ_LW_DEFAULT is armed at once, so (the SRQ being empty) its
  // event fires at once, as the man page warns.
  static Status Create(Ia* ia, Pz* pz, const DAT_SRQ_ATTR& attr, Srq** out);
  // dat_srq_free: kInvalidState/kSrqInUse while an EP uses it.
  static Status Free(Srq* srq);
  // Destroys without checks (abrupt IA close, after every EP is gone).
  static void Destroy(Srq* srq);

  Status PostRecv(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie);
  void Query(DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM& param) const;
  Status Resize(DAT_COUNT max_recv_dtos);
  Status SetLowWatermark(DAT_COUNT low_watermark);

  // The receive EVDs of the EPs on this SRQ, counted (Ep::Create and Destroy, dat_ep_modify). On a
  // device with completion queues the SRQ learns that the NIC took a buffer when that EVD's CQ is
  // polled: dat_srq_query polls them first, so available_dto_count says what the device holds.
  void AddRecvEvd(Evd* evd);
  void RemoveRecvEvd(Evd* evd);

  // dat_ep_create_with_srq's rule for the EP's PZ: on a device an SRQ's buffers serve only EPs of
  // its own PZ (srq_ep_pz_difference_supported is FALSE), elsewhere any PZ of the IA.
  Status CheckEndpointPz(const Pz* pz) const;

  Ia* ia() const { return ia_; }
  Pz* pz() const { return pz_; }
  srq::SrqPool& pool() { return *pool_; }
  // The device's SRQ, which EPs created with this SRQ share (null on software transports).
  transport::DeviceSrq* device_srq() const { return device_srq_.get(); }
  // Unique across the process: lets a stale completion tell a freed SRQ from a new one that
  // reuses its handle storage.
  std::uint64_t serial() const { return serial_; }

  // Whether the pool fell below the low watermark and its event waits to be posted.
  bool low_watermark_pending() const { return low_watermark_pending_.load(std::memory_order_acquire); }
  // Posts the low-watermark event the pool recorded, if any, with no lock held (an EVD post may
  // trigger a CNO): from the consumer's own SRQ calls, from the delivery pass of an EP that took
  // the buffer that crossed it, and from the device's limit event.
  void DeliverLowWatermark();

  // Public for NewHandle; use Create.
  Srq(Ia* ia, Pz* pz, std::unique_ptr<srq::SrqPool> pool);

 private:
  // The pool fell below the low watermark: recorded here, posted by DeliverLowWatermark, because
  // the pool may say so while a transport holds its locks (a buffer taken on arrival).
  void OnLowWatermark() { low_watermark_pending_.store(true, std::memory_order_release); }
  Status CreateDeviceSrq();
  // Polls the CQs of the receive EVDs (each pinned as a user meanwhile, so none is freed).
  void PollRecvCompletionQueues() const;

  // No vtable in a handle object: the pool's listener interface is this member.
  class Listener final : public srq::LowWatermarkListener {
   public:
    explicit Listener(Srq& srq) : srq_(srq) {}
    void OnLowWatermark() override { srq_.OnLowWatermark(); }

   private:
    Srq& srq_;
  };

  // The device's SRQ as the pool sees it: transport::DeviceSrq behind srq::DeviceQueue, with the
  // device's limits and a log line for what the device refuses.
  class DeviceAdapter final : public srq::DeviceQueue, public transport::DeviceSrqEvents {
   public:
    explicit DeviceAdapter(Srq& srq) : srq_(srq) {}
    Status PostRecv(std::uint32_t slot, std::span<const srq::RecvSegment> segments) override;
    Status ArmLimit(std::uint32_t limit) override;
    Status Grow(std::uint32_t size) override;
    bool has_limit_event() const override;
    std::uint32_t max_size() const override;
    std::uint32_t size() const override { return size_.load(std::memory_order_acquire); }
    void OnLimitReached() override {
      srq_.pool_->OnDeviceLimitReached();
      srq_.DeliverLowWatermark();
    }

    std::atomic<std::uint32_t> size_{0};  // buffers the device queue was made or grown to hold

   private:
    Srq& srq_;
  };

  std::atomic<bool> low_watermark_pending_{false};
  Listener listener_{*this};
  DeviceAdapter device_adapter_{*this};

  Ia* ia_;
  Pz* pz_;
  std::unique_ptr<srq::SrqPool> pool_;
  SharedLocalIovCache iov_cache_;  // the LMR the last dat_srq_post_recv posted into
  const std::uint64_t serial_;
  mutable softdat::Mutex recv_evds_mutex_;
  std::vector<std::pair<Evd*, int>> recv_evds_;  // EVD, how many EPs of this SRQ name it
  // Device receive model. Declared after the pool, so destroyed before it: it holds the pool's buffers.
  std::unique_ptr<transport::DeviceSrq> device_srq_;
};

}  // namespace softdat::core
