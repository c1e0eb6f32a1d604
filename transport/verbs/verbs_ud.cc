// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Unreliable datagrams on softdat-verbs (verbs_ud.h): a UD endpoint's QP and its resolutions,
// the UD listener and its requests, address handles.
#include "transport/verbs/verbs_ud.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/names.h"
#include "transport/verbs/verbs_endpoint.h"
#include "transport/verbs/verbs_memory.h"

namespace softdat::transport::verbs {
namespace {

constexpr int kResolveMs = 5000;
// rdma_cm's status for a SIDR answer that refuses (IB_SIDR_REJECT), reported as UNREACHABLE.
constexpr int kSidrReject = 2;
// How long a Resolve with no timeout waits at most for its answer.
constexpr auto kLongestResolve = std::chrono::hours(24);

}  // namespace

namespace ud {

void EncodeHeader(const Requester& requester, std::uint8_t* out) {
  std::memset(out, 0, kHeaderSize);
  out[0] = 'S';
  out[1] = 'D';
  out[2] = 1;
  const std::uint32_t qp_num = htonl(requester.qp_num);
  const std::uint16_t lid = htons(requester.lid);
  std::memcpy(out + 4, &qp_num, 4);
  std::memcpy(out + 8, &lid, 2);
  std::memcpy(out + 12, requester.gid.raw, 16);
}

bool DecodeHeader(std::span<const std::uint8_t> private_data, Requester& out) {
  if (private_data.size() < kHeaderSize || private_data[0] != 'S' || private_data[1] != 'D' || private_data[2] != 1)
    return false;
  std::uint32_t qp_num;
  std::uint16_t lid;
  std::memcpy(&qp_num, private_data.data() + 4, 4);
  std::memcpy(&lid, private_data.data() + 8, 2);
  out.qp_num = ntohl(qp_num);
  out.lid = ntohs(lid);
  std::memcpy(out.gid.raw, private_data.data() + 12, 16);
  return true;
}

std::uint32_t SourceAddress(const std::uint8_t* grh) {
  std::uint32_t address = 0;
  if (grh[20] == 0x45) {  // RoCE v2 over IPv4: the IPv4 header, its source at byte 12
    std::memcpy(&address, grh + 20 + 12, 4);
    return address;
  }
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  if (std::memcmp(grh + 8, kMapped, sizeof kMapped) == 0) std::memcpy(&address, grh + 20, 4);  // ::ffff:a.b.c.d
  return address;
}

}  // namespace ud

// ---- the UD endpoint ---------------------------------------------------------------------------

Status VerbsEndpoint::InitDatagram() {
  if (rdma_create_id(transport_.cm_channel(), &id_, static_cast<CmOwner*>(this), RDMA_PS_UDP) != 0) {
    id_ = nullptr;
    return Status(Code::kInsufficientResources);
  }
  sockaddr_in at = transport_.address();
  at.sin_port = 0;
  if (rdma_bind_addr(id_, reinterpret_cast<sockaddr*>(&at)) != 0) {
    SOFTDAT_LOG(kWarn, "verbs: binding a UD endpoint to the IA address failed: %s", std::strerror(errno));
    return Status(Code::kInsufficientResources);
  }
  if (!CreateQp()) return Status(Code::kInsufficientResources);  // rdma_cm moves a UD QP to RTS
  {
    std::lock_guard lock(mutex_);
    state_ = State::kConnected;  // posts any time from now on
    std::memcpy(&local_, rdma_get_local_addr(id_), sizeof local_);
  }
  established_ = true;
  return Status::Ok();
}

ibv_pd* VerbsEndpoint::ibv_protection_domain() const { return pd_->pd(); }

Status VerbsEndpoint::Resolve(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                              std::uint64_t timeout_us, std::uint64_t request) {
  if (!datagram_) return Status(Code::kModelNotSupported);
  if (private_data.size() > ud::kMaxPrivateData) return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  sockaddr_in to = remote;
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  const auto deadline = Clock::now() + (timeout_us == UINT64_MAX ? std::chrono::duration_cast<Clock::duration>(kLongestResolve)
                                                                 : std::chrono::microseconds(timeout_us));
  {
    std::lock_guard lock(mutex_);
    if (state_ != State::kConnected) return Status(Code::kInvalidState, Detail::kEpDisconnected);
    resolutions_.push_back(std::make_unique<UdResolution>(*this, request, to, private_data, deadline));
  }
  transport_.RequestService(this);
  return Status::Ok();
}

bool VerbsEndpoint::ServiceResolutions(Clock::time_point now, bool& timers) {
  std::vector<UdResolution*> work;
  {
    std::lock_guard lock(mutex_);
    for (const auto& resolution : resolutions_) work.push_back(resolution.get());
  }
  bool any = false;
  for (UdResolution* resolution : work) {
    if (!resolution->started_) {
      resolution->started_ = true;
      any = true;
      sockaddr_in source = transport_.address();
      source.sin_port = 0;
      sockaddr_in destination = resolution->remote_;
      if (rdma_create_id(transport_.cm_channel(), &resolution->id_, static_cast<CmOwner*>(resolution), RDMA_PS_UDP) != 0) {
        resolution->id_ = nullptr;
        FailResolution(*resolution, ConnectionEnd::kUnreachable);
      } else if (rdma_resolve_addr(resolution->id_, reinterpret_cast<sockaddr*>(&source),
                                   reinterpret_cast<sockaddr*>(&destination), kResolveMs) != 0) {
        FailResolution(*resolution, ConnectionEnd::kUnreachable);
      }
    }
    if (!resolution->done_ && now >= resolution->deadline_) FailResolution(*resolution, ConnectionEnd::kTimedOut);
    if (!resolution->done_) timers = true;
  }
  // Those done go, their ids with them (no event of theirs runs: this is the progress's turn).
  std::vector<std::unique_ptr<UdResolution>> finished;
  {
    std::lock_guard lock(mutex_);
    for (auto it = resolutions_.begin(); it != resolutions_.end();) {
      if ((*it)->done_) {
        finished.push_back(std::move(*it));
        it = resolutions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& resolution : finished) {
    if (resolution->id_ != nullptr) {
      std::atomic_ref<void*>(resolution->id_->context).store(nullptr);
      rdma_destroy_id(resolution->id_);
    }
    any = true;
  }
  return any;
}

void VerbsEndpoint::FailResolution(UdResolution& resolution, ConnectionEnd why, std::span<const std::uint8_t> private_data) {
  if (resolution.done_) return;
  resolution.done_ = true;
  SOFTDAT_LOG(kInfo, "verbs: UD address resolution failed: %s", ConnectionEndName(why));
  events_->OnResolveFailed(resolution.request_, why, private_data);
  events_->Deliver();
  transport_.RequestService(this);  // frees it
}

void UdResolution::OnCmEvent(const CmEvent& event) { endpoint_.OnResolutionEvent(*this, event); }

void VerbsEndpoint::OnResolutionEvent(UdResolution& resolution, const CmEvent& e) {
  if (resolution.done_) return;
  switch (e.type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (rdma_resolve_route(resolution.id_, kResolveMs) != 0) FailResolution(resolution, ConnectionEnd::kUnreachable);
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      // softdat's header first: the passive side makes its handle of this QP from it.
      std::uint8_t data[255];
      ud::Requester self;
      self.qp_num = qp_num_;
      self.lid = transport_.device().port_attr.lid;
      std::memcpy(self.gid.raw, resolution.id_->route.addr.addr.ibaddr.sgid.raw, 16);
      ud::EncodeHeader(self, data);
      const std::size_t length = std::min<std::size_t>(resolution.private_data_.size(), sizeof data - ud::kHeaderSize);
      if (length > 0) std::memcpy(data + ud::kHeaderSize, resolution.private_data_.data(), length);
      rdma_conn_param p{};
      p.private_data = data;
      p.private_data_len = static_cast<std::uint8_t>(ud::kHeaderSize + length);
      if (rdma_connect(resolution.id_, &p) != 0) {
        SOFTDAT_LOG(kInfo, "verbs: rdma_connect for UD resolution failed: %s", std::strerror(errno));
        FailResolution(resolution, ConnectionEnd::kUnreachable);
      }
      return;
    }
    case RDMA_CM_EVENT_ESTABLISHED: {
      ibv_ah_attr attr = e.ah_attr;
      ibv_ah* ah = ibv_create_ah(pd_->pd(), &attr);
      if (ah == nullptr) {
        SOFTDAT_LOG(kWarn, "verbs: ibv_create_ah for a UD peer failed: %s", std::strerror(errno));
        return FailResolution(resolution, ConnectionEnd::kUnreachable);
      }
      resolution.done_ = true;
      events_->OnResolved(resolution.request_,
                          std::make_unique<VerbsAddressHandle>(ah, e.qp_num, e.qkey, resolution.remote_.sin_addr.s_addr),
                          {e.private_data, e.private_data_length});
      events_->Deliver();
      transport_.RequestService(this);  // frees the resolution
      return;
    }
    case RDMA_CM_EVENT_REJECTED:
      return FailResolution(resolution, ConnectionEnd::kPeerRejected, {e.private_data, e.private_data_length});
    case RDMA_CM_EVENT_UNREACHABLE:
      if (e.status == kSidrReject)
        return FailResolution(resolution, ConnectionEnd::kPeerRejected, {e.private_data, e.private_data_length});
      return FailResolution(resolution, ConnectionEnd::kUnreachable);
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
      SOFTDAT_LOG(kInfo, "verbs: UD resolution: %s, status %d", rdma_event_str(e.type), e.status);
      return FailResolution(resolution, ConnectionEnd::kUnreachable);
    default:
      return;
  }
}

// ---- the listener ------------------------------------------------------------------------------

Status VerbsUdListener::Create(VerbsTransport& transport, std::uint16_t port, ListenEvents* events,
                               std::unique_ptr<Listener>& out) {
  if (!transport.capabilities().datagrams) return Status(Code::kModelNotSupported);
  std::unique_ptr<VerbsUdListener> listener(new VerbsUdListener(transport, events));
  if (rdma_create_id(transport.cm_channel(), &listener->id_, static_cast<CmOwner*>(listener.get()), RDMA_PS_UDP) != 0) {
    listener->id_ = nullptr;
    return Status(Code::kInsufficientResources);
  }
  sockaddr_in address = transport.address();
  address.sin_port = htons(port);
  if (rdma_bind_addr(listener->id_, reinterpret_cast<sockaddr*>(&address)) != 0 || rdma_listen(listener->id_, 64) != 0) {
    const int error = errno;
    return error == EADDRINUSE ? Status(Code::kConnQualInUse) : Status(Code::kConnQualUnavailable);
  }
  listener->port_ = ntohs(rdma_get_src_port(listener->id_));
  out = std::move(listener);
  return Status::Ok();
}

VerbsUdListener::~VerbsUdListener() {
  if (id_ == nullptr) return;
  std::atomic_ref<void*>(id_->context).store(nullptr);
  transport_.turn().WaitUnlessMine();
  rdma_destroy_id(id_);
}

void VerbsUdListener::OnCmEvent(const CmEvent& event) {
  if (event.type != RDMA_CM_EVENT_CONNECT_REQUEST) return;
  ud::Requester requester;
  if (!ud::DecodeHeader({event.private_data, event.private_data_length}, requester)) {
    // Not a softdat-verbs UD endpoint: its QP cannot be named, so it cannot be answered usefully.
    SOFTDAT_LOG(kInfo, "verbs: a UD request without softdat's header, refused");
    rdma_reject(event.id, nullptr, 0);
    rdma_destroy_id(event.id);
    return;
  }
  events_->OnConnectRequest(std::make_unique<VerbsUdPending>(transport_, event, requester));
}

VerbsUdPending::VerbsUdPending(VerbsTransport& transport, const CmEvent& request, const ud::Requester& requester)
    : transport_(transport), id_(request.id), requester_(requester) {
  data_length_ = request.private_data_length - ud::kHeaderSize;
  std::memcpy(data_, request.private_data + ud::kHeaderSize, data_length_);
  std::memcpy(&remote_, rdma_get_peer_addr(id_), sizeof remote_);
  std::memcpy(&local_, rdma_get_local_addr(id_), sizeof local_);
}

VerbsUdPending::~VerbsUdPending() {
  if (!answered_.exchange(true)) rdma_reject(id_, nullptr, 0);
  rdma_destroy_id(id_);  // its context is null: the progress only acks its events
}

void VerbsUdPending::Reject(std::span<const std::uint8_t> private_data) {
  if (answered_.exchange(true)) return;
  private_data = private_data.first(std::min<std::size_t>(private_data.size(), 255));
  if (rdma_reject(id_, private_data.data(), static_cast<std::uint8_t>(private_data.size())) != 0)
    SOFTDAT_LOG(kInfo, "verbs: rejecting a UD request failed: %s", std::strerror(errno));
}

Status VerbsUdPending::AcceptDatagram(Endpoint& endpoint, std::span<const std::uint8_t> private_data,
                                      std::unique_ptr<AddressHandle>& requester) {
  auto* verbs = dynamic_cast<VerbsEndpoint*>(&endpoint);
  if (verbs == nullptr || !verbs->datagram() || &verbs->transport() != &transport_)
    return Status(Code::kInvalidParameter, Detail::kParamEp);
  if (private_data.size() > 255) return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  if (answered_.exchange(true)) return Status(Code::kInvalidState);
  // The requester as its header names it, reached from the GID this request arrived on (SIDR gives
  // the passive side no address handle of its own).
  ibv_ah_attr attr{};
  attr.dlid = requester_.lid;
  attr.port_num = id_->port_num;
  attr.is_global = 1;
  attr.grh.dgid = requester_.gid;
  attr.grh.hop_limit = 64;
  const ibv_gid& local = id_->route.addr.addr.ibaddr.sgid;
  ibv_gid gid{};
  for (int index = 0; index < transport_.device().port_attr.gid_tbl_len; ++index) {
    if (ibv_query_gid(id_->verbs, id_->port_num, index, &gid) == 0 && std::memcmp(gid.raw, local.raw, 16) == 0) {
      attr.grh.sgid_index = static_cast<std::uint8_t>(index);
      break;
    }
  }
  ibv_ah* ah = ibv_create_ah(verbs->ibv_protection_domain(), &attr);
  if (ah == nullptr) {
    SOFTDAT_LOG(kWarn, "verbs: ibv_create_ah for a UD requester failed: %s", std::strerror(errno));
    answered_ = false;
    return Status(Code::kInsufficientResources);
  }
  rdma_conn_param p{};
  p.private_data = private_data.data();
  p.private_data_len = static_cast<std::uint8_t>(private_data.size());
  p.qp_num = verbs->qp_num();
  if (rdma_accept(id_, &p) != 0) {
    SOFTDAT_LOG(kInfo, "verbs: answering a UD request failed: %s", std::strerror(errno));
    ibv_destroy_ah(ah);
    return Status(Code::kInternal);
  }
  requester = std::make_unique<VerbsAddressHandle>(ah, requester_.qp_num, ud::kQkey, remote_.sin_addr.s_addr);
  return Status::Ok();
}

}  // namespace softdat::transport::verbs
