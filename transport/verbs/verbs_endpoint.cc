// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsEndpoint: connection setup through rdma_cm, posting to the QP, completions, teardown.
#include "transport/verbs/verbs_endpoint.h"

#include <arpa/inet.h>

#include <algorithm>
#include <iterator>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "transport/verbs/verbs_cq.h"
#include "transport/verbs/verbs_memory.h"
#include "transport/verbs/verbs_srq.h"
#include "transport/verbs/verbs_ud.h"

namespace softdat::transport::verbs {
namespace {

constexpr int kResolveMs = 5000;
// How long teardown waits for the device to flush what is posted. rxe and siw flush at once; the
// bound only keeps a device that does not from holding OnEnded back forever (core flushes the rest).
constexpr auto kDrainBound = std::chrono::seconds(3);
// How long a graceful Disconnect lets posted sends finish (an RNR wait with rnr_retry 7 never does).
constexpr auto kGracefulBound = std::chrono::seconds(5);

// The inline data a QP asks for: rxe grants several hundred bytes, siw about a hundred; a device
// that refuses is asked again for less, then for none.
constexpr std::uint32_t kInlineWanted[] = {256, 64, 0};
// How often teardown tries to take a CQ another thread is polling before it looks again later.
constexpr int kDrainTries = 64;

// wr_id: bit 63 a send, bit 62 a receive of the endpoint's own queue (neither: an SRQ slot);
// bits 32-61 the endpoint's generation; bits 0-31 the ring sequence.
constexpr std::uint64_t kSendTag = 1ull << 63;
constexpr std::uint64_t kRecvTag = 1ull << 62;
constexpr std::uint64_t kGenerationMask = (1ull << 30) - 1;
std::uint64_t WrId(std::uint64_t tag, std::uint64_t generation, std::uint64_t seq) {
  return tag | (generation & kGenerationMask) << 32 | (seq & 0xFFFFFFFFu);
}

std::span<const std::uint8_t> Data(const CmEvent& e) { return {e.private_data, e.private_data_length}; }

// By WorkKind: whose payload the device may take inline at the post (what it sends; not a Read's
// or an atomic's local buffer, which it writes).
constexpr bool kMayInline[] = {true, true, false, true, false, false, true};
static_assert(std::size(kMayInline) == static_cast<std::size_t>(WorkKind::kSendDatagram) + 1);

}  // namespace

VerbsEndpoint::VerbsEndpoint(VerbsTransport& transport, const EndpointConfig& config, EndpointEvents* events)
    : AsyncTarget(transport),
      transport_(transport),
      config_(config),
      datagram_(config.datagram),
      events_(events),
      pd_(static_cast<VerbsPd*>(config.pd)),
      srq_(static_cast<VerbsSrq*>(config.srq)),
      generation_(transport.NextGeneration()),
      send_segments_(std::max<std::uint32_t>(1, config.max_send_segments)),
      recv_segments_(std::max<std::uint32_t>(1, config.max_recv_segments)),
      send_cq_(static_cast<VerbsCq*>(config.send_cq)),
      recv_cq_(static_cast<VerbsCq*>(config.recv_cq)) {}

Status VerbsEndpoint::Create(VerbsTransport& transport, const EndpointConfig& config, EndpointEvents* events,
                             std::unique_ptr<Endpoint>& out) {
  const Capabilities& caps = transport.capabilities();
  if (config.pd == nullptr) return Status(Code::kInvalidParameter, Detail::kPz);
  if (config.max_send_work > caps.max_send_work || config.max_recv_work > caps.max_recv_work ||
      config.max_send_segments > caps.max_segments || config.max_recv_segments > caps.max_segments)
    return Status(Code::kInvalidParameter);
  std::unique_ptr<VerbsEndpoint> endpoint(new VerbsEndpoint(transport, config, events));
  if (Status s = endpoint->Init(); !s.ok()) return s;
  out = std::move(endpoint);
  return Status::Ok();
}

Status VerbsEndpoint::Init() {
  const std::uint32_t send = std::max<std::uint32_t>(1, config_.max_send_work);
  const std::uint32_t recv = std::max<std::uint32_t>(1, config_.max_recv_work);
  // An EVD-less side reports to the transport's own CQ, made on first use.
  if ((send_cq_ == nullptr || recv_cq_ == nullptr) && transport_.OwnCq() == nullptr)
    return Status(Code::kInsufficientResources, Detail::kTep);
  send_sge_.reset(new ibv_sge[send_segments_]);
  recv_sge_.reset(new ibv_sge[recv_segments_]);
  early_ids_.reset(new std::uint64_t[recv]);
  early_counts_.reset(new std::uint32_t[recv]);
  early_segments_.reset(new Segment[static_cast<std::size_t>(recv) * recv_segments_]);
  sends_.Allocate(send);
  if (srq_ == nullptr) recvs_.Allocate(recv);
  return datagram_ ? InitDatagram() : Status::Ok();
}

VerbsEndpoint::~VerbsEndpoint() {
  // No new request of ours starts in the progress, and none runs once its turn is free (or ours):
  // id_ and the rest of the progress-side state are ours from here.
  transport_.Forget(this);
  transport_.turn().WaitUnlessMine();
  ibv_qp* qp = id_ != nullptr ? id_->qp : nullptr;
  // Unfindable: rdma_cm and async events only acked, completions dropped. Then wait once more
  // for an event that found this endpoint before.
  if (id_ != nullptr) std::atomic_ref<void*>(id_->context).store(nullptr);
  // A UD endpoint's resolutions under way point their ids at themselves, which point at us.
  for (const auto& resolution : resolutions_)
    if (resolution->id_ != nullptr) std::atomic_ref<void*>(resolution->id_->context).store(nullptr);
  transport_.async_events().Detach(this, qp != nullptr ? &qp->qp_context : nullptr);
  LeaveCqs();
  transport_.turn().WaitUnlessMine();
  // The destroys run with no turn held: siw's rdma_destroy_id waits out an unfinished MPA
  // exchange (about 10 s) and must not stall the other endpoints' progress meanwhile.
  if (id_ != nullptr) {
    if (qp != nullptr) rdma_destroy_qp(id_);
    rdma_destroy_id(id_);
  }
  if (pending_id_ != nullptr) {
    rdma_reject(pending_id_, nullptr, 0);
    rdma_destroy_id(pending_id_);
  }
  // Resolutions still under way: their ids unfindable since the second turn, as id_.
  for (const auto& resolution : resolutions_)
    if (resolution->id_ != nullptr) rdma_destroy_id(resolution->id_);
}

VerbsCq* VerbsEndpoint::send_cq() const {
  std::lock_guard lock(mutex_);
  return send_cq_ != nullptr ? send_cq_ : transport_.OwnCq();
}

VerbsCq* VerbsEndpoint::recv_cq() const {
  std::lock_guard lock(mutex_);
  return recv_cq_ != nullptr ? recv_cq_ : transport_.OwnCq();
}

void VerbsEndpoint::SetCompletionQueues(CompletionQueue* send_cq, CompletionQueue* recv_cq) {
  if ((send_cq == nullptr || recv_cq == nullptr) && transport_.OwnCq() == nullptr)
    SOFTDAT_LOG(kWarn, "verbs: no completion queue for an endpoint without an EVD");
  std::lock_guard lock(mutex_);
  send_cq_ = static_cast<VerbsCq*>(send_cq);
  recv_cq_ = static_cast<VerbsCq*>(recv_cq);
}

void VerbsEndpoint::LeaveCqs() {
  if (!in_cqs_) return;
  in_cqs_ = false;
  VerbsCq* const send = send_cq();
  VerbsCq* const recv = recv_cq();
  send->Remove(qp_num_);
  if (recv != send) recv->Remove(qp_num_);
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
  transport_.RequestService(this);
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
  transport_.RequestService(this);
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
  transport_.RequestService(this);
}

Status VerbsEndpoint::Post(const Work& work) {
  if (work.local.size() > send_segments_) return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
  ibv_send_wr wr{};
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
    // The DAT IB extensions, posted only where the capabilities offer them (verbs_device.cc).
    case WorkKind::kRdmaWriteImmediate:
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      // As OFED DAPL does: the consumer's 32 bits as the host holds them, not swapped to the
      // network order ibv_send_wr's type suggests (dtestx against OFED DAPL on rxe0 checks it).
      wr.imm_data = work.immediate;
      wr.wr.rdma.remote_addr = work.remote_address;
      wr.wr.rdma.rkey = work.remote_key;
      if (work.solicited) wr.send_flags |= IBV_SEND_SOLICITED;
      break;
    case WorkKind::kFetchAdd:
    case WorkKind::kCompareSwap:
      wr.opcode = work.kind == WorkKind::kFetchAdd ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
      wr.wr.atomic.remote_addr = work.remote_address;
      wr.wr.atomic.rkey = work.remote_key;
      wr.wr.atomic.compare_add = work.compare_add;
      wr.wr.atomic.swap = work.swap;
      break;
    case WorkKind::kSendDatagram: {
      if (!datagram_) return Status(Code::kModelNotSupported);  // a connected endpoint sends none (core never asks)
      // Core gives a UD endpoint only address handles of this transport's UD endpoints.
      const auto& to = static_cast<const VerbsAddressHandle&>(*work.destination);
      wr.opcode = IBV_WR_SEND;
      wr.wr.ud.ah = to.ah();
      wr.wr.ud.remote_qpn = to.qpn();
      wr.wr.ud.remote_qkey = to.qkey();
      break;
    }
  }
  std::lock_guard lock(mutex_);
  // Ending (the QP in ERR, or gone while OnEnded is on its way): kInvalidState, which core reads
  // as "the end flushes this request" (core/ep_post.cc).
  if (qp_ == nullptr || (state_ != State::kConnected && state_ != State::kDraining))
    return Status(Code::kInvalidState, Detail::kEpDisconnected);
  for (std::size_t i = 0; i < work.local.size(); ++i)
    send_sge_[i] = ibv_sge{work.local[i].address, work.local[i].length, work.local[i].key};
  wr.sg_list = send_sge_.get();
  wr.num_sge = static_cast<int>(work.local.size());
  // Small Sends and Writes go inline: the device copies them at the post instead of reading
  // them by key later (no work request keeps the buffer; the completion still comes).
  if (kMayInline[static_cast<std::size_t>(work.kind)] && work.length > 0 && work.length <= max_inline_)
    wr.send_flags |= IBV_SEND_INLINE;
  std::uint64_t seq;
  bool signalled;
  if (!sends_.Push(work.id, static_cast<std::uint32_t>(work.length), !work.quiet_success, seq, signalled))
    return Status(Code::kQueueFull);
  if (signalled) wr.send_flags |= IBV_SEND_SIGNALED;
  wr.wr_id = WrId(kSendTag, generation_, seq);
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    sends_.Unpush();
    SOFTDAT_LOG(kWarn, "verbs: ibv_post_send failed: %s", std::strerror(rc));
    if (state_ == State::kDraining) return Status(Code::kInvalidState, Detail::kEpDisconnected);
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
    return Status::Ok();
  }
  return PostRecvLocked(recv_id, segments);
}

Status VerbsEndpoint::PostRecvLocked(std::uint64_t recv_id, std::span<const Segment> segments) {
  ibv_recv_wr wr{};
  wr.sg_list = recv_sge_.get();
  if (segments.empty()) {
    recv_sge_[0] = pd_->EmptySge();
    wr.num_sge = 1;
  } else {
    for (std::size_t i = 0; i < segments.size(); ++i)
      recv_sge_[i] = ibv_sge{segments[i].address, segments[i].length, segments[i].key};
    wr.num_sge = static_cast<int>(segments.size());
  }
  std::uint64_t seq;
  if (!recvs_.Push(Posted{recv_id, 0, segments.empty() ? 0 : segments[0].address}, seq))
    return Status(Code::kQueueFull);
  wr.wr_id = WrId(kRecvTag, generation_, seq);
  ibv_recv_wr* bad = nullptr;
  if (const int rc = ibv_post_recv(qp_, &wr, &bad); rc != 0) {
    recvs_.Unpush();
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

ibv_qp* VerbsEndpoint::CreateQpWithInline(std::uint32_t max_inline) {
  ibv_qp_init_attr attr{};
  attr.qp_context = static_cast<AsyncTarget*>(this);  // what the async event router reads
  attr.send_cq = send_cq()->cq();
  attr.recv_cq = recv_cq()->cq();
  attr.srq = srq_ != nullptr ? srq_->srq() : nullptr;
  attr.cap.max_send_wr = std::max<std::uint32_t>(1, config_.max_send_work);
  attr.cap.max_recv_wr = srq_ != nullptr ? 0 : std::max<std::uint32_t>(1, config_.max_recv_work);
  attr.cap.max_send_sge = send_segments_;
  attr.cap.max_recv_sge = srq_ != nullptr ? 0 : recv_segments_;
  attr.cap.max_inline_data = max_inline;
  attr.qp_type = datagram_ ? IBV_QPT_UD : IBV_QPT_RC;
  if (rdma_create_qp(id_, pd_->pd(), &attr) != 0) return nullptr;
  std::lock_guard lock(mutex_);
  max_inline_ = attr.cap.max_inline_data;
  return id_->qp;
}

bool VerbsEndpoint::CreateQp() {
  ibv_qp* qp = nullptr;
  for (std::uint32_t inline_wanted : kInlineWanted)
    if ((qp = CreateQpWithInline(inline_wanted)) != nullptr) break;
  if (qp == nullptr) {
    SOFTDAT_LOG(kWarn, "verbs: rdma_create_qp failed: %s", std::strerror(errno));
    return false;
  }
  // In the CQs' tables before anything can complete.
  qp_num_ = qp->qp_num;
  VerbsCq* const send = send_cq();
  VerbsCq* const recv = recv_cq();
  send->Add(qp_num_, this);
  if (recv != send) recv->Add(qp_num_, this);
  in_cqs_ = true;
  std::lock_guard lock(mutex_);
  qp_ = qp;
  // The receives posted before the QP existed, in their order.
  for (std::uint32_t i = 0; i < early_count_; ++i) {
    const Segment* segments = &early_segments_[std::size_t{i} * recv_segments_];
    // Left for core to flush at OnEnded on failure.
    if (!PostRecvLocked(early_ids_[i], {segments, early_counts_[i]}).ok())
      SOFTDAT_LOG(kWarn, "verbs: posting an early receive failed");
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
  std::atomic_ref<void*>(id_->context).store(static_cast<CmOwner*>(this));
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
    BreakNow();  // a QP error: tell the peer and end, before an rdma_cm event says DISCONNECTED
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

// A completion error (on a polling thread): the progress tells the peer and ends (Service).
void VerbsEndpoint::Break() {
  break_requested_.store(true);
  transport_.RequestService(this);
}

// A QP error, or a failed completion, in the progress context: tell the peer and end.
void VerbsEndpoint::BreakNow() {
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
  // The drain is watched from Service: until the device flushed what is posted, or its bound.
  transport_.RequestService(this);
  if (!has_qp) {
    (void)Finish();  // nothing the device holds: end now (or from that service)
    return;
  }
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  if (ibv_modify_qp(id_->qp, &attr, IBV_QP_STATE) != 0)
    SOFTDAT_LOG(kWarn, "verbs: moving the QP to ERR failed: %s", std::strerror(errno));
}

bool VerbsEndpoint::DrainCqs() {
  auto drain = [](VerbsCq* cq) {
    for (int tries = 0; tries < kDrainTries; ++tries) {
      if (cq->TryDrain()) return true;
      std::this_thread::yield();
    }
    return false;
  };
  VerbsCq* const send = send_cq();
  VerbsCq* const recv = recv_cq();
  return drain(send) && (recv == send || drain(recv));
}

bool VerbsEndpoint::Finish() {
  // What the device completed before the end is reported before it: drained from the CQs (which
  // reports the other endpoints' completions found there too), then the QP goes, then what it
  // completed while it went. A CQ another thread polls now is looked at again soon.
  if (!qp_destroyed_) {
    if (in_cqs_ && !DrainCqs()) return false;
    ibv_qp* qp;
    {
      std::lock_guard lock(mutex_);
      qp = qp_;
      qp_ = nullptr;
      state_ = State::kEnded;
    }
    // A QP whose connection was established goes now. One that never was stays (in ERR, so the
    // device touches no memory) for the destructor: on siw destroying it waits out the MPA timeout.
    if (qp != nullptr && established_) rdma_destroy_qp(id_);
    qp_destroyed_ = true;
  }
  if (in_cqs_ && !DrainCqs()) return false;
  LeaveCqs();
  // The flush is in: an unsignalled send older than every signalled one left had succeeded.
  sends_.TakeDone([this](const SendRing::Posted& posted) {
    events_->OnWorkDone(posted.id, WorkStatus::kSuccess, posted.length);
  });
  ended_reported_.store(true, std::memory_order_release);
  events_->OnEnded(end_why_, {end_data_, end_data_length_});
  events_->Deliver();
  return true;
}

void VerbsEndpoint::OnCompletion(const ibv_wc& wc) {
  if (ended_reported_.load(std::memory_order_acquire)) return;
  if ((wc.wr_id & kSendTag) != 0)
    OnSendCompletion(wc);
  else
    OnRecvCompletion(wc);
}

void VerbsEndpoint::OnSendCompletion(const ibv_wc& wc) {
  const WorkStatus status = FromWcStatus(wc.status);
  const bool failed = status != WorkStatus::kSuccess && status != WorkStatus::kFlushed;
  // RC completes in order: the unsignalled sends posted before this one succeeded. They are
  // reported as they are met; the completed one (Complete's last) with its delivery, below.
  struct Done {
    std::uint64_t id;
    WorkStatus status;
    std::uint32_t length;
  } last{};
  const bool ours = (wc.wr_id >> 32 & kGenerationMask) == (generation_ & kGenerationMask) &&
                    sends_.Complete(wc.wr_id & 0xFFFFFFFFu, [&](const SendRing::Posted& posted, bool completed) {
                      const WorkStatus s = completed ? status : WorkStatus::kSuccess;
                      const std::uint32_t length = s == WorkStatus::kSuccess ? posted.length : 0;
                      if (completed)
                        last = Done{posted.id, s, length};
                      else
                        events_->OnWorkDone(posted.id, s, length);
                    });
  if (!ours) {
    SOFTDAT_LOG(kDebug, "verbs: a send completion 0x%llx of an older QP dropped", static_cast<unsigned long long>(wc.wr_id));
    return;
  }
  if (failed)
    SOFTDAT_LOG(kInfo, "verbs: send completion %s (vendor %u)", ibv_wc_status_str(wc.status), wc.vendor_err);
  // On this thread: a consumer's dequeue takes the event it makes.
  events_->DeliverWorkDone(last.id, last.status, last.length);
  if (failed) Break();
}

void VerbsEndpoint::OnRecvCompletion(const ibv_wc& wc) {
  std::uint64_t recv_id = wc.wr_id;  // an SRQ slot
  Posted posted{0, 0, 0};
  if ((wc.wr_id & kRecvTag) != 0) {
    if ((wc.wr_id >> 32 & kGenerationMask) != (generation_ & kGenerationMask) || !recvs_.Pop(wc.wr_id & 0xFFFFFFFFu, posted)) {
      SOFTDAT_LOG(kDebug, "verbs: a receive completion 0x%llx of an older QP dropped",
                  static_cast<unsigned long long>(wc.wr_id));
      return;
    }
    recv_id = posted.id;
  }
  // A Send longer than its receive buffer: siw says LOC_LEN_ERR, rxe (seen in the VM, SRQ
  // receive) LOC_QP_OP_ERR while the sender gets REM_OP_ERR. DAT calls it a local length error.
  const WorkStatus status = wc.status == IBV_WC_LOC_QP_OP_ERR ? WorkStatus::kLocalLength : FromWcStatus(wc.status);
  RecvInfo info;
  if (status == WorkStatus::kSuccess) {
    info.length = wc.byte_len;
    info.invalidated = (wc.wc_flags & IBV_WC_WITH_INV) != 0;
    info.invalidate_key = info.invalidated ? wc.invalidated_rkey : 0;
    // A datagram (its GRH first, counted in byte_len): the sender, as a UD completion names it.
    if (datagram_) {
      info.extension.source_qpn = wc.src_qp;
      if ((wc.wc_flags & IBV_WC_GRH) != 0 && posted.first != 0)
        info.extension.source_address = ud::SourceAddress(reinterpret_cast<const std::uint8_t*>(posted.first));
    }
    // An RDMA Write with immediate data: the buffer holds nothing; byte_len is the Write's length.
    if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
      info.extension.immediate = true;
      info.extension.immediate_data = wc.imm_data;  // unswapped, as OFED DAPL (see Post)
      info.extension.written = wc.byte_len;
      info.length = 0;
    }
  }
  const bool failed = status != WorkStatus::kSuccess && status != WorkStatus::kFlushed;
  if (failed)
    SOFTDAT_LOG(kInfo, "verbs: receive completion %s (vendor %u)", ibv_wc_status_str(wc.status), wc.vendor_err);
  // Reported and delivered in one step, on this thread: a consumer's dequeue takes the event it
  // makes.
  events_->DeliverDeviceRecv(recv_id, status, info);
  if (failed) Break();
}

bool VerbsEndpoint::Service(Clock::time_point now, bool& timers) {
  bool any = datagram_ && ServiceResolutions(now, timers);
  if (break_requested_.exchange(false)) {
    BreakNow();  // a completion failed on a polling thread
    any = true;
  }
  State s;
  bool disconnect;
  bool graceful;
  Clock::time_point connect_deadline;
  {
    std::lock_guard lock(mutex_);
    s = state_;
    disconnect = disconnect_requested_;
    graceful = graceful_ && now < graceful_deadline_;
    connect_deadline = connect_deadline_;
  }
  if (disconnect && graceful && s == State::kConnected && sends_.signalled_outstanding()) {
    // Sends still in flight: what completed may sit in a CQ nobody polls; bring it in. (An
    // unsignalled send behind the last signalled one raises no CQE to wait for.)
    if (in_cqs_) (void)send_cq()->TryDrain();
    if (sends_.signalled_outstanding()) {
      disconnect = false;  // look again soon
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
  if (state() == State::kDraining || (state() == State::kEnded && !ended_reported_.load())) {
    // The flushes come through the CQs, which nobody else may be polling: drain them here.
    if (in_cqs_ && !qp_destroyed_) (void)DrainCqs();
    // Unsignalled sends left after the last signalled one: flushed with a CQE if the device had
    // not completed them, else done; Finish sorts them once the flush is surely in.
    const bool sends_done = !sends_.signalled_outstanding();
    const bool recvs_done = srq_ != nullptr || recvs_.empty();
    if ((sends_done && recvs_done) || now >= drain_deadline_ || qp_destroyed_) {
      if (!(sends_done && recvs_done) && !qp_destroyed_)
        SOFTDAT_LOG(kInfo, "verbs: the device did not flush every posted request; core flushes the rest");
      if (!Finish()) timers = true;
      any = true;
    } else {
      timers = true;
    }
  }
  return any;
}

}  // namespace softdat::transport::verbs
