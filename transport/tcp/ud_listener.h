// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The passive side of softdat-tcp's UD address resolution (Transport::ListenDatagram): a UDP
// socket on a PSP's port of the IA address that takes Resolve Requests (ud_wire.h) and reports
// each new one to core as a datagram PendingConnection. The consumer's answer goes back to the
// requester: AcceptDatagram sends a Resolve Reply from the accepting endpoint's own port (so the
// requester learns that endpoint's address from it), Reject a Resolve Reject from the listener's
// port with the consumer's private data, and a request dropped unanswered a Resolve Refused.
// The requester repeats its request until answered: a repeat of one still pending is ignored, and
// a repeat of one answered gets the same answer again (the answer was lost). The listener keeps
// the last kRemembered requests for that.
//
// Threads: requests are read by an Asio handler on the transport's io_context and reported with no
// lock held; Stop (the Listener's destructor, a consumer thread) waits for a report under way.
// Lock order: the listener's mutex, then an endpoint's (UdCore).
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/listener.h"
#include "transport/tcp/ud_endpoint.h"

namespace softdat::transport::tcp {

class UdListenerCore : public std::enable_shared_from_this<UdListenerCore> {
 public:
  static constexpr std::size_t kRemembered = 1024;

  UdListenerCore(asio::io_context& io, ListenEvents* events) : socket_(io), events_(events) {}
  // Binds `port` of `ia` (0: one the kernel picks) and starts reading.
  Status Open(const sockaddr_in& ia, std::uint16_t port);
  void Stop();  // no ListenEvents call runs after this returns
  std::uint16_t port() const { return ntohs(local_.sin_port); }
  sockaddr_in local() const { return local_; }

  // A requester: who sent the request, with which key and number.
  struct Requester {
    sockaddr_in address{};
    std::uint32_t key = 0;
    std::uint64_t request = 0;
    bool operator==(const Requester& other) const {
      return address.sin_addr.s_addr == other.address.sin_addr.s_addr &&
             address.sin_port == other.address.sin_port && key == other.key && request == other.request;
    }
  };
  // The consumer's answer (UdPendingConnection): sent now, and remembered for repeats.
  void Accepted(const Requester& requester, const std::shared_ptr<UdCore>& endpoint,
                std::span<const std::uint8_t> private_data);
  void Rejected(const Requester& requester, ud::Type type, std::span<const std::uint8_t> private_data);

 private:
  struct Remembered {
    Requester requester;
    enum class State : std::uint8_t { kPending, kAccepted, kRejected } state = State::kPending;
    ud::Type reject_type = ud::Type::kResolveRefused;
    std::weak_ptr<UdCore> endpoint;
    std::vector<std::uint8_t> answer;  // the private data answered
  };

  void ArmRead();
  void ReadAvailable();  // mutex_ held; fills `arrived` with the new requests to report
  void OnRequest(const ud::Header& header, std::span<const std::uint8_t> payload, const sockaddr_in& from);
  void Repeat(const Remembered& remembered);  // mutex_ held
  void SendReject(const Requester& requester, ud::Type type, std::span<const std::uint8_t> private_data);
  Remembered* Find(const Requester& requester);

  softdat::Mutex mutex_;
  asio::ip::udp::socket socket_;
  sockaddr_in local_{};
  std::atomic<ListenEvents*> events_;  // null once stopped
  std::atomic<int> calling_{0};
  std::deque<Remembered> remembered_;
  std::vector<std::unique_ptr<PendingConnection>> arrived_;  // reported once mutex_ is released
  std::vector<std::uint8_t> rx_;
};

class UdListener final : public Listener {
 public:
  explicit UdListener(std::shared_ptr<UdListenerCore> core) : core_(std::move(core)) {}
  ~UdListener() override { core_->Stop(); }
  std::uint16_t port() const override { return core_->port(); }

 private:
  std::shared_ptr<UdListenerCore> core_;
};

class UdPendingConnection final : public PendingConnection {
 public:
  UdPendingConnection(std::shared_ptr<UdListenerCore> listener, const UdListenerCore::Requester& requester,
                      std::span<const std::uint8_t> private_data)
      : listener_(std::move(listener)), requester_(requester), private_data_(private_data.begin(), private_data.end()) {}
  ~UdPendingConnection() override;
  std::span<const std::uint8_t> private_data() const override { return private_data_; }
  sockaddr_in remote_address() const override { return requester_.address; }
  sockaddr_in local_address() const override { return listener_->local(); }
  Status Accept(Endpoint&, std::span<const std::uint8_t>) override { return Status(Code::kModelNotSupported); }
  void Reject(std::span<const std::uint8_t> private_data) override;
  bool datagram() const override { return true; }
  Status AcceptDatagram(Endpoint& endpoint, std::span<const std::uint8_t> private_data,
                        std::unique_ptr<AddressHandle>& requester) override;

 private:
  std::shared_ptr<UdListenerCore> listener_;
  UdListenerCore::Requester requester_;
  std::vector<std::uint8_t> private_data_;
  bool answered_ = false;
};

// Transport::ListenDatagram on `port` of `ia`.
Status CreateDatagramListener(asio::io_context& io, const sockaddr_in& ia, std::uint16_t port, ListenEvents* events,
                              std::unique_ptr<Listener>& out);

}  // namespace softdat::transport::tcp
