// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A device SRQ: receives posted straight to the NIC, the limit event armed on the device, and a
// resize where the device supports one. Completions of its receives arrive on the CQ of the
// endpoint whose QP consumed them (see verbs_endpoint.h).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <mutex>

#include "base/mutex.h"
#include "transport/device_resources.h"
#include "transport/verbs/async_events.h"

namespace softdat::transport::verbs {

class VerbsTransport;
class VerbsPd;

class VerbsSrq final : public DeviceSrq, public AsyncTarget {
 public:
  static Status Create(VerbsTransport& transport, VerbsPd& pd, std::uint32_t max_work,
                       std::uint32_t max_segments, DeviceSrqEvents* events, std::unique_ptr<DeviceSrq>& out);
  ~VerbsSrq() override;

  Status PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) override;
  Status ArmLimit(std::uint32_t limit) override;
  Status Resize(std::uint32_t max_work) override;

  ibv_srq* srq() const { return srq_; }
  const VerbsTransport& transport() const { return transport_; }
  std::uint32_t max_work() const { return max_work_; }
  // From the device's async event (the limit), in the progress context.
  void OnAsyncEvent(ibv_event_type type) override {
    if (type == IBV_EVENT_SRQ_LIMIT_REACHED) events_->OnLimitReached();
  }

 private:
  VerbsSrq(VerbsTransport& transport, VerbsPd& pd, std::uint32_t max_segments, DeviceSrqEvents* events);

  VerbsTransport& transport_;
  VerbsPd& pd_;
  DeviceSrqEvents* events_;
  ibv_srq* srq_ = nullptr;
  std::uint32_t max_work_ = 0;
  std::uint32_t max_segments_;
  softdat::Mutex post_mutex_;  // guards sge_ (preallocated so posting never allocates)
  std::unique_ptr<ibv_sge[]> sge_;
};

}  // namespace softdat::transport::verbs
