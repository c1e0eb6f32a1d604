// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EP connection management: connect, accept, reserve, disconnect, reset, and what the transport
// reports about the connection (established, ended).
#include <algorithm>
#include <cstring>
#include <limits>

#include "base/dat_names.h"
#include "base/log.h"
#include "core/ep.h"
#include "core/ia.h"
#include "core/private_data.h"
#include "transport/ia_params.h"
#include "transport/names.h"

namespace softdat::core {
namespace {

Detail StateDetail(DAT_EP_STATE state) {
  switch (state) {
    case DAT_EP_STATE_UNCONNECTED: return Detail::kEpUnconnected;
    case DAT_EP_STATE_RESERVED: return Detail::kEpReserved;
    case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING: return Detail::kEpPassConnPending;
    case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING: return Detail::kEpActConnPending;
    case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING: return Detail::kEpTentConnPending;
    case DAT_EP_STATE_CONNECTED: return Detail::kEpConnected;
    case DAT_EP_STATE_DISCONNECT_PENDING: return Detail::kEpDisconnPending;
    case DAT_EP_STATE_DISCONNECTED: return Detail::kEpDisconnected;
    case DAT_EP_STATE_COMPLETION_PENDING: return Detail::kEpCompletionPending;
    default: return Detail::kEpNotReady;
  }
}

// The connection event an ended connection reports, from the state it was in and why it ended.
// After an abrupt dat_ep_disconnect the end is DISCONNECTED whatever the transport saw: a peer's
// reset or Terminate that came in before the close took effect (both sides closing abruptly at
// once, as dapltest's do) is a race the consumer cannot tell from its own close. A graceful one
// that the peer breaks is still BROKEN: what was queued may not have arrived.
DAT_EVENT_NUMBER EndEvent(DAT_EP_STATE state, transport::ConnectionEnd why, bool local_disconnect,
                          bool local_abrupt, bool hard_watermark) {
  using transport::ConnectionEnd;
  if (hard_watermark) return DAT_CONNECTION_EVENT_BROKEN;
  switch (state) {
    case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
      if (local_disconnect) return DAT_CONNECTION_EVENT_DISCONNECTED;
      switch (why) {
        case ConnectionEnd::kPeerRejected: return DAT_CONNECTION_EVENT_PEER_REJECTED;
        case ConnectionEnd::kTimedOut: return DAT_CONNECTION_EVENT_TIMED_OUT;
        case ConnectionEnd::kUnreachable: return DAT_CONNECTION_EVENT_UNREACHABLE;
        default: return DAT_CONNECTION_EVENT_NON_PEER_REJECTED;
      }
    case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
      return local_disconnect ? DAT_CONNECTION_EVENT_DISCONNECTED
                              : DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR;
    default:
      return why == ConnectionEnd::kDisconnected || local_abrupt || (local_disconnect && why != ConnectionEnd::kBroken)
                 ? DAT_CONNECTION_EVENT_DISCONNECTED
                 : DAT_CONNECTION_EVENT_BROKEN;
  }
}

// What the end of a connection counts among the IA's connection-management counters.
void CountEnd(IaCounters& counters, DAT_EVENT_NUMBER event) {
  switch (event) {
    case DAT_CONNECTION_EVENT_DISCONNECTED: counters.AddShared(DCNT_IA_CM_DREQ_RX); break;
    case DAT_CONNECTION_EVENT_BROKEN: counters.AddShared(DCNT_IA_CM_ERR); break;
    case DAT_CONNECTION_EVENT_TIMED_OUT: counters.AddShared(DCNT_IA_CM_ERR_TIMEOUT); break;
    case DAT_CONNECTION_EVENT_UNREACHABLE: counters.AddShared(DCNT_IA_CM_ERR_REFUSED); break;
    case DAT_CONNECTION_EVENT_PEER_REJECTED: counters.AddShared(DCNT_IA_CM_USER_REJ_RX); break;
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: counters.AddShared(DCNT_IA_CM_ERR_REJ_RX); break;
    default: counters.AddShared(DCNT_IA_CM_ERR_UNEXPECTED); break;
  }
}

}  // namespace

std::uint64_t Ep::private_data_limit() const {
  return std::min<std::uint64_t>(ia_->capabilities().max_private_data, kMaxPrivateData);
}

std::uint64_t Ep::TransportTimeout(DAT_TIMEOUT timeout) {
  return timeout == DAT_TIMEOUT_INFINITE ? std::numeric_limits<std::uint64_t>::max() : timeout;
}

Status Ep::Connect(const sockaddr* remote, DAT_CONN_QUAL conn_qual, DAT_TIMEOUT timeout,
                   DAT_COUNT private_data_size, const void* private_data) {
  if (remote == nullptr) return Status(Code::kInvalidParameter, Detail::kParamRemoteAddress);
  if (remote->sa_family != AF_INET) {
    SOFTDAT_LOG(kWarn, "dat_ep_connect: address family %d is not supported, only AF_INET", remote->sa_family);
    return Status(Code::kInvalidAddress, Detail::kAddressUnsupported);
  }
  if (conn_qual == 0 || conn_qual > 0xFFFF) {
    SOFTDAT_LOG(kWarn, "dat_ep_connect: connection qualifier %llu is not a port (1..65535)",
                static_cast<unsigned long long>(conn_qual));
    return Status(Code::kInvalidParameter, Detail::kParamConnQual);
  }
  if (Status status = CheckPrivateData(private_data_size, private_data, private_data_limit()); !status.ok())
    return status;
  sockaddr_in address;
  std::memcpy(&address, remote, sizeof address);
  if (const std::string why = LoopbackCannotReach(ia_->address(), address); !why.empty())
    SOFTDAT_LOG(kWarn, "dat_ep_connect(%s): %s", ia_->name().c_str(), why.c_str());
  std::shared_lock resources(resources_mutex_);  // dat_ep_modify may not replace endpoint_ meanwhile
  // A UD EP resolves an address handle instead, as often as the consumer asks.
  if (datagram_)
    return ConnectDatagram(address, conn_qual, timeout,
                           {static_cast<const std::uint8_t*>(private_data), static_cast<std::size_t>(private_data_size)});
  counters_.AddShared(DCNT_EP_CONNECT);
  ia_->counters().AddShared(DCNT_IA_CM_REQ_TX);
  {
    std::lock_guard lock(mutex_);
    const DAT_EP_STATE current = state();
    if (current != DAT_EP_STATE_UNCONNECTED) return Status(Code::kInvalidState, StateDetail(current));
    if (connect_evd_ == nullptr) return Status(Code::kInvalidState, Detail::kEpNotReady);
    if (Status status = receive_->BeginConnection(); !status.ok()) return status;
    state_.store(DAT_EP_STATE_ACTIVE_CONNECTION_PENDING, std::memory_order_release);
    connection_live_ = true;
    local_disconnect_ = false;
    local_abrupt_ = false;
    broken_by_watermark_ = false;
    remote_address_ = address;
    remote_port_ = conn_qual;
    private_data_size_ = 0;
  }
  const Status status =
      endpoint_->Connect(address, static_cast<std::uint16_t>(conn_qual),
                         {static_cast<const std::uint8_t*>(private_data), static_cast<std::size_t>(private_data_size)},
                         TransportTimeout(timeout));
  if (!status.ok()) {
    std::lock_guard lock(mutex_);
    state_.store(DAT_EP_STATE_UNCONNECTED, std::memory_order_release);
    connection_live_ = false;
  }
  return status;
}

Status Ep::DupConnect(const Ep& dup, DAT_TIMEOUT timeout, DAT_COUNT private_data_size, const void* private_data) {
  sockaddr_in remote;
  DAT_CONN_QUAL port;
  {
    std::lock_guard lock(dup.mutex_);
    if (dup.state() != DAT_EP_STATE_CONNECTED) return Status(Code::kInvalidState, Detail::kEpUnconnected);
    remote = dup.remote_address_;
    port = dup.remote_port_;
  }
  return Connect(reinterpret_cast<const sockaddr*>(&remote), port, timeout, private_data_size, private_data);
}

Status Ep::Accept(transport::PendingConnection& pending, Rsp* rsp, DAT_COUNT private_data_size,
                  const void* private_data) {
  if (Status status = CheckPrivateData(private_data_size, private_data, private_data_limit()); !status.ok())
    return status;
  std::shared_lock resources(resources_mutex_);
  if (datagram_) {
    const Status status = AcceptDatagram(
        pending, {static_cast<const std::uint8_t*>(private_data), static_cast<std::size_t>(private_data_size)});
    resources.unlock();  // an EVD post runs with no lock held
    if (status.ok()) Deliver();
    return status;
  }
  if (pending.datagram()) {
    SOFTDAT_LOG(kWarn, "dat_cr_accept: the request is a UD endpoint's; EP %p is a connected (RC) one",
                static_cast<void*>(this));
    return Status(Code::kInvalidParameter, Detail::kParamEp);
  }
  DAT_EP_STATE before;
  {
    std::lock_guard lock(mutex_);
    before = state();
    const DAT_EP_STATE wanted =
        rsp != nullptr ? DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING : DAT_EP_STATE_UNCONNECTED;
    if (before != wanted || (rsp != nullptr && rsp_ != rsp)) return Status(Code::kInvalidState, StateDetail(before));
    if (connect_evd_ == nullptr) return Status(Code::kInvalidState, Detail::kEpNotReady);
    if (Status status = receive_->BeginConnection(); !status.ok()) return status;
    state_.store(DAT_EP_STATE_PASSIVE_CONNECTION_PENDING, std::memory_order_release);
    connection_live_ = true;
    local_disconnect_ = false;
    local_abrupt_ = false;
    broken_by_watermark_ = false;
    remote_address_ = pending.remote_address();
    remote_port_ = ntohs(remote_address_.sin_port);
    private_data_size_ = 0;
  }
  const Status status =
      pending.Accept(*endpoint_, {static_cast<const std::uint8_t*>(private_data),
                                  static_cast<std::size_t>(private_data_size)});
  if (!status.ok()) {
    std::lock_guard lock(mutex_);
    state_.store(before, std::memory_order_release);
    connection_live_ = false;
  }
  return status;
}

Status Ep::Reserve(Rsp* rsp) {
  std::lock_guard lock(mutex_);
  const DAT_EP_STATE current = state();
  if (current != DAT_EP_STATE_UNCONNECTED) return Status(Code::kInvalidState, StateDetail(current));
  rsp_ = rsp;
  state_.store(DAT_EP_STATE_RESERVED, std::memory_order_release);
  return Status::Ok();
}

void Ep::Unreserve(Rsp* rsp) {
  std::lock_guard lock(mutex_);
  if (rsp_ != rsp) return;
  rsp_ = nullptr;
  const DAT_EP_STATE current = state();
  if (current == DAT_EP_STATE_RESERVED || current == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING)
    state_.store(DAT_EP_STATE_UNCONNECTED, std::memory_order_release);
}

void Ep::ReservedRequestArrived(Rsp* rsp) {
  std::lock_guard lock(mutex_);
  if (rsp_ == rsp && state() == DAT_EP_STATE_RESERVED)
    state_.store(DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING, std::memory_order_release);
}

void Ep::ReservedRequestRejected(Rsp* rsp) {
  std::lock_guard lock(mutex_);
  if (rsp_ != rsp) return;
  rsp_ = nullptr;
  if (state() == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING)
    state_.store(DAT_EP_STATE_UNCONNECTED, std::memory_order_release);
}

Status Ep::Disconnect(DAT_CLOSE_FLAGS flags) {
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return Status(Code::kInvalidParameter, Detail::kParamFlags);
  bool graceful = flags == DAT_CLOSE_GRACEFUL_FLAG;
  counters_.AddShared(DCNT_EP_DISCONNECT);
  std::shared_lock resources(resources_mutex_);
  {
    std::lock_guard lock(mutex_);
    const DAT_EP_STATE current = state();
    switch (current) {
      case DAT_EP_STATE_DISCONNECTED:
        return Status::Ok();  // "Disconnecting a Disconnected Endpoint is no-op."
      case DAT_EP_STATE_UNCONNECTED:
        // A UD EP has no connection: disconnecting it stops its datagrams (and flushes).
        if (!datagram_) return Status(Code::kInvalidState, StateDetail(current));
        graceful = false;
        break;
      case DAT_EP_STATE_CONNECTED:
        if (graceful) state_.store(DAT_EP_STATE_DISCONNECT_PENDING, std::memory_order_release);
        break;
      case DAT_EP_STATE_DISCONNECT_PENDING:
        if (graceful) return Status::Ok();  // no effect
        break;
      case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
      case DAT_EP_STATE_COMPLETION_PENDING:
        graceful = false;  // aborts the establishment either way
        break;
      default:
        return Status(Code::kInvalidState, StateDetail(current));
    }
    if (!connection_live_) return Status::Ok();
    local_disconnect_ = true;
    local_abrupt_ = local_abrupt_ || !graceful;
  }
  endpoint_->Disconnect(graceful);
  return Status::Ok();
}

Status Ep::Reset() {
  std::unique_lock resources(resources_mutex_);  // the one owner of the swap (see Modify)
  {
    std::lock_guard lock(mutex_);
    const DAT_EP_STATE current = state();
    if (current != DAT_EP_STATE_DISCONNECTED || connection_live_)
      return Status(Code::kInvalidState, StateDetail(current));
  }
  // The old transport endpoint has ended; a new connection needs a new one, made first so that a
  // refusal leaves the EP as it was.
  std::lock_guard post(post_mutex_);
  std::unique_ptr<transport::Endpoint> endpoint;
  if (Status status = NewTransportEndpoint(attr_, *requests_, endpoint); !status.ok()) return status;
  endpoint_ = std::move(endpoint);
  std::lock_guard lock(mutex_);
  local_address_ = sockaddr_in{};
  remote_address_ = sockaddr_in{};
  remote_port_ = 0;
  state_.store(DAT_EP_STATE_UNCONNECTED, std::memory_order_release);
  return Status::Ok();
}

void Ep::OnEstablished(std::span<const std::uint8_t> private_data) {
  {
    std::lock_guard lock(mutex_);
    const DAT_EP_STATE current = state();
    if (current != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING && current != DAT_EP_STATE_PASSIVE_CONNECTION_PENDING)
      return;
    ia_->counters().AddShared(current == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING ? DCNT_IA_CM_ACTIVE_EST
                                                                                : DCNT_IA_CM_PASSIVE_EST);
    // Before the state: a delivery pass that reads CONNECTED holds receives back until this
    // ESTABLISHED is posted (ReceivesWait), even before it is marked below.
    established_pending_.store(true, std::memory_order_release);
    state_.store(DAT_EP_STATE_CONNECTED, std::memory_order_release);
    private_data_size_ = std::min(private_data.size(), private_data_.size());
    // copy_n, not memcpy: an empty span's data() may be null, which memcpy may not be given.
    std::copy_n(private_data.data(), private_data_size_, private_data_.data());
    local_address_ = endpoint_->local_address();
    remote_address_ = endpoint_->remote_address();
  }
  // A hard high watermark already below what the EP holds breaks the new connection at once.
  ActOnWatermarks(receive_->CheckHighWatermarks(true));
  MarkReady(kDeliverAll);
}

void Ep::OnEnded(transport::ConnectionEnd why, std::span<const std::uint8_t> private_data) {
  DAT_EVENT_NUMBER event;
  {
    std::lock_guard lock(mutex_);
    if (!connection_live_) return;
    connection_live_ = false;
    event = EndEvent(state(), why, local_disconnect_, local_abrupt_, broken_by_watermark_);
    CountEnd(ia_->counters(), event);
    if (event == DAT_CONNECTION_EVENT_PEER_REJECTED) {
      private_data_size_ = std::min(private_data.size(), private_data_.size());
      std::copy_n(private_data.data(), private_data_size_, private_data_.data());
    } else {
      private_data_size_ = 0;
    }
    state_.store(DAT_EP_STATE_DISCONNECTED, std::memory_order_release);
  }
  SOFTDAT_LOG(kDebug, "EP %p: connection ended: %s (%s)", static_cast<void*>(this),
              DatEventText(static_cast<std::uint32_t>(event)).text, transport::ConnectionEndName(why));
  // Flush first, then report: the end event follows every completion it caused.
  receive_->Close();
  requests_->FlushAll();
  {
    std::lock_guard lock(mutex_);
    end_event_.number = event;
    end_event_.pending = true;
    broken_async_pending_ = receive_->announces_flush();
  }
  MarkReady(kDeliverAll);
}

}  // namespace softdat::core
