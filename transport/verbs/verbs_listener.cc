// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// rdma_listen, connection requests, rdma_accept's hand-over and rdma_reject.
#include "transport/verbs/verbs_listener.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/verbs/verbs_endpoint.h"

namespace softdat::transport::verbs {

Status VerbsListener::Create(VerbsTransport& transport, std::uint16_t port, ListenEvents* events,
                             std::unique_ptr<Listener>& out) {
  std::unique_ptr<VerbsListener> listener(new VerbsListener(transport, events));
  if (rdma_create_id(transport.cm_channel(), &listener->id_, static_cast<CmOwner*>(listener.get()), RDMA_PS_TCP) != 0) {
    listener->id_ = nullptr;
    return Status(Code::kInsufficientResources);
  }
  sockaddr_in address = transport.address();
  address.sin_port = htons(port);
  if (rdma_bind_addr(listener->id_, reinterpret_cast<sockaddr*>(&address)) != 0) {
    const int error = errno;
    return error == EADDRINUSE ? Status(Code::kConnQualInUse) : Status(Code::kConnQualUnavailable);
  }
  if (rdma_listen(listener->id_, 64) != 0) {
    const int error = errno;
    return error == EADDRINUSE ? Status(Code::kConnQualInUse) : Status(Code::kConnQualUnavailable);
  }
  listener->port_ = ntohs(rdma_get_src_port(listener->id_));
  out = std::move(listener);
  return Status::Ok();
}

VerbsListener::~VerbsListener() {
  if (id_ == nullptr) return;
  // Unfindable, then no event of it runs once the progress's turn is free (or ours).
  std::atomic_ref<void*>(id_->context).store(nullptr);
  transport_.turn().WaitUnlessMine();
  rdma_destroy_id(id_);  // requests not yet reported are refused by the kernel
}

void VerbsListener::OnCmEvent(const CmEvent& event) {
  if (event.type != RDMA_CM_EVENT_CONNECT_REQUEST) return;
  events_->OnConnectRequest(std::make_unique<VerbsPendingConnection>(transport_, event));
}

VerbsPendingConnection::VerbsPendingConnection(VerbsTransport& transport, const CmEvent& request)
    : transport_(transport),
      id_(request.id),
      peer_ird_(request.responder_resources),
      peer_ord_(request.initiator_depth) {
  data_length_ = request.private_data_length;
  if (data_length_ > 0) std::memcpy(data_, request.private_data, data_length_);
  std::memcpy(&remote_, rdma_get_peer_addr(id_), sizeof remote_);
  std::memcpy(&local_, rdma_get_local_addr(id_), sizeof local_);
}

VerbsPendingConnection::~VerbsPendingConnection() {
  if (id_ == nullptr) return;
  // Nobody answered: IB says so with its own reject reason; on iWARP the MPA reject carries no
  // private data (what the active side reads as non-peer, see private_data.h).
  if (!answered_.exchange(true) && rdma_reject_ece(id_, nullptr, 0) != 0)
    SOFTDAT_LOG(kInfo, "verbs: refusing an unanswered request failed: %s", std::strerror(errno));
  // The id's context is null: the progress only acks its events, and rdma_destroy_id waits for that.
  rdma_destroy_id(id_);
}

Status VerbsPendingConnection::Accept(Endpoint& endpoint, std::span<const std::uint8_t> private_data) {
  auto* verbs = dynamic_cast<VerbsEndpoint*>(&endpoint);
  if (verbs == nullptr || &verbs->transport() != &transport_) return Status(Code::kInvalidParameter, Detail::kNone);
  if (answered_.exchange(true)) return Status(Code::kInvalidState);
  if (Status s = verbs->TakeAccept(id_, private_data, peer_ird_, peer_ord_); !s.ok()) {
    answered_ = false;
    return s;
  }
  id_ = nullptr;
  return Status::Ok();
}

void VerbsPendingConnection::Reject(std::span<const std::uint8_t> private_data) {
  if (id_ == nullptr || answered_.exchange(true)) return;
  if (private_data.size() > transport_.capabilities().max_private_data)
    private_data = private_data.first(transport_.capabilities().max_private_data);  // core checked already
  if (rdma_reject(id_, private_data.data(), static_cast<std::uint8_t>(private_data.size())) != 0)
    SOFTDAT_LOG(kInfo, "verbs: rdma_reject failed: %s", std::strerror(errno));
}

}  // namespace softdat::transport::verbs
