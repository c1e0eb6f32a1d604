// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsEndpoint: connection setup through rdma_cm, posting to the QP, completions, teardown.
#include "transport/verbs/verbs_endpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/verbs/verbs_memory.h"
#include "transport/verbs/verbs_srq.h"

namespace softdat::transport::verbs {
namespace {

constexpr int kResolveMs = 5000;
// How long teardown waits for the device to flush what is posted. rxe and siw flush at once; the
// bound only keeps a device that does not from holding OnEnded back forever (core flushes the rest).
constexpr auto kDrainBound = std::chrono::seconds(3);
// How long a graceful Disconnect lets posted sends finish (an RNR wait with rnr_retry 7 never does).
constexpr auto kGracefulBound = std::chrono::seconds(5);

std::span<const std::uint8_t> Data(const CmEvent& e) { return {e.private_data, e.private_data_length}; }

}  // namespace

VerbsEndpoint::VerbsEndpoint(VerbsTransport& transport, const EndpointConfig& config, EndpointEvents* events)
    : AsyncTarget(transport),
      transport_(transport),
      config_(config),
      events_(events),
      pd_(static_cast<VerbsPd*>(config.pd)),
      srq_(static_cast<VerbsSrq*>(config.srq)),
      send_segments_(std::max<std::uint32_t>(1, config.max_send_segments)),
      recv_segments_(std::max<std::uint32_t>(1, config.max_recv_segments)) {}

Status VerbsEndpoint::Create(VerbsTransport& transport, const EndpointConfig& config, EndpointEvents* events,
                             std::unique_ptr<Endpoint>& out) {
  const Capabilities& caps = transport.capabilities();
  if (config.pd == nullptr) return Status(Code::kInvalidParameter, Detail::kPz);
  if (config.max_send_work > caps.max_send_work || config.max_recv_work > caps.max_recv_work ||
      config.max_send_segments > caps.max_segments || config.max_recv_segments > caps.max_segments)
    return Status(Code::kInvalidParameter);
  std::unique_ptr<VerbsEndpoint> endpoint(new VerbsEndpoint(transport, config, events));
  if (Status s = endpoint->Init(); !s.ok()) return s;
  transport.AddEndpoint(endpoint.get());
  out = std::move(endpoint);
  return Status::Ok();
}

Status VerbsEndpoint::Init() {
  const std::uint32_t send = std::max<std::uint32_t>(1, config_.max_send_work);
  const std::uint32_t recv = std::max<std::uint32_t>(1, config_.max_recv_work);
  const int max_cqe = transport_.device().attr.max_cqe;
  // With an SRQ this QP may consume up to the whole SRQ before the progress polls.
  const std::uint64_t recv_cqe = srq_ != nullptr ? std::max(recv, srq_->max_work()) : recv;
  // Busy-poll: no completion channel, nothing armed; the consumer's Progress polls the CQs.
  send_cq_ = ibv_create_cq(transport_.device().context, static_cast<int>(std::min<std::uint64_t>(send + 1, max_cqe)),
                           this, transport_.comp_channel(), 0);
  recv_cq_ = ibv_create_cq(transport_.device().context, static_cast<int>(std::min<std::uint64_t>(recv_cqe + 1, max_cqe)),
                           this, transport_.comp_channel(), 0);
  if (send_cq_ == nullptr || recv_cq_ == nullptr) return Status(Code::kInsufficientResources, Detail::kTep);
  if (!transport_.busy_poll()) {
    ibv_req_notify_cq(send_cq_, 0);
    ibv_req_notify_cq(recv_cq_, 0);
  }
  send_sge_.reset(new ibv_sge[send_segments_]);
  recv_sge_.reset(new ibv_sge[recv_segments_]);
  early_ids_.reset(new std::uint64_t[recv]);
  early_counts_.reset(new std::uint32_t[recv]);
  early_segments_.reset(new Segment[static_cast<std::size_t>(recv) * recv_segments_]);
  send_lengths_size_ = send + 1;
  send_lengths_.reset(new std::uint32_t[send_lengths_size_]);
  return Status::Ok();
}

VerbsEndpoint::~VerbsEndpoint() {
  ibv_qp* qp = nullptr;
  {
    // Once every context that names this endpoint is cleared under the dispatch lock, the
    // progress only acks what still arrives for it; the destroys below then run outside the
    // lock, because siw's rdma_destroy_id waits out an unfinished MPA exchange (about 10 s) and
    // must not stall the other endpoints' progress meanwhile.
    auto guard = transport_.LockDispatch();
    transport_.RemoveEndpoint(this);
    if (id_ != nullptr) {
      id_->context = nullptr;
      qp = id_->qp;
    }
    transport_.async_events().Detach(this, qp != nullptr ? &qp->qp_context : nullptr);
    if (send_cq_ != nullptr) send_cq_->cq_context = nullptr;
    if (recv_cq_ != nullptr) recv_cq_->cq_context = nullptr;
  }
  if (id_ != nullptr) {
    if (qp != nullptr) rdma_destroy_qp(id_);
    rdma_destroy_id(id_);
  }
  if (pending_id_ != nullptr) {
    rdma_reject(pending_id_, nullptr, 0);
    rdma_destroy_id(pending_id_);
  }
  if (send_cq_ != nullptr) ibv_destroy_cq(send_cq_);
  if (recv_cq_ != nullptr) ibv_destroy_cq(recv_cq_);
}

VerbsEndpoint::State VerbsEndpoint::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

// ---- calls from core --------------------------------------------------------------------------

Status VerbsEndpoint::Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                              std::uint64_t timeout_us) {
  if (private_data.size() > transport_.capabilities().max_private_data)
    return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  {
    std::lock_guard lock(mutex_);
    if (state_ != State::kIdle) return Status(Code::kInvalidState, Detail::kEpActConnPending);
    remote_ = remote;
    remote_.sin_family = AF_INET;
    remote_.sin_port = htons(port);
    private_data_.Assign(private_data);
    if (timeout_us != UINT64_MAX)
      connect_deadline_ = Clock::now() + std::chrono::microseconds(std::min<std::uint64_t>(timeout_us, 1ull << 50));
    state_ = State::kConnectRequested;
  }
  transport_.Wake();
  return Status::Ok();
}

Status VerbsEndpoint::TakeAccept(rdma_cm_id* id, std::span<const std::uint8_t> private_data, std::uint8_t peer_ird,
                                 std::uint8_t peer_ord) {
  if (private_data.size() > transport_.capabilities().max_private_data)
    return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  {
    std::lock_guard lock(mutex_);
    if (state_ != State::kIdle) return Status(Code::kInvalidState, Detail::kEpActConnPending);
    pending_id_ = id;
    private_data_.Assign(private_data);
    peer_ird_ = peer_ird;
    peer_ord_ = peer_ord;
    state_ = State::kAcceptRequested;
  }
  transport_.Wake();
  return Status::Ok();
}

void VerbsEndpoint::Disconnect(bool graceful) {
  {
    std::lock_guard lock(mutex_);
    if (disconnect_requested_ && (!graceful_ || graceful)) return;
    // Graceful waits (bounded) for the posted sends to complete before rdma_disconnect, which
    // on IB moves the QP to ERR at once; abrupt, or abrupt after graceful, does not wait.
    graceful_ = graceful;
    graceful_deadline_ = Clock::now() + kGracefulBound;
    disconnect_requested_ = true;
  }
  transport_.Wake();
}

Status VerbsEndpoint::Post(const Work& work) {
  if (work.local.size() > send_segments_) return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
  ibv_send_wr wr{};
  wr.wr_id = work.id;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (work.fence) wr.send_flags |= IBV_SEND_FENCE;
  switch (work.kind) {
    case WorkKind::kSend:
      wr.opcode = IBV_WR_SEND;
      if (work.solicited) wr.send_flags |= IBV_SEND_SOLICITED;
      if (work.invalidate) {
        if ((transport_.device().attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS) == 0)
          return Status(Code::kModelNotSupported);
        wr.opcode = IBV_WR_SEND_WITH_INV;
        wr.invalidate_rkey = work.invalidate_key;
      }
      break;
    case WorkKind::kRdmaRead:
      // siw scatters a Read Response into one SGE only (max_sge_rd 1) and silently drops the rest.
      if (const int max = transport_.device().attr.max_sge_rd; max > 0 && work.local.size() > static_cast<std::size_t>(max))
        return Status(Code::kModelNotSupported);
      [[fallthrough]];
    case WorkKind::kRdmaWrite:
      wr.opcode = work.kind == WorkKind::kRdmaWrite ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
      wr.wr.rdma.remote_addr = work.remote_address;
      wr.wr.rdma.rkey = work.remote_key;
      break;
    case WorkKind::kRdmaWriteImmediate:
    case WorkKind::kFetchAdd:
    case WorkKind::kCompareSwap:
    case WorkKind::kSendDatagram:
      return Status(Code::kModelNotSupported);  // the capabilities say so: core never posts them
  }
  std::lock_guard lock(mutex_);
  if (qp_ == nullptr || (state_ != State::kConnected && state_ != State::kDraining))
    return Status(Code::kInvalidState, Detail::kEpDisconnected);
  for (std::size_t i = 0; i < work.local.size(); ++i)
    send_sge_[i] = ibv_sge{work.local[i].address, work.local[i].length, work.local[i].key};
  wr.sg_list = send_sge_.get();
  wr.num_sge = static_cast<int>(work.local.size());
  const std::uint64_t head = send_head_.load(std::memory_order_relaxed);
  if (head - send_tail_.load(std::memory_order_acquire) >= send_lengths_size_ - 1)
    return Status(Code::kQueueFull);
  send_lengths_[head % send_lengths_size_] = static_cast<std::uint32_t>(work.length);
  send_head_.store(head + 1, std::memory_order_release);  // before the post: the completion may beat us back
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    send_head_.store(head, std::memory_order_release);
    SOFTDAT_LOG(kWarn, "verbs: ibv_post_send failed: %s", std::strerror(rc));
    return Status(rc == ENOMEM ? Code::kQueueFull : Code::kInvalidParameter);
  }
  return Status::Ok();
}

Status VerbsEndpoint::PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) {
  if (segments.size() > recv_segments_) return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
  if (srq_ != nullptr) return Status(Code::kInvalidState);
  std::lock_guard lock(mutex_);
  if (qp_ == nullptr) {
    if (state_ == State::kDraining || state_ == State::kEnded) return Status(Code::kInvalidState, Detail::kEpDisconnected);
    if (early_count_ >= std::max<std::uint32_t>(1, config_.max_recv_work)) return Status(Code::kQueueFull);
    early_ids_[early_count_] = recv_id;
    early_counts_[early_count_] = static_cast<std::uint32_t>(segments.size());
    std::copy(segments.begin(), segments.end(), &early_segments_[std::size_t{early_count_} * recv_segments_]);
    ++early_count_;
    recv_outstanding_.fetch_add(1);
    return Status::Ok();
  }
  ibv_recv_wr wr{};
  wr.wr_id = recv_id;
  wr.sg_list = recv_sge_.get();
  if (segments.empty()) {
    recv_sge_[0] = pd_->EmptySge();
    wr.num_sge = 1;
  } else {
    for (std::size_t i = 0; i < segments.size(); ++i)
      recv_sge_[i] = ibv_sge{segments[i].address, segments[i].length, segments[i].key};
    wr.num_sge = static_cast<int>(segments.size());
  }
  recv_outstanding_.fetch_add(1);
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) {
    recv_outstanding_.fetch_sub(1);
    SOFTDAT_LOG(kWarn, "verbs: ibv_post_recv failed: %s", std::strerror(rc));
    return Status(rc == ENOMEM ? Code::kQueueFull : Code::kInvalidParameter);
  }
  return Status::Ok();
}

sockaddr_in VerbsEndpoint::local_address() const {
  std::lock_guard lock(mutex_);
  return local_;
}

sockaddr_in VerbsEndpoint::remote_address() const {
  std::lock_guard lock(mutex_);
  return remote_;
}

// ---- progress context -------------------------------------------------------------------------

rdma_conn_param VerbsEndpoint::ConnParam(std::uint8_t peer_ird, std::uint8_t peer_ord) {
  const ibv_device_attr& a = transport_.device().attr;
  rdma_conn_param p{};
  p.private_data = private_data_.bytes;
  p.private_data_len = private_data_.length;
  p.responder_resources = static_cast<std::uint8_t>(
      std::min<std::uint32_t>({config_.max_rdma_read_in, static_cast<std::uint32_t>(a.max_qp_rd_atom), peer_ord}));
  p.initiator_depth = static_cast<std::uint8_t>(
      std::min<std::uint32_t>({config_.max_rdma_read_out, static_cast<std::uint32_t>(a.max_qp_init_rd_atom), peer_ird}));
  p.retry_count = 7;
  p.rnr_retry_count = 7;
  return p;
}

bool VerbsEndpoint::CreateQp() {
  ibv_qp_init_attr attr{};
  attr.qp_context = static_cast<AsyncTarget*>(this);  // what the async event router reads
  attr.send_cq = send_cq_;
  attr.recv_cq = recv_cq_;
  attr.srq = srq_ != nullptr ? srq_->srq() : nullptr;
  attr.cap.max_send_wr = std::max<std::uint32_t>(1, config_.max_send_work);
  attr.cap.max_recv_wr = srq_ != nullptr ? 0 : std::max<std::uint32_t>(1, config_.max_recv_work);
  attr.cap.max_send_sge = send_segments_;
  attr.cap.max_recv_sge = srq_ != nullptr ? 0 : recv_segments_;
  attr.qp_type = IBV_QPT_RC;
  if (rdma_create_qp(id_, pd_->pd(), &attr) != 0) {
    SOFTDAT_LOG(kWarn, "verbs: rdma_create_qp failed: %s", std::strerror(errno));
    return false;
  }
  std::lock_guard lock(mutex_);
  qp_ = id_->qp;
  // The receives posted before the QP existed, in their order.
  for (std::uint32_t i = 0; i < early_count_; ++i) {
    ibv_recv_wr wr{};
    wr.wr_id = early_ids_[i];
    wr.sg_list = recv_sge_.get();
    const Segment* s = &early_segments_[std::size_t{i} * recv_segments_];
    if (early_counts_[i] == 0) {
      recv_sge_[0] = pd_->EmptySge();
      wr.num_sge = 1;
    } else {
      for (std::uint32_t j = 0; j < early_counts_[i]; ++j) recv_sge_[j] = ibv_sge{s[j].address, s[j].length, s[j].key};
      wr.num_sge = static_cast<int>(early_counts_[i]);
    }
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(qp_, &wr, &bad) != 0) {
      // Left for core to flush at OnEnded; the count stays, so teardown waits its bound.
      SOFTDAT_LOG(kWarn, "verbs: posting an early receive failed");
    }
  }
  early_count_ = 0;
  return true;
}

void VerbsEndpoint::RecordAddresses() {
  std::lock_guard lock(mutex_);
  std::memcpy(&local_, rdma_get_local_addr(id_), sizeof local_);
  std::memcpy(&remote_, rdma_get_peer_addr(id_), sizeof remote_);
}

void VerbsEndpoint::StartConnect() {
  if (rdma_create_id(transport_.cm_channel(), &id_, static_cast<CmOwner*>(this), RDMA_PS_TCP) != 0) {
    id_ = nullptr;
    return BeginEnd(ConnectionEnd::kUnreachable);
  }
  sockaddr_in source = transport_.address();
  source.sin_port = 0;
  sockaddr_in destination = remote_address();
  {
    std::lock_guard lock(mutex_);
    state_ = State::kResolving;
  }
  if (rdma_resolve_addr(id_, reinterpret_cast<sockaddr*>(&source), reinterpret_cast<sockaddr*>(&destination),
                        kResolveMs) != 0)
    BeginEnd(ConnectionEnd::kUnreachable);
}

void VerbsEndpoint::StartAccept() {
  std::uint8_t ird, ord;
  {
    std::lock_guard lock(mutex_);
    id_ = pending_id_;
    pending_id_ = nullptr;
    ird = peer_ird_;
    ord = peer_ord_;
    state_ = State::kAccepting;
  }
  id_->context = static_cast<CmOwner*>(this);
  RecordAddresses();
  if (!CreateQp()) {
    rdma_reject(id_, nullptr, 0);
    return BeginEnd(ConnectionEnd::kAcceptFailed);
  }
  rdma_conn_param p = ConnParam(ird, ord);
  if (rdma_accept(id_, &p) != 0) {
    SOFTDAT_LOG(kInfo, "verbs: rdma_accept failed: %s", std::strerror(errno));
    BeginEnd(ConnectionEnd::kAcceptFailed);
  }
}

void VerbsEndpoint::OnCmEvent(const CmEvent& e) {
  const State s = state();
  const bool active = s == State::kResolving || s == State::kConnecting;
  switch (e.type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (s == State::kResolving && rdma_resolve_route(id_, kResolveMs) != 0) BeginEnd(ConnectionEnd::kUnreachable);
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      if (s != State::kResolving) return;
      if (!CreateQp()) return BeginEnd(ConnectionEnd::kUnreachable);
      {
        std::lock_guard lock(mutex_);
        state_ = State::kConnecting;
      }
      rdma_conn_param p = ConnParam(255, 255);
      if (rdma_connect(id_, &p) != 0) BeginEnd(ConnectionEnd::kUnreachable);
      return;
    }
    case RDMA_CM_EVENT_ESTABLISHED: {
      if (s != State::kConnecting && s != State::kAccepting) return;
      {
        std::lock_guard lock(mutex_);
        state_ = State::kConnected;
      }
      established_ = true;
      RecordAddresses();
      ShortenRnrTimer();
      if (s == State::kConnecting)
        events_->OnEstablished(Data(e));
      else
        events_->OnEstablished({});
      events_->Deliver();
      return;
    }
    case RDMA_CM_EVENT_REJECTED: {
      if (s == State::kAccepting) return BeginEnd(ConnectionEnd::kAcceptFailed);
      if (!active) return;
      const ibv_transport_type transport = transport_.device().context->device->transport_type;
      if (ClassifyReject(transport, e.status, e.private_data_length) == RejectedBy::kPeerConsumer)
        return BeginEnd(ConnectionEnd::kPeerRejected, Data(e));
      SOFTDAT_LOG(kInfo, "verbs: connection rejected by the peer's provider or CM, status %d", e.status);
      return BeginEnd(ConnectionEnd::kNonPeerRejected);
    }
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
      SOFTDAT_LOG(kInfo, "verbs: %s, status %d", rdma_event_str(e.type), e.status);
      if (active) return BeginEnd(ConnectionEnd::kUnreachable);
      if (s == State::kAccepting) return BeginEnd(ConnectionEnd::kAcceptFailed);
      if (s == State::kConnected) return BeginEnd(ConnectionEnd::kBroken);
      return;
    case RDMA_CM_EVENT_DISCONNECTED:
      if (s == State::kConnected) return BeginEnd(ConnectionEnd::kDisconnected);
      if (s == State::kAccepting) return BeginEnd(ConnectionEnd::kAcceptFailed);
      if (active) return BeginEnd(ConnectionEnd::kUnreachable);
      return;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      if (s != State::kDraining && s != State::kEnded && s != State::kIdle) BeginEnd(ConnectionEnd::kBroken);
      return;
    default:
      return;
  }
}

void VerbsEndpoint::OnAsyncEvent(ibv_event_type type) {
  if (type == IBV_EVENT_COMM_EST)
    OnCommEstablished();
  else
    Break();  // a QP error: tell the peer and end
}

void VerbsEndpoint::Rearm() {
  if (armed_) return;
  armed_ = true;
  ibv_req_notify_cq(send_cq_, 0);
  ibv_req_notify_cq(recv_cq_, 0);
  PollCqs();
}

// rdma_cm moves the QP to RTR with min_rnr_timer 0, which IB encodes as 655 ms: each RNR NAK we
// send (an SRQ with no buffer) would stall the peer that long. 12 encodes 0.64 ms. RTS->RTS may
// change it; iWARP has no RNR NAK, so a device that refuses is left as it is.
void VerbsEndpoint::ShortenRnrTimer() {
  if (id_ == nullptr || id_->qp == nullptr || id_->verbs == nullptr ||
      id_->verbs->device->transport_type != IBV_TRANSPORT_IB)
    return;
  ibv_qp_attr attr{};
  attr.min_rnr_timer = 12;
  if (ibv_modify_qp(id_->qp, &attr, IBV_QP_MIN_RNR_TIMER) != 0)
    SOFTDAT_LOG(kInfo, "verbs: cannot shorten the QP's RNR timer: %s", std::strerror(errno));
}

void VerbsEndpoint::OnCommEstablished() {
  if (id_ != nullptr) rdma_notify(id_, IBV_EVENT_COMM_EST);
}

// A completion error or a QP error: tell the peer and end.
void VerbsEndpoint::Break() {
  const State s = state();
  if (s == State::kDraining || s == State::kEnded || s == State::kIdle) return;
  if (s == State::kConnected) rdma_disconnect(id_);
  BeginEnd(s == State::kAccepting ? ConnectionEnd::kAcceptFailed : ConnectionEnd::kBroken);
}

void VerbsEndpoint::BeginEnd(ConnectionEnd why, std::span<const std::uint8_t> private_data) {
  bool has_qp;
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::kDraining || state_ == State::kEnded) return;
    state_ = State::kDraining;
    has_qp = qp_ != nullptr;
  }
  end_why_ = why;
  end_data_length_ = static_cast<std::uint8_t>(std::min<std::size_t>(private_data.size(), sizeof end_data_));
  if (end_data_length_ > 0) std::memcpy(end_data_, private_data.data(), end_data_length_);
  drain_deadline_ = Clock::now() + kDrainBound;
  if (!has_qp) return Finish();
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  if (ibv_modify_qp(id_->qp, &attr, IBV_QP_STATE) != 0)
    SOFTDAT_LOG(kWarn, "verbs: moving the QP to ERR failed: %s", std::strerror(errno));
}

void VerbsEndpoint::Finish() {
  PollCqs();
  ibv_qp* qp;
  {
    std::lock_guard lock(mutex_);
    qp = qp_;
    qp_ = nullptr;
    state_ = State::kEnded;
  }
  // A QP whose connection was established goes now. One that never was stays (in ERR, so the
  // device touches no memory) for the destructor: on siw destroying it waits out the MPA timeout.
  if (qp != nullptr && established_) {
    rdma_destroy_qp(id_);
    PollCqs();  // what the device completed while it went
  }
  ended_reported_ = true;
  events_->OnEnded(end_why_, {end_data_, end_data_length_});
  events_->Deliver();
}

bool VerbsEndpoint::PollCqs() {
  if (ended_reported_) {
    ibv_wc wc[16];
    while (ibv_poll_cq(send_cq_, 16, wc) > 0) {}
    while (ibv_poll_cq(recv_cq_, 16, wc) > 0) {}
    return false;
  }
  bool any = false;
  ibv_wc wc[16];
  int n;
  while ((n = ibv_poll_cq(send_cq_, 16, wc)) > 0) {
    any = true;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tail = send_tail_.load(std::memory_order_relaxed);
      // Pairs with Post's release of send_head_: the device orders the completion after the
      // post, but the C++ memory model (and TSan) only sees this acquire.
      (void)send_head_.load(std::memory_order_acquire);
      const std::uint32_t length = send_lengths_[tail % send_lengths_size_];
      send_tail_.store(tail + 1, std::memory_order_release);
      const WorkStatus status = FromWcStatus(wc[i].status);
      if (status != WorkStatus::kSuccess && status != WorkStatus::kFlushed)
        SOFTDAT_LOG(kInfo, "verbs: send completion %s (vendor %u)", ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
      events_->OnWorkDone(wc[i].wr_id, status, status == WorkStatus::kSuccess ? length : 0);
      events_->Deliver();
      if (status != WorkStatus::kSuccess && status != WorkStatus::kFlushed) Break();
    }
  }
  while ((n = ibv_poll_cq(recv_cq_, 16, wc)) > 0) {
    any = true;
    for (int i = 0; i < n; ++i) {
      if (srq_ == nullptr) recv_outstanding_.fetch_sub(1);
      // A Send longer than its receive buffer: siw says LOC_LEN_ERR, rxe (seen in the VM, SRQ
      // receive) LOC_QP_OP_ERR while the sender gets REM_OP_ERR. DAT calls it a local length error.
      const WorkStatus status =
          wc[i].status == IBV_WC_LOC_QP_OP_ERR ? WorkStatus::kLocalLength : FromWcStatus(wc[i].status);
      RecvInfo info;
      if (status == WorkStatus::kSuccess) {
        info.length = wc[i].byte_len;
        info.invalidated = (wc[i].wc_flags & IBV_WC_WITH_INV) != 0;
        info.invalidate_key = info.invalidated ? wc[i].invalidated_rkey : 0;
      }
      if (status != WorkStatus::kSuccess && status != WorkStatus::kFlushed)
        SOFTDAT_LOG(kInfo, "verbs: receive completion %s (vendor %u)", ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
      events_->OnDeviceRecvDone(wc[i].wr_id, status, info);
      events_->Deliver();
      if (status != WorkStatus::kSuccess && status != WorkStatus::kFlushed) Break();
    }
  }
  return any;
}

bool VerbsEndpoint::Service(Clock::time_point now, bool& timers) {
  bool any = PollCqs();
  State s;
  bool disconnect;
  Clock::time_point connect_deadline;
  {
    std::lock_guard lock(mutex_);
    s = state_;
    disconnect = disconnect_requested_;
    connect_deadline = connect_deadline_;
    if (disconnect && graceful_ && state_ == State::kConnected && send_head_.load() != send_tail_.load() &&
        now < graceful_deadline_) {
      disconnect = false;  // sends still in flight: look again soon
      timers = true;
    }
  }
  if (s == State::kConnectRequested) {
    StartConnect();
    any = true;
  } else if (s == State::kAcceptRequested) {
    StartAccept();
    any = true;
  }
  s = state();
  if (disconnect && s != State::kIdle && s != State::kDraining && s != State::kEnded) {
    // Only a connected id: rdma_disconnect on a connecting siw id blocks until the MPA timeout.
    if (s == State::kConnected) rdma_disconnect(id_);
    BeginEnd(ConnectionEnd::kDisconnected);
    any = true;
  }
  s = state();
  if (s == State::kResolving || s == State::kConnecting) {
    if (now >= connect_deadline) {
      // No rdma_disconnect: on a connecting siw id it blocks until the MPA exchange times out
      // (about 10 s); destroying the id later tells the peer.
      BeginEnd(ConnectionEnd::kTimedOut);
      any = true;
    } else if (connect_deadline != Clock::time_point::max()) {
      timers = true;
    }
  }
  if (state() == State::kDraining) {
    const bool sends_done = send_head_.load() == send_tail_.load();
    const bool recvs_done = srq_ != nullptr || recv_outstanding_.load() == 0;
    if ((sends_done && recvs_done) || now >= drain_deadline_) {
      if (!(sends_done && recvs_done))
        SOFTDAT_LOG(kInfo, "verbs: the device did not flush every posted request; core flushes the rest");
      Finish();
      any = true;
    } else {
      timers = true;
    }
  }
  return any;
}

}  // namespace softdat::transport::verbs
