// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT IB extensions on an EP (dat_ib_extensions.h): RDMA Write with immediate data, the
// 64-bit atomics, UD endpoints (their sends, their connection events, the address handles and
// connection records those hand out) and the EP's counters.
#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "core/address_handle.h"
#include "core/dto_event.h"
#include "core/ep.h"
#include "core/ep_counting.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/ib_event.h"
#include "transport/names.h"

namespace softdat::core {
Status Ep::Unsupported(const char* call, const char* what) const {
  SOFTDAT_LOG(kWarn, "%s: the %s IA (%s transport) does not support %s (its provider attributes say so)", call,
              ia_->name().c_str(), ia_->params().kind == TransportKind::kTcp ? "tcp" : "verbs", what);
  return Status(Code::kModelNotSupported);
}

void Ep::StartDatagrams() {
  std::lock_guard lock(mutex_);
  (void)receive_->BeginConnection();  // a new EP's queue holds nothing yet
  connection_live_ = true;            // until dat_ep_disconnect or free
}

Status Ep::PostWriteImmediate(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie,
                              const DAT_RMR_TRIPLET* remote_iov, DAT_UINT32 immediate, DAT_COMPLETION_FLAGS flags) {
  if (!ia_->capabilities().immediate_data)
    return Unsupported("dat_ib_post_rdma_write_immed", "RDMA Write with immediate data");
  if (datagram_) return Unsupported("dat_ib_post_rdma_write_immed", "RDMA on a UD endpoint");
  RequestSpec spec = RequestSpec::Of(static_cast<DAT_DTOS>(DAT_IB_DTO_RDMA_WRITE_IMMED),
                                     transport::WorkKind::kRdmaWriteImmediate, local_iov, num_segments, cookie,
                                     remote_iov, flags);
  spec.immediate = immediate;
  return PostRequest(spec);
}

Status Ep::PostAtomic(transport::WorkKind kind, DAT_UINT64 compare_add, DAT_UINT64 swap,
                      const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote_iov,
                      DAT_COMPLETION_FLAGS flags) {
  const bool fetch_add = kind == transport::WorkKind::kFetchAdd;
  const char* call = fetch_add ? "dat_ib_post_fetch_and_add" : "dat_ib_post_cmp_and_swap";
  if (!ia_->capabilities().atomics) return Unsupported(call, "remote atomic operations");
  if (datagram_) return Unsupported(call, "atomics on a UD endpoint");
  // The target must be naturally aligned: said at the post, on every transport, as a device
  // says it (rxe refuses the work request); the responder checks it again (a hostile peer).
  if (remote_iov != nullptr && (remote_iov->virtual_address & 7) != 0) {
    SOFTDAT_LOG(kWarn, "%s: the remote address 0x%llx is not 8-byte aligned", call,
                static_cast<unsigned long long>(remote_iov->virtual_address));
    return Status(Code::kInvalidParameter, Detail::kParamRemoteBuffer);
  }
  RequestSpec spec = RequestSpec::Of(static_cast<DAT_DTOS>(fetch_add ? DAT_IB_DTO_FETCH_ADD : DAT_IB_DTO_CMP_SWAP),
                                     kind, local_iov, 1, cookie, remote_iov, flags);
  spec.compare_add = compare_add;
  spec.swap = swap;
  return PostRequest(spec);
}

Status Ep::PostSendDatagram(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, const DAT_IB_ADDR_HANDLE* ah,
                            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags) {
  if (!datagram_) {
    SOFTDAT_LOG(kWarn, "dat_ib_post_send_ud: EP %p is not a UD endpoint (DAT_IB_SERVICE_TYPE_UD)",
                static_cast<void*>(this));
    return Status(Code::kInvalidHandle, Detail::kEp);
  }
  AddressHandle* destination = ah != nullptr ? HandleAs<AddressHandle>(ah->ah) : nullptr;
  if (destination == nullptr || destination->ep()->ia() != ia_) {
    SOFTDAT_LOG(kWarn, "dat_ib_post_send_ud: the address handle is not one of this IA's (freed, or never given)");
    return Status(Code::kInvalidParameter, Detail::kParamAddressHandle);
  }
  RequestSpec spec = RequestSpec::Of(static_cast<DAT_DTOS>(DAT_IB_DTO_SEND_UD), transport::WorkKind::kSendDatagram,
                                     local_iov, num_segments, cookie, nullptr, flags);
  spec.destination = &destination->peer();
  return PostRequest(spec);
}

Status Ep::ConnectDatagram(const sockaddr_in& remote, DAT_CONN_QUAL conn_qual, DAT_TIMEOUT timeout,
                           std::span<const std::uint8_t> private_data) {
  std::uint64_t request;
  {
    std::lock_guard lock(mutex_);
    const DAT_EP_STATE current = state();
    if (current != DAT_EP_STATE_UNCONNECTED && current != DAT_EP_STATE_CONNECTED)
      return Status(Code::kInvalidState, Detail::kEpDisconnected);
    if (connect_evd_ == nullptr) return Status(Code::kInvalidState, Detail::kEpNotReady);
    request = next_resolve_++;
  }
  counters_.AddShared(DCNT_EP_CONNECT);
  ia_->counters().AddShared(DCNT_IA_CM_AH_REQ_TX);
  return endpoint_->Resolve(remote, static_cast<std::uint16_t>(conn_qual), private_data, TransportTimeout(timeout),
                            request);
}

Status Ep::AcceptDatagram(transport::PendingConnection& pending, std::span<const std::uint8_t> private_data) {
  if (!pending.datagram()) {
    SOFTDAT_LOG(kWarn, "dat_cr_accept: EP %p is a UD endpoint; the request is for a connected (RC) one",
                static_cast<void*>(this));
    return Status(Code::kInvalidParameter, Detail::kParamEp);
  }
  {
    std::lock_guard lock(mutex_);
    const DAT_EP_STATE current = state();
    if (current != DAT_EP_STATE_UNCONNECTED && current != DAT_EP_STATE_CONNECTED)
      return Status(Code::kInvalidState, Detail::kEpDisconnected);
    if (connect_evd_ == nullptr) return Status(Code::kInvalidState, Detail::kEpNotReady);
  }
  std::unique_ptr<transport::AddressHandle> requester;
  if (Status status = pending.AcceptDatagram(*endpoint_, private_data, requester); !status.ok()) return status;
  // The passive side's event carries the requester's address handle and its private data.
  QueueDatagramEvent(static_cast<DAT_EVENT_NUMBER>(DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED),
                     DAT_IB_UD_PASSIVE_REMOTE_AH, std::move(requester), pending.private_data());
  ia_->counters().AddShared(DCNT_IA_CM_PASSIVE_EST);
  return Status::Ok();  // the caller delivers the event once it holds no lock
}

void Ep::OnResolved(std::uint64_t, std::unique_ptr<transport::AddressHandle> peer,
                    std::span<const std::uint8_t> private_data) {
  ia_->counters().AddShared(DCNT_IA_CM_AH_RESOLVED);
  QueueDatagramEvent(static_cast<DAT_EVENT_NUMBER>(DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED), DAT_IB_UD_REMOTE_AH,
                     std::move(peer), private_data);
}

void Ep::OnResolveFailed(std::uint64_t, transport::ConnectionEnd why, std::span<const std::uint8_t> private_data) {
  const bool rejected = why == transport::ConnectionEnd::kPeerRejected;
  SOFTDAT_LOG(kInfo, "EP %p: UD address resolution failed: %s", static_cast<void*>(this),
              transport::ConnectionEndName(why));
  ia_->counters().AddShared(rejected                                       ? DCNT_IA_CM_USER_REJ_RX
                            : why == transport::ConnectionEnd::kTimedOut ? DCNT_IA_CM_ERR_TIMEOUT
                                                                         : DCNT_IA_CM_ERR_REFUSED);
  QueueDatagramEvent(static_cast<DAT_EVENT_NUMBER>(rejected ? DAT_IB_UD_CONNECTION_REJECT_EVENT
                                                            : DAT_IB_UD_CONNECTION_ERROR_EVENT),
                     rejected ? DAT_IB_UD_CONNECT_REJECT : DAT_IB_UD_CONNECT_ERROR, nullptr,
                     rejected ? private_data : std::span<const std::uint8_t>{});
}

void Ep::QueueDatagramEvent(DAT_EVENT_NUMBER number, DAT_IB_EXT_TYPE type,
                            std::unique_ptr<transport::AddressHandle> peer,
                            std::span<const std::uint8_t> private_data) {
  // Control path: these objects are made per resolution, never per datagram.
  AddressHandle* ah = peer != nullptr ? NewHandle<AddressHandle>(ia_->provider, this, std::move(peer)) : nullptr;
  DatagramCm* cm = NewHandle<DatagramCm>(ia_->provider, this, private_data);
  {
    std::lock_guard lock(mutex_);
    if (ah != nullptr) address_handles_.push_back(ah);
    datagram_cms_.push_back(cm);
    datagram_events_.push_back(DatagramEvent{number, type, ah, cm});
    // A UD EP that found a peer reads CONNECTED (as OFED DAPL's does); it resolves more at will.
    if (ah != nullptr && state() == DAT_EP_STATE_UNCONNECTED)
      state_.store(DAT_EP_STATE_CONNECTED, std::memory_order_release);
  }
  MarkReady(kDeliverControl);
}

void Ep::DeliverDatagramEvents() {
  for (;;) {
    DatagramEvent pending;
    {
      std::lock_guard lock(mutex_);
      if (datagram_events_.empty()) return;
      pending = datagram_events_.front();
      datagram_events_.erase(datagram_events_.begin());  // a handful at most, on a UD EP only
    }
    if (connect_evd_ == nullptr) continue;
    DAT_EVENT event = ConnectionEvent(pending.number, connect_evd_, this, pending.cm->private_data(),
                                      pending.cm->private_data_size());
    DAT_IB_EXTENSION_EVENT_DATA data{};
    data.type = pending.type;
    data.status = pending.ah != nullptr ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
    if (pending.ah != nullptr) data.remote_ah = pending.ah->Describe();
    data.context.as_ptr = pending.cm;
    SetExtensionData(event, data);
    connect_evd_->Post(event);
  }
}

// Takes `object` (a live T, one of `owned`) out of `owned` and frees it; false when it is neither.
template <class T>
bool Ep::FreeOwned(std::vector<T*>& owned, const void* object) {
  T* live = HandleAs<T>(object);
  {
    std::lock_guard lock(mutex_);
    const auto found = std::find(owned.begin(), owned.end(), live);
    if (live == nullptr || found == owned.end()) return false;
    owned.erase(found);
  }
  DeleteHandle(live);
  return true;
}

Status Ep::FreeAddressHandle(const DAT_IB_ADDR_HANDLE* ah) {
  if (ah != nullptr && FreeOwned(address_handles_, ah->ah)) return Status::Ok();
  SOFTDAT_LOG(kWarn, "dat_ib_ud_ah_free: the address handle is not one of EP %p's (freed already?)",
              static_cast<void*>(this));
  return Status(Code::kInvalidParameter, Detail::kParamAddressHandle);
}

Status Ep::FreeDatagramCm(const void* cm) {
  // A record reaches the consumer only in a delivered event: none still queued names it.
  if (FreeOwned(datagram_cms_, cm)) return Status::Ok();
  SOFTDAT_LOG(kWarn, "dat_ib_ud_cm_free: not a connection record of EP %p (freed already?)", static_cast<void*>(this));
  return Status(Code::kInvalidParameter, Detail::kParamCm);
}

void Ep::FreeDatagramObjects() {
  std::vector<AddressHandle*> handles;
  std::vector<DatagramCm*> records;
  {
    std::lock_guard lock(mutex_);
    handles.swap(address_handles_);
    records.swap(datagram_cms_);
    datagram_events_.clear();
  }
  for (AddressHandle* handle : handles) DeleteHandle(handle);
  for (DatagramCm* record : records) DeleteHandle(record);
}

void Ep::MakeExtensionReceive(DAT_EVENT& event, const srq::RecvCompletion& received) const {
  DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
  if (datagram_) {
    dto.operation = static_cast<DAT_DTOS>(DAT_IB_DTO_RECV_UD);
    MakeExtensionDto(event);
    DAT_IB_EXTENSION_EVENT_DATA data = ExtensionData(event);
    const ReceiveExtension& source = received.notes.extension;
    data.remote_ah = MakeAddressHandle(nullptr, source.source_qpn, source.source_address, source.source_port);
    SetExtensionData(event, data);
    return;
  }
  // RDMA Write with immediate data: the Write's length and the immediate.
  dto.operation = static_cast<DAT_DTOS>(DAT_IB_DTO_RECV_IMMED);
  if (received.status == DAT_DTO_SUCCESS) dto.transfered_length = received.notes.extension.written;
  MakeExtensionDto(event);
  DAT_IB_EXTENSION_EVENT_DATA data = ExtensionData(event);
  data.val.immed.data = received.notes.extension.immediate_data;
  SetExtensionData(event, data);
}

Status Ep::QueryCounters(int which, DAT_UINT64* out, bool reset) {
  return ReadCounters(counters_, kEpCounterNames, "EP", this, which, out, reset);
}

Status Ep::PrintCounters(int which, bool reset) {
  return ReadCounters(counters_, kEpCounterNames, "EP", this, which, nullptr, reset);
}

}  // namespace softdat::core
