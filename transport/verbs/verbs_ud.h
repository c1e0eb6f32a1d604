// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Unreliable datagrams on softdat-verbs (DAT_IB_SERVICE_TYPE_UD), where the device has them
// (InfiniBand and RoCE: rxe; not iWARP): a UD endpoint is a VerbsEndpoint whose QP is a UD QP on
// an RDMA_PS_UDP cm_id bound to the IA address, ready at once. Address resolution is rdma_cm's
// SIDR exchange: the requester (Resolve) resolves the listener's address and route on an id of
// its own and connects with softdat's header ahead of the consumer's private data; the listener
// (ListenDatagram) reports the request, and AcceptDatagram answers with the accepting endpoint's
// QP number (rdma_accept). SIDR tells the requester how to reach the accepting QP (its address
// handle attributes and QP number), but tells the listener nothing of the requester: the header
// carries the requester's QP number, LID and GID, from which the passive side makes its handle.
//
// The header (kHeaderSize bytes, ahead of the consumer's private data): "SD", version 1, 0, the
// requester's QP number (big-endian), its LID (big-endian), 2 zero bytes, its GID (16 bytes).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "transport/datagram.h"
#include "transport/listener.h"
#include "transport/verbs/verbs_transport.h"

namespace softdat::transport::verbs {

class VerbsEndpoint;

namespace ud {

inline constexpr std::size_t kHeaderSize = 28;
// What a SIDR request leaves the consumer: its 216 bytes of private data, less rdma_cm's header
// for IPv4 (36) and softdat's.
inline constexpr std::size_t kMaxPrivateData = 216 - 36 - kHeaderSize;
// The Q_Key of every softdat-verbs UD QP (what librdmacm gives an RDMA_PS_UDP id: RDMA_UDP_QKEY).
inline constexpr std::uint32_t kQkey = 0x01234567;

struct Requester {
  std::uint32_t qp_num = 0;
  std::uint16_t lid = 0;
  ibv_gid gid{};
};
void EncodeHeader(const Requester& requester, std::uint8_t* out);
// False when the private data does not start with softdat's header (another provider's request).
bool DecodeHeader(std::span<const std::uint8_t> private_data, Requester& out);

// The GRH area of a UD receive: the sender's IPv4 address (network order), 0 if none is found
// (RoCE v2 over IPv4 puts the IPv4 header in its last 20 bytes; otherwise an IPv4-mapped GID).
std::uint32_t SourceAddress(const std::uint8_t* grh);

}  // namespace ud

// A peer UD QP: the device's address handle to it, its QP number and Q_Key, and its IPv4 address
// (what DAT reports as the handle's ia_addr).
class VerbsAddressHandle final : public AddressHandle {
 public:
  VerbsAddressHandle(ibv_ah* ah, std::uint32_t qp_num, std::uint32_t qkey, std::uint32_t address)
      : ah_(ah), qp_num_(qp_num), qkey_(qkey), address_(address) {}
  ~VerbsAddressHandle() override { ibv_destroy_ah(ah_); }
  VerbsAddressHandle(const VerbsAddressHandle&) = delete;
  VerbsAddressHandle& operator=(const VerbsAddressHandle&) = delete;
  std::uint32_t address() const override { return address_; }
  std::uint16_t port() const override { return 0; }
  std::uint32_t qpn() const override { return qp_num_; }
  ibv_ah* ah() const { return ah_; }
  std::uint32_t qkey() const { return qkey_; }

 private:
  ibv_ah* ah_;
  std::uint32_t qp_num_;
  std::uint32_t qkey_;
  std::uint32_t address_;
};

// One Resolve of a UD endpoint: its own RDMA_PS_UDP cm_id, from address resolution to the SIDR
// answer. Owned by the endpoint; its events come in the progress context.
class UdResolution final : public CmOwner {
 public:
  UdResolution(VerbsEndpoint& endpoint, std::uint64_t request, const sockaddr_in& remote,
               std::span<const std::uint8_t> private_data, std::chrono::steady_clock::time_point deadline)
      : endpoint_(endpoint), request_(request), remote_(remote), private_data_(private_data.begin(), private_data.end()),
        deadline_(deadline) {}
  void OnCmEvent(const CmEvent& event) override;

  VerbsEndpoint& endpoint_;
  const std::uint64_t request_;
  const sockaddr_in remote_;
  const std::vector<std::uint8_t> private_data_;
  const std::chrono::steady_clock::time_point deadline_;
  rdma_cm_id* id_ = nullptr;  // progress context
  bool started_ = false;
  bool done_ = false;         // answered, failed or timed out: the endpoint destroys it
};

class VerbsUdListener final : public Listener, public CmOwner {
 public:
  static Status Create(VerbsTransport& transport, std::uint16_t port, ListenEvents* events,
                       std::unique_ptr<Listener>& out);
  ~VerbsUdListener() override;
  std::uint16_t port() const override { return port_; }
  void OnCmEvent(const CmEvent& event) override;

 private:
  VerbsUdListener(VerbsTransport& transport, ListenEvents* events) : transport_(transport), events_(events) {}
  VerbsTransport& transport_;
  ListenEvents* events_;
  rdma_cm_id* id_ = nullptr;
  std::uint16_t port_ = 0;
};

class VerbsUdPending final : public PendingConnection {
 public:
  VerbsUdPending(VerbsTransport& transport, const CmEvent& request, const ud::Requester& requester);
  ~VerbsUdPending() override;
  std::span<const std::uint8_t> private_data() const override { return {data_, data_length_}; }
  sockaddr_in remote_address() const override { return remote_; }
  sockaddr_in local_address() const override { return local_; }
  Status Accept(Endpoint&, std::span<const std::uint8_t>) override { return Status(Code::kModelNotSupported); }
  void Reject(std::span<const std::uint8_t> private_data) override;
  bool datagram() const override { return true; }
  Status AcceptDatagram(Endpoint& endpoint, std::span<const std::uint8_t> private_data,
                        std::unique_ptr<AddressHandle>& requester) override;

 private:
  VerbsTransport& transport_;
  rdma_cm_id* id_;
  ud::Requester requester_;
  std::uint8_t data_[256] = {};
  std::size_t data_length_ = 0;
  sockaddr_in remote_{};
  sockaddr_in local_{};
  std::atomic<bool> answered_{false};
};

}  // namespace softdat::transport::verbs
