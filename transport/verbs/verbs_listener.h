// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The passive side over rdma_cm: a listening cm_id on the IA address and port, and each
// CONNECT_REQUEST as a PendingConnection holding the request's cm_id until Accept hands it to an
// endpoint, Reject answers it, or destruction refuses it.
#pragma once

#include <rdma/rdma_cma.h>

#include <atomic>
#include <memory>

#include "transport/listener.h"
#include "transport/verbs/verbs_transport.h"

namespace softdat::transport::verbs {

class VerbsListener final : public Listener, public CmOwner {
 public:
  static Status Create(VerbsTransport& transport, std::uint16_t port, ListenEvents* events,
                       std::unique_ptr<Listener>& out);
  ~VerbsListener() override;
  std::uint16_t port() const override { return port_; }
  void OnCmEvent(const CmEvent& event) override;

 private:
  VerbsListener(VerbsTransport& transport, ListenEvents* events) : transport_(transport), events_(events) {}

  VerbsTransport& transport_;
  ListenEvents* const events_;
  rdma_cm_id* id_ = nullptr;
  std::uint16_t port_ = 0;
};

class VerbsPendingConnection final : public PendingConnection {
 public:
  VerbsPendingConnection(VerbsTransport& transport, const CmEvent& request);
  ~VerbsPendingConnection() override;
  std::span<const std::uint8_t> private_data() const override { return {data_, data_length_}; }
  sockaddr_in remote_address() const override { return remote_; }
  sockaddr_in local_address() const override { return local_; }
  Status Accept(Endpoint& endpoint, std::span<const std::uint8_t> private_data) override;
  void Reject(std::span<const std::uint8_t> private_data) override;

 private:
  VerbsTransport& transport_;
  rdma_cm_id* id_;  // null once an endpoint owns it
  std::atomic<bool> answered_{false};
  std::uint8_t data_[256] = {};
  std::uint8_t data_length_ = 0;
  std::uint8_t peer_ird_;
  std::uint8_t peer_ord_;
  sockaddr_in remote_{};
  sockaddr_in local_{};
};

}  // namespace softdat::transport::verbs
