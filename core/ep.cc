// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EP create, free, query, modify and status, and the delivery of its events to EVDs.
#include "core/ep.h"

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "core/address_handle.h"
#include "core/async_events.h"
#include "core/dto_event.h"
#include "core/ep_counting.h"
#include "core/ib_event.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/pz.h"
#include "core/srq.h"
#include "core/srq_buffer_release.h"
#include "srq/ep_recv_queue.h"

namespace softdat::core {
namespace {

constexpr DAT_COMPLETION_FLAGS kRecvAttrFlags = static_cast<DAT_COMPLETION_FLAGS>(
    DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_EVD_THRESHOLD_FLAG);
constexpr DAT_COMPLETION_FLAGS kRequestAttrFlags = static_cast<DAT_COMPLETION_FLAGS>(
    DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_EVD_THRESHOLD_FLAG);

// What dat_ep_create with null attributes gets: modest sizes every transport carries.
DAT_EP_ATTR DefaultAttributes(const transport::Capabilities& caps, bool with_srq) {
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.max_message_size = caps.max_message_size;
  attr.max_rdma_size = caps.max_rdma_size;
  attr.qos = DAT_QOS_BEST_EFFORT;
  // DAT: UNSIGNALLED is the default Recv completion flag of an SRQ EP (and means "signal all").
  attr.recv_completion_flags = with_srq ? DAT_COMPLETION_UNSIGNALLED_FLAG : DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_recv_dtos = with_srq ? 0 : static_cast<DAT_COUNT>(std::min<std::uint32_t>(64, caps.max_recv_work));
  attr.max_request_dtos = static_cast<DAT_COUNT>(std::min<std::uint32_t>(64, caps.max_send_work));
  attr.max_recv_iov = static_cast<DAT_COUNT>(std::min<std::uint32_t>(4, caps.max_segments));
  attr.max_request_iov = static_cast<DAT_COUNT>(std::min<std::uint32_t>(4, caps.max_segments));
  attr.max_rdma_read_in = static_cast<DAT_COUNT>(std::min<std::uint32_t>(4, caps.max_rdma_read_in));
  attr.max_rdma_read_out = static_cast<DAT_COUNT>(std::min<std::uint32_t>(4, caps.max_rdma_read_out));
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  attr.max_rdma_read_iov = static_cast<DAT_COUNT>(std::min<std::uint32_t>(4, caps.max_segments));
  attr.max_rdma_write_iov = static_cast<DAT_COUNT>(std::min<std::uint32_t>(4, caps.max_segments));
  return attr;
}

bool InRange(DAT_COUNT value, std::uint32_t max) {
  return value >= 0 && static_cast<std::uint32_t>(value) <= max;
}

// Zero limits mean "whatever the provider allows" (sizes) or "as for other requests" (RDMA iov
// counts): the reference provider never enforces them, and stock consumers written for DAT 1.2
// (dtest) leave them 0. dat_ep_query reports the value in force.
void FillZeroLimits(const transport::Capabilities& caps, DAT_EP_ATTR& attr) {
  if (attr.max_message_size == 0) attr.max_message_size = caps.max_message_size;
  if (attr.max_rdma_size == 0) attr.max_rdma_size = caps.max_rdma_size;
  if (attr.max_rdma_read_iov == 0) attr.max_rdma_read_iov = attr.max_request_iov;
  if (attr.max_rdma_write_iov == 0) attr.max_rdma_write_iov = attr.max_request_iov;
}

}  // namespace

Ep::Ep(Ia* ia, Pz* pz, Evd* recv_evd, Evd* request_evd, Evd* connect_evd, Srq* srq,
       const DAT_EP_ATTR& attr)
    : ia_(ia), pz_(pz), recv_evd_(recv_evd), request_evd_(request_evd), connect_evd_(connect_evd),
      srq_(srq), attr_(attr),
      device_receives_(ia->capabilities().receive_model == transport::ReceiveModel::kDevice),
      datagram_(static_cast<int>(attr.service_type) == DAT_IB_SERVICE_TYPE_UD) {}

Ep::~Ep() = default;

// The first EP attribute the IA cannot give, or nullptr. Its name is what the log line says.
const char* Ep::RefusedAttribute(const DAT_EP_ATTR& attr) {
  const transport::Capabilities& caps = ia_->capabilities();
  const bool ud = static_cast<int>(attr.service_type) == DAT_IB_SERVICE_TYPE_UD;
  if (attr.service_type != DAT_SERVICE_TYPE_RC && !ud) return "service_type";
  // A UD EP's messages are single datagrams; its receives come from its own queue.
  if (ud && (attr.max_message_size > caps.max_datagram || srq_ != nullptr))
    return srq_ != nullptr ? "srq (a UD EP takes receives from its own queue)" : "max_message_size";
  if (attr.max_message_size > caps.max_message_size) return "max_message_size";
  if (attr.max_rdma_size > caps.max_rdma_size) return "max_rdma_size";
  if ((attr.recv_completion_flags & ~kRecvAttrFlags) != 0) return "recv_completion_flags";
  if ((attr.request_completion_flags & ~kRequestAttrFlags) != 0) return "request_completion_flags";
  if (const char* refused = srq::RefusedReceiveAttribute(ReceiveConfig(attr), attr.max_recv_dtos,
                                                         attr.max_recv_iov, attr.recv_completion_flags,
                                                         caps.max_recv_work, caps.max_segments))
    return refused;
  if (!InRange(attr.max_request_dtos, std::min(caps.max_send_work, RequestQueue::kMaxRequests)))
    return "max_request_dtos";
  if (!InRange(attr.max_request_iov, std::min(caps.max_segments, RequestQueue::kMaxIov))) return "max_request_iov";
  if (!InRange(attr.max_rdma_read_in, caps.max_rdma_read_in)) return "max_rdma_read_in";
  if (!InRange(attr.max_rdma_read_out, caps.max_rdma_read_out)) return "max_rdma_read_out";
  if (attr.srq_soft_hw != DAT_HW_DEFAULT && attr.srq_soft_hw < 0) return "srq_soft_hw";
  if (!InRange(attr.max_rdma_read_iov, std::min(caps.max_segments, RequestQueue::kMaxIov)))
    return "max_rdma_read_iov";
  if (!InRange(attr.max_rdma_write_iov, std::min(caps.max_segments, RequestQueue::kMaxIov)))
    return "max_rdma_write_iov";
  if (attr.ep_transport_specific_count < 0) return "ep_transport_specific_count";
  if (attr.ep_provider_specific_count < 0) return "ep_provider_specific_count";
  return nullptr;
}

Status Ep::CheckAttributes(const DAT_EP_ATTR& attr) {
  const char* refused = RefusedAttribute(attr);
  if (refused == nullptr) return Status::Ok();
  // The consumer's mistake: said at the default level, with what the IA offers.
  const transport::Capabilities& caps = ia_->capabilities();
  SOFTDAT_LOG(kWarn,
              "dat_ep_create/modify: EP attribute %s is out of range for %s (asked: max_recv_dtos %d, "
              "max_request_dtos %d, iov %d/%d, rdma reads in/out %d/%d; offered: max_message_size %u, "
              "max_recv_dtos up to %u, max_request_dtos up to %u, iov up to %u, rdma reads in/out up to %u/%u)",
              refused, ia_->name().c_str(), attr.max_recv_dtos, attr.max_request_dtos, attr.max_recv_iov,
              attr.max_request_iov, attr.max_rdma_read_in, attr.max_rdma_read_out, caps.max_message_size,
              std::min(caps.max_recv_work, srq::EpRecvQueue::kMaxRecvDtos),
              std::min(caps.max_send_work, RequestQueue::kMaxRequests), caps.max_segments, caps.max_rdma_read_in,
              caps.max_rdma_read_out);
  return Status(Code::kInvalidParameter, Detail::kParamAttributes);
}

srq::ReceiveSourceConfig Ep::ReceiveConfig(const DAT_EP_ATTR& attr) {
  srq::ReceiveSourceConfig config;
  config.pool = srq_ != nullptr ? &srq_->pool() : nullptr;
  config.waiter = &srq_waiter_;
  config.device_model = device_receives_;
  config.max_recv_dtos = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(attr.max_recv_dtos));
  config.max_recv_iov = static_cast<std::uint32_t>(attr.max_recv_iov);
  return config;
}

Status Ep::MakeResources(const DAT_EP_ATTR& attr, Resources& out) {
  const std::uint32_t max_request_iov = static_cast<std::uint32_t>(
      std::max({attr.max_request_iov, attr.max_rdma_read_iov, attr.max_rdma_write_iov, 1}));
  if (Status status = RequestQueue::Create(
          std::max<std::uint32_t>(1, static_cast<std::uint32_t>(attr.max_request_dtos)), max_request_iov,
          out.requests);
      !status.ok())
    return status;
  if (Status status = srq::CreateReceiveSource(ReceiveConfig(attr), out.receive); !status.ok()) return status;
  return NewTransportEndpoint(attr, *out.requests, out.endpoint);
}

Status Ep::NewTransportEndpoint(const DAT_EP_ATTR& attr, const RequestQueue& requests,
                                std::unique_ptr<transport::Endpoint>& out) {
  transport::EndpointConfig config;
  config.pd = pz_->domain();
  config.owner = reinterpret_cast<std::uintptr_t>(this);  // what an RMR bound to this EP names
  config.srq = srq_ != nullptr ? srq_->device_srq() : nullptr;  // null on a software transport
  // The EVDs' device CQs (null without them): the endpoint's completions go where its events do.
  config.send_cq = request_evd_ != nullptr ? request_evd_->completion_queue() : nullptr;
  config.recv_cq = recv_evd_ != nullptr ? recv_evd_->completion_queue() : nullptr;
  config.max_send_work = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(attr.max_request_dtos));
  config.max_recv_work = static_cast<std::uint32_t>(attr.max_recv_dtos);
  config.max_send_segments = requests.max_iov();
  config.max_recv_segments = static_cast<std::uint32_t>(attr.max_recv_iov);
  config.max_rdma_read_in = static_cast<std::uint32_t>(attr.max_rdma_read_in);
  config.max_rdma_read_out = static_cast<std::uint32_t>(attr.max_rdma_read_out);
  config.max_message_size = attr.max_message_size;
  config.datagram = datagram_;
  if (Status status = ia_->transport().CreateEndpoint(config, &events_, out); !status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_ep_create: the %s transport cannot make an endpoint (%s)",
                ia_->name().c_str(), CodeName(status.code()));
    return status;
  }
  return Status::Ok();
}

Status Ep::Create(Ia* ia, Pz* pz, Evd* recv_evd, Evd* request_evd, Evd* connect_evd, Srq* srq,
                  const DAT_EP_ATTR* attr, Ep** out) {
  if (pz->ia() != ia) return Status(Code::kInvalidHandle, Detail::kPz);
  if (recv_evd != nullptr && ((recv_evd->flags() & DAT_EVD_DTO_FLAG) == 0 || recv_evd->ia() != ia))
    return Status(Code::kInvalidHandle, Detail::kEvdRecv);
  if (request_evd != nullptr && ((request_evd->flags() & DAT_EVD_DTO_FLAG) == 0 || request_evd->ia() != ia))
    return Status(Code::kInvalidHandle, Detail::kEvdRequest);
  if (connect_evd != nullptr &&
      ((connect_evd->flags() & DAT_EVD_CONNECTION_FLAG) == 0 || connect_evd->ia() != ia))
    return Status(Code::kInvalidHandle, Detail::kEvdConnect);
  if (srq != nullptr) {
    if (srq->ia() != ia) return Status(Code::kInvalidHandle, Detail::kSrq);
    if (Status status = srq->CheckEndpointPz(pz); !status.ok()) return status;
  }
  DAT_EP_ATTR attributes = attr != nullptr ? *attr : DefaultAttributes(ia->capabilities(), srq != nullptr);
  if (static_cast<int>(attributes.service_type) == DAT_IB_SERVICE_TYPE_UD && !ia->capabilities().datagrams) {
    SOFTDAT_LOG(kWarn, "dat_ep_create: the %s IA does not support unreliable datagrams (DAT_IB_SERVICE_TYPE_UD; "
                "its provider attribute DAT_IB_UD says so)", ia->name().c_str());
    return Status(Code::kModelNotSupported);
  }
  FillZeroLimits(ia->capabilities(), attributes);
  Ep* ep = NewHandle<Ep>(ia->provider, ia, pz, recv_evd, request_evd, connect_evd, srq, attributes);
  Resources resources;
  Status status = ep->CheckAttributes(attributes);
  if (status.ok()) status = ep->MakeResources(attributes, resources);
  if (status.ok() && resources.receive->announces_flush()) status = ia->ReserveAsyncEntry();
  if (!status.ok()) {
    resources = Resources{};  // the transport endpoint and the SRQ account go before the handle
    DeleteHandle(ep);
    return status;
  }
  ep->requests_ = std::move(resources.requests);
  ep->receive_ = std::move(resources.receive);
  ep->endpoint_ = std::move(resources.endpoint);
  if (ep->datagram_) ep->StartDatagrams();
  pz->AddUser();
  for (Evd* evd : {recv_evd, request_evd, connect_evd})
    if (evd != nullptr) evd->AddUser();
  if (srq != nullptr) srq->AddRecvEvd(recv_evd);
  ia->Track(ep);
  if (ep->datagram_) ia->WantDatagrams();  // every PSP of the IA listens for UD requests from now on
  *out = ep;
  return Status::Ok();
}

Status Ep::Free(Ep* ep) {
  switch (ep->state()) {
    case DAT_EP_STATE_RESERVED: return Status(Code::kInvalidState, Detail::kEpReserved);
    case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING: return Status(Code::kInvalidState, Detail::kEpPassConnPending);
    case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING: return Status(Code::kInvalidState, Detail::kEpTentConnPending);
    default: break;
  }
  ep->ia_->Untrack(ep);
  Destroy(ep);
  return Status::Ok();
}

void Ep::Destroy(Ep* ep) {
  // No SRQ wakeup may reach the transport endpoint while it goes away.
  ep->receive_->StopWaking();
  if (ep->receive_->announces_flush()) ep->ia_->ReleaseAsyncEntry();
  // A reserved EP cannot be freed (Free refuses) and abrupt IA close takes RSPs down first, so
  // no RSP still names this EP here.
  // Once the transport endpoint is destroyed no event of it runs: what is still outstanding is
  // ours to complete, and every buffer taken from an SRQ goes back through a flush completion.
  ep->endpoint_.reset();
  ep->receive_->Close();
  ep->requests_->FlushAll();
  ep->Deliver();
  ep->FreeDatagramObjects();
  ep->ia_->end_reports().Await(ep->end_report_);  // posted by another thread, maybe: not yet done
  ep->receive_.reset();  // an SRQ account leaves its SRQ
  if (ep->srq_ != nullptr) ep->srq_->RemoveRecvEvd(ep->recv_evd_);
  ep->pz_->RemoveUser();
  for (Evd* evd : {ep->recv_evd_, ep->request_evd_, ep->connect_evd_})
    if (evd != nullptr) evd->RemoveUser();
  DeleteHandle(ep);
}

void Ep::Query(DAT_EP_PARAM_MASK mask, DAT_EP_PARAM& param) const {
  std::shared_lock resources(resources_mutex_);
  std::lock_guard lock(mutex_);
  if (mask & DAT_EP_FIELD_IA_HANDLE) param.ia_handle = ia_;
  if (mask & DAT_EP_FIELD_EP_STATE) param.ep_state = state();
  if (mask & DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR)
    param.local_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(const_cast<sockaddr_in*>(&ia_->address()));
  if (mask & DAT_EP_FIELD_LOCAL_PORT_QUAL) param.local_port_qual = ntohs(local_address_.sin_port);
  if (mask & DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR)
    param.remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(const_cast<sockaddr_in*>(&remote_address_));
  if (mask & DAT_EP_FIELD_REMOTE_PORT_QUAL) param.remote_port_qual = remote_port_;
  if (mask & DAT_EP_FIELD_PZ_HANDLE) param.pz_handle = pz_;
  if (mask & DAT_EP_FIELD_RECV_EVD_HANDLE) param.recv_evd_handle = recv_evd_;
  if (mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE) param.request_evd_handle = request_evd_;
  if (mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE) param.connect_evd_handle = connect_evd_;
  if (mask & DAT_EP_FIELD_SRQ_HANDLE) param.srq_handle = srq_;
  if (mask & DAT_EP_FIELD_EP_ATTR_ALL) param.ep_attr = attr_;
}

Status Ep::Modify(DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM& param) {
  constexpr DAT_EP_PARAM_MASK kModifiable = DAT_EP_FIELD_RECV_EVD_HANDLE | DAT_EP_FIELD_REQUEST_EVD_HANDLE |
                                            DAT_EP_FIELD_CONNECT_EVD_HANDLE | DAT_EP_FIELD_EP_ATTR_ALL;
  if ((mask & ~kModifiable) != 0) return Status(Code::kInvalidParameter, Detail::kParamMask);
  // The one owner of the swap below: no other consumer call uses the old endpoint, receive source
  // or attributes while this runs, and none can connect the EP meanwhile.
  std::unique_lock resources(resources_mutex_);
  if (state() != DAT_EP_STATE_UNCONNECTED) return Status(Code::kInvalidState, Detail::kEpConnected);
  // Resolve every new value before changing anything: a refused modify changes nothing.
  Evd* evds[3] = {recv_evd_, request_evd_, connect_evd_};
  const DAT_EP_PARAM_MASK evd_fields[3] = {DAT_EP_FIELD_RECV_EVD_HANDLE, DAT_EP_FIELD_REQUEST_EVD_HANDLE,
                                           DAT_EP_FIELD_CONNECT_EVD_HANDLE};
  const DAT_EVD_HANDLE requested[3] = {param.recv_evd_handle, param.request_evd_handle,
                                       param.connect_evd_handle};
  const DAT_EVD_FLAGS needed[3] = {DAT_EVD_DTO_FLAG, DAT_EVD_DTO_FLAG, DAT_EVD_CONNECTION_FLAG};
  const Detail subtypes[3] = {Detail::kEvdRecv, Detail::kEvdRequest, Detail::kEvdConnect};
  for (int i = 0; i < 3; ++i) {
    if ((mask & evd_fields[i]) == 0) continue;
    Evd* evd = nullptr;
    if (requested[i] != DAT_HANDLE_NULL) {
      evd = HandleAs<Evd>(requested[i]);
      if (evd == nullptr || evd->ia() != ia_ || (evd->flags() & needed[i]) == 0)
        return Status(Code::kInvalidHandle, subtypes[i]);
    }
    evds[i] = evd;
  }
  DAT_EP_ATTR attr = attr_;
  if (mask & DAT_EP_FIELD_EP_ATTR_ALL) {
    attr = param.ep_attr;
    if (attr.service_type != attr_.service_type) {
      SOFTDAT_LOG(kWarn, "dat_ep_modify: an EP's service type cannot change (RC and UD EPs are made apart)");
      return Status(Code::kInvalidParameter, Detail::kParamAttributes);
    }
    if (Status status = CheckAttributes(attr); !status.ok()) return status;
    FillZeroLimits(ia_->capabilities(), attr);
  }
  std::lock_guard post(post_mutex_);
  if ((mask & DAT_EP_FIELD_EP_ATTR_ALL) && (requests_->count() > 0 || receive_->held() > 0)) {
    // Resizing queues under posted buffers would lose them.
    return Status(Code::kInvalidState, Detail::kEpCompletionPending);
  }
  if (mask & DAT_EP_FIELD_EP_ATTR_ALL) {
    // Everything new is made before anything old goes: a modify the transport refuses changes
    // nothing, and the EP keeps a working endpoint.
    Resources resources;
    if (Status status = MakeResources(attr, resources); !status.ok()) return status;
    resources.receive->StopWaking();
    receive_->StopWaking();
    endpoint_ = std::move(resources.endpoint);  // the old endpoint goes: none of its events runs after
    requests_ = std::move(resources.requests);
    receive_ = std::move(resources.receive);
    attr_ = attr;
    if (datagram_) (void)receive_->BeginConnection();  // fresh, so it holds nothing
  }
  for (int i = 0; i < 3; ++i) {
    if ((mask & evd_fields[i]) == 0) continue;
    Evd** slot = i == 0 ? &recv_evd_ : i == 1 ? &request_evd_ : &connect_evd_;
    if (i == 0 && srq_ != nullptr) {
      srq_->RemoveRecvEvd(*slot);
      srq_->AddRecvEvd(evds[i]);
    }
    if (*slot != nullptr) (*slot)->RemoveUser();
    *slot = evds[i];
    if (*slot != nullptr) (*slot)->AddUser();
  }
  if (mask & (DAT_EP_FIELD_RECV_EVD_HANDLE | DAT_EP_FIELD_REQUEST_EVD_HANDLE)) {
    // Completions go to the new EVDs' CQs from the next connection on (none exists: UNCONNECTED).
    endpoint_->SetCompletionQueues(request_evd_ != nullptr ? request_evd_->completion_queue() : nullptr,
                                   recv_evd_ != nullptr ? recv_evd_->completion_queue() : nullptr);
  }
  return Status::Ok();
}

void Ep::GetStatus(DAT_EP_STATE& state, DAT_BOOLEAN* recv_idle, DAT_BOOLEAN* request_idle) const {
  // Whether the EP is idle says whether its completions came, and one nobody waited for may wait
  // for a poll (Transport::ReportWaits): look first, as dat_evd_dequeue does. No lock held.
  if (recv_idle != nullptr || request_idle != nullptr) (void)ia_->progress_hook()->Progress();
  std::shared_lock resources(resources_mutex_);
  state = this->state();
  if (recv_idle != nullptr) *recv_idle = receive_->held() == 0 ? DAT_TRUE : DAT_FALSE;
  if (request_idle != nullptr) *request_idle = requests_->count() == 0 ? DAT_TRUE : DAT_FALSE;
}

void Ep::Deliver(std::uint8_t kinds) {
  // Said before the turn is asked for: a pass running now goes round again (DeliveryTurn) and
  // its next exchange sees these kinds. The transport's Deliver names none (its reports marked
  // theirs already): no locked instruction for nothing.
  if (kinds != 0) deliver_kinds_.fetch_or(kinds, std::memory_order_acq_rel);
  if (!turn_.Request()) return;
  do {
    DeliverReady(deliver_kinds_.exchange(0, std::memory_order_acq_rel));
  } while (!turn_.Done());
}

// A device's completion and the delivery after it in one pass, when this thread gets the turn
// and nothing else of the EP is marked: `fuse` takes the completion to its event (the receive
// queue hands it straight back, or the request queue's pop follows at once), with no marks for a
// pass in between, or declines (false, having changed nothing). Otherwise `report` and a pass, as
// the transport's two calls.
template <typename Report, typename Fuse>
void Ep::ReportAndDeliver(Report&& report, Fuse&& fuse) {
  if (!turn_.Request()) {
    // Another thread's pass: this request makes it go round once more, and so does Deliver's,
    // which follows the report's mark (the first may be spent before the mark is made).
    report();
    Deliver(0);
    return;
  }
  if (deliver_kinds_.load(std::memory_order_acquire) != 0 || !fuse()) {
    report();
    DeliverReady(deliver_kinds_.exchange(0, std::memory_order_acq_rel));
  }
  while (!turn_.Done()) DeliverReady(deliver_kinds_.exchange(0, std::memory_order_acq_rel));
}

void Ep::DeliverDeviceRecv(std::uint64_t recv_id, transport::WorkStatus status, const transport::RecvInfo& info) {
  ReportAndDeliver([&] { OnDeviceRecvDone(recv_id, status, info); },
                   [&] {
                     if (!device_receives_ || ReceivesWait()) return false;
                     // An RDMA Write with immediate data placed nothing in the buffer.
                     const std::uint64_t length = info.extension.immediate ? 0 : info.length;
                     srq::RecvCompletion received;  // written in full when popped
                     bool popped = false;
                     if (receive_->CompleteDeviceChosenAndPop(recv_id, length, ToDtoStatus(status),
                                                              NotesOf(status, info), received, popped) !=
                         srq::ReceiveSource::TakeResult::kTaken) {
                       WarnUnknownDeviceRecv(recv_id);
                     } else if (popped) {
                       PostReceived(received);
                       if (received.more) DeliverReceives();
                     }
                     return true;
                   });
}

void Ep::DeliverWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) {
  ReportAndDeliver([&] { OnWorkDone(id, status, length); },
                   [&] {
                     if (FinishRequest(id, status, length)) DeliverRequests();
                     return true;
                   });
}

void Ep::PostDto(Evd* evd, DAT_EVENT& event, bool signalled) {
  if (evd == nullptr) {
    ReleaseSrqBuffer(event);  // nobody collects it: the buffer is free at once
    return;
  }
  event.evd_handle = evd;
  evd->Post(event, signalled ? evd::EventQueue::Notify::kSignal : evd::EventQueue::Notify::kQuiet);
}

void Ep::DeliverReady(std::uint8_t kinds) {
  // A pass that may report the connection's end looks at both queues first, as it always did:
  // what the end flushed is reported before it.
  if (kinds & kDeliverControl) kinds |= kDeliverAll;
  // before any completion of the connection, in case the EVDs are the same
  if (kinds & kDeliverControl) DeliverEstablished();
  if ((kinds & kDeliverControl) && datagram_) DeliverDatagramEvents();
  if (kinds & kDeliverReceives) DeliverReceives();
  if (kinds & kDeliverRequests) DeliverRequests();
  if (kinds & kDeliverControl) DeliverEnd();  // after every completion the end flushed
  if ((kinds & kDeliverSrq) && srq_ != nullptr) srq_->DeliverLowWatermark();
}

void Ep::DeliverEstablished() {
  bool established = false;
  std::size_t private_size = 0;
  {
    std::lock_guard lock(mutex_);
    established = established_pending_.exchange(false, std::memory_order_acq_rel);
    private_size = private_data_size_;
  }
  if (established && connect_evd_ != nullptr) {
    connect_evd_->Post(ConnectionEvent(DAT_CONNECTION_EVENT_ESTABLISHED, connect_evd_, this,
                                       private_data_.data(), static_cast<DAT_COUNT>(private_size)));
  }
}

// Receive completions, in MSN order.
void Ep::DeliverReceives() {
  // A device may complete a connection's first receives before its transport reports the
  // connection established (the peer sent as soon as it learnt of it, and the consumer's own
  // dequeue polled the CQ): they wait for OnEstablished, which delivers them after ESTABLISHED,
  // so that an answer the consumer posts finds the EP CONNECTED.
  if (ReceivesWait()) return;
  srq::RecvCompletion received{};
  while (receive_->PopCompletion(received)) {
    PostReceived(received);
    // The usual case, one message at a time: no second look under the queue's lock, on every
    // small message's reception (docs/PERFORMANCE.md, "Small messages").
    if (!received.more) break;
  }
}

void Ep::PostReceived(const srq::RecvCompletion& received) {
  const bool invalidated = received.notes.invalidated && received.status == DAT_DTO_SUCCESS;
  DAT_EVENT event;
  FillDtoEvent(event, recv_evd_, this, received.cookie, received.status,
               static_cast<DAT_SEG_LENGTH>(received.transferred_length),
               invalidated ? DAT_DTO_RECEIVE_WITH_INVALIDATE : DAT_DTO_RECEIVE,
               invalidated ? received.notes.invalidated_key : 0);
  // Immediate data and datagrams complete as the extension's events (DAT_IB_DTO_EVENT).
  if (received.notes.extension.immediate || datagram_) MakeExtensionReceive(event, received);
  if (received.from_srq) MarkSrqBuffer(event, *srq_, received.slot);
  const DAT_COMPLETION_FLAGS flags = attr_.recv_completion_flags;
  bool signalled = true;
  if (received.status == DAT_DTO_SUCCESS) {
    CountReceive(counters_, event.event_data.dto_completion_event_data);
    // A device does not say which receive was solicited (ibv_wc has no such flag): every
    // completion is signalled, more wake-ups than asked for but none missed. The IA does not
    // list SOLICITED_WAIT in completion_flags_supported then.
    if ((flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG) && ia_->capabilities().recv_solicited_known)
      signalled = received.notes.solicited;
    if (received.post_flags & DAT_COMPLETION_UNSIGNALLED_FLAG) signalled = false;
  }
  PostDto(recv_evd_, event, signalled);
}

// Request completions, in posting order.
void Ep::DeliverRequests() {
  RequestQueue::Completion done{};
  // As for receives: no second look under the queue's lock after the usual single completion. A
  // request that finishes after the pop asks for another pass (Deliver).
  bool more = true;
  while (more && requests_->PopCompletion(done)) {
    more = done.more;
    const DAT_DTO_COMPLETION_STATUS status = ToDtoStatus(done.status);
    if (status != DAT_DTO_SUCCESS) CountRequestError(ia_->counters(), status);
    if (status == DAT_DTO_SUCCESS && (done.flags & DAT_COMPLETION_SUPPRESS_FLAG)) continue;
    const bool signalled = status != DAT_DTO_SUCCESS || (done.flags & DAT_COMPLETION_UNSIGNALLED_FLAG) == 0;
    if (request_evd_ == nullptr) continue;
    DAT_EVENT event;
    if (done.operation == DAT_DTO_BIND_MW) {
      ZeroEvent(event);
      event.event_number = DAT_RMR_BIND_COMPLETION_EVENT;
      event.event_data.rmr_completion_event_data.rmr_handle = done.rmr;
      event.event_data.rmr_completion_event_data.user_cookie = done.cookie;
      event.event_data.rmr_completion_event_data.status = status;
    } else {
      FillDtoEvent(event, request_evd_, this, done.cookie, status, done.length, done.operation);
      if (IsExtensionDto(done.operation)) MakeExtensionDto(event);
    }
    PostDto(request_evd_, event, signalled);
  }
}

// The end of the connection; then what depends on it, and the soft high-watermark event.
void Ep::DeliverEnd() {
  DAT_EVENT_NUMBER end_event{};
  bool end = false;
  bool broken_async = false;
  bool soft_watermark = false;
  std::size_t private_size = 0;
  {
    std::lock_guard lock(mutex_);
    if (end_event_.pending) {
      end = true;
      end_event = end_event_.number;
      end_event_.pending = false;
      broken_async = std::exchange(broken_async_pending_, false);
    }
    soft_watermark = std::exchange(soft_watermark_pending_, false);
    private_size = private_data_size_;
  }
  Evd* async = ia_->async_evd();
  if (end) {
    if (broken_async && async != nullptr) {
      // An SRQ EP raises EP_BROKEN once its flush is complete: what OFED derives from
      // IBV_EVENT_QP_LAST_WQE_REACHED, and what stock dtestsrq waits for, right after the
      // connection event, with no other EP's pair in between (core/end_reports.h).
      end_report_event_ = end_event;
      end_report_connect_evd_ = connect_evd_;
      end_report_private_size_ = private_size;
      ia_->end_reports().Report(end_report_);
    } else if (connect_evd_ != nullptr) {
      connect_evd_->Post(ConnectionEvent(end_event, connect_evd_, this, private_data_.data(),
                                         static_cast<DAT_COUNT>(private_size)));
    }
  }
  if (async == nullptr) return;
  if (soft_watermark)
    async->Post(AsyncEvent(kWatermarkEventNumber, async, this, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT));
}

void Ep::PostEndReport() {
  if (end_report_connect_evd_ != nullptr) {
    end_report_connect_evd_->Post(ConnectionEvent(end_report_event_, end_report_connect_evd_, this,
                                                  private_data_.data(),
                                                  static_cast<DAT_COUNT>(end_report_private_size_)));
  }
  Evd* async = ia_->async_evd();
  async->Post(AsyncEvent(DAT_ASYNC_ERROR_EP_BROKEN, async, this, DAT_EP_OTHER_ERROR));
}

}  // namespace softdat::core
