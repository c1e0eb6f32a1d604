// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ibv_create_srq / ibv_post_srq_recv / ibv_modify_srq behind DeviceSrq.
#include "transport/verbs/verbs_srq.h"

#include "base/log.h"
#include "transport/verbs/verbs_memory.h"
#include "transport/verbs/verbs_transport.h"

namespace softdat::transport::verbs {

VerbsSrq::VerbsSrq(VerbsTransport& transport, VerbsPd& pd, std::uint32_t max_segments, DeviceSrqEvents* events)
    : AsyncTarget(transport),
      transport_(transport),
      pd_(pd),
      events_(events),
      max_segments_(std::max<std::uint32_t>(1, max_segments)),
      sge_(new ibv_sge[max_segments_]) {}

Status VerbsSrq::Create(VerbsTransport& transport, VerbsPd& pd, std::uint32_t max_work, std::uint32_t max_segments,
                        DeviceSrqEvents* events, std::unique_ptr<DeviceSrq>& out) {
  const Capabilities& caps = transport.capabilities();
  if (!caps.srq) return Status(Code::kModelNotSupported);
  if (max_work == 0 || max_work > caps.max_srq_work) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  if (max_segments > caps.max_srq_segments) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  std::unique_ptr<VerbsSrq> srq(new VerbsSrq(transport, pd, max_segments, events));
  ibv_srq_init_attr attr{};
  attr.srq_context = static_cast<AsyncTarget*>(srq.get());  // what the async event router reads
  attr.attr.max_wr = max_work;
  attr.attr.max_sge = srq->max_segments_;
  srq->srq_ = ibv_create_srq(pd.pd(), &attr);
  if (srq->srq_ == nullptr) return Status(Code::kInsufficientResources, Detail::kResourceSrq);
  srq->max_work_ = attr.attr.max_wr;
  out = std::move(srq);
  return Status::Ok();
}

VerbsSrq::~VerbsSrq() {
  if (srq_ == nullptr) return;
  // No more limit events come (one read by another IA's progress and queued for ours is dropped),
  // and one being delivered ends before the progress's turn is free.
  transport_.async_events().Detach(this, &srq_->srq_context);
  transport_.turn().WaitUnlessMine();
  ibv_destroy_srq(srq_);
}

Status VerbsSrq::PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) {
  if (segments.size() > max_segments_) return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
  std::lock_guard lock(post_mutex_);
  ibv_recv_wr wr{};
  wr.wr_id = recv_id;
  wr.sg_list = sge_.get();
  if (segments.empty()) {
    sge_[0] = pd_.EmptySge();
    wr.num_sge = 1;
  } else {
    for (std::size_t i = 0; i < segments.size(); ++i)
      sge_[i] = ibv_sge{segments[i].address, segments[i].length, segments[i].key};
    wr.num_sge = static_cast<int>(segments.size());
  }
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_srq_recv(srq_, &wr, &bad) != 0) return Status(Code::kInsufficientResources, Detail::kResourceSrq);
  return Status::Ok();
}

Status VerbsSrq::ArmLimit(std::uint32_t limit) {
  if (limit == 0) return Status::Ok();  // the device cannot disarm; core ignores a stale event
  ibv_srq_attr attr{};
  attr.srq_limit = limit;
  if (ibv_modify_srq(srq_, &attr, IBV_SRQ_LIMIT) != 0) return Status(Code::kInvalidParameter, Detail::kParamLowWatermark);
  return Status::Ok();
}

Status VerbsSrq::Resize(std::uint32_t max_work) {
  if (!transport_.capabilities().srq_resize) return Status(Code::kModelNotSupported);
  if (max_work <= max_work_) return Status::Ok();
  ibv_srq_attr attr{};
  attr.max_wr = max_work;
  if (ibv_modify_srq(srq_, &attr, IBV_SRQ_MAX_WR) != 0) return Status(Code::kInsufficientResources, Detail::kResourceSrq);
  max_work_ = max_work;
  return Status::Ok();
}

}  // namespace softdat::transport::verbs
