// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// softdat-tcp's unreliable datagram endpoints (DAT_IB_SERVICE_TYPE_UD) over UDP, in the format of
// ud_wire.h: one UDP socket per endpoint, bound to the IA address on a port the kernel picks (the
// endpoint's number, reported as its QPN). A datagram Post is one sendto from the consumer's
// thread, built on its stack (no allocation, no lock), and done once it left (core completes it:
// Capabilities::datagram_done_at_post); the service allows loss, so a full socket drops it. An
// arriving datagram takes the endpoint's next receive buffer (core's AcquireRecv, the EP's own
// queue) with a 40-byte GRH ahead of its bytes, or is dropped when there is none, it is not for
// this endpoint (its key) or it fails any check. Resolve sends a Resolve Request to a listener
// (ud_listener.h) and repeats it, backing off, until an answer or the timeout.
//
// Threads: the socket is read, and resolutions repeated, by Asio handlers on the transport's
// io_context (the progress context); reports to core are made under the core's mutex and
// delivered after it is released (EndpointEvents::Deliver), as a Connection's are. Post,
// Resolve, Disconnect and the destructor come from consumer threads; the destructor waits for a
// delivery under way, and nothing reports after it returns.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/datagram.h"
#include "transport/endpoint.h"
#include "transport/tcp/ud_wire.h"

namespace softdat::transport::tcp {

namespace asio = boost::asio;

// A peer datagram endpoint: its IA address (network order), UDP port and key.
class UdAddressHandle final : public AddressHandle {
 public:
  UdAddressHandle(std::uint32_t address, std::uint16_t port, std::uint32_t key)
      : address_(address), port_(port), key_(key) {}
  std::uint32_t address() const override { return address_; }
  std::uint16_t port() const override { return port_; }
  std::uint32_t qpn() const override { return port_; }
  std::uint32_t key() const { return key_; }
  sockaddr_in sockaddr() const;

 private:
  std::uint32_t address_;
  std::uint16_t port_;
  std::uint32_t key_;
};

// The endpoint's socket and state, shared with its handlers (and with the listener that answers
// a Resolve with it), which may outlive the endpoint.
class UdCore : public std::enable_shared_from_this<UdCore> {
 public:
  UdCore(asio::io_context& io, const sockaddr_in& ia, EndpointEvents* events, std::uint32_t key);
  // Binds the socket and starts reading; an error Status (logged) when no socket can be had.
  Status Open();

  // Consumer threads.
  Status Send(const Work& work);
  Status Resolve(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us, std::uint64_t request);
  void Disconnect();
  void Detach();  // no report runs after this returns

  // Any thread: sends a Resolve answer (kResolveReply) from this endpoint's port.
  void Answer(const sockaddr_in& to, std::uint32_t key, std::uint64_t request, std::span<const std::uint8_t> private_data);

  std::uint32_t key() const { return key_; }
  sockaddr_in local() const { return local_; }

 private:
  struct PendingResolve {
    std::uint64_t request = 0;
    sockaddr_in to{};
    std::vector<std::uint8_t> private_data;
    std::chrono::steady_clock::time_point deadline;  // time_point::max(): no timeout
    std::chrono::steady_clock::time_point next;      // when it is sent again
    std::chrono::milliseconds interval{0};
  };

  void ArmRead();
  void ReadAvailable();  // mutex_ held
  void Process(std::size_t size, const sockaddr_in& from);  // mutex_ held; the message at kRxAt
  void OnData(const ud::Header& header, std::uint8_t* payload, const sockaddr_in& from);
  void OnAnswer(const ud::Header& header, std::span<const std::uint8_t> payload, const sockaddr_in& from);
  void SendRequest(const PendingResolve& pending);
  void ArmTimer();       // mutex_ held
  void OnTimer();
  void UnlockAndDeliver();  // releases mutex_, then delivers what was reported

  asio::io_context& io_;
  const std::uint32_t key_;
  sockaddr_in local_{};
  softdat::Mutex mutex_;
  asio::ip::udp::socket socket_;
  asio::steady_timer timer_;
  EndpointEvents* events_;  // null once detached
  bool ended_ = false;      // disconnected: datagrams are dropped, resolutions stopped
  bool report_pending_ = false;
  bool timer_armed_ = false;
  std::atomic<int> delivering_{0};
  std::uint32_t next_msn_ = 1;  // the next datagram's number for AcquireRecv
  std::vector<PendingResolve> pending_;
  // Where a datagram is read: its header lands at kRxAt, so that the GRH written over the 40
  // bytes before its payload makes them one contiguous receive (the completion's bytes).
  static constexpr std::size_t kRxAt = ud::kGrhSize - ud::kHeaderSize;
  std::vector<std::uint8_t> rx_;
};

class UdEndpoint final : public Endpoint {
 public:
  explicit UdEndpoint(std::shared_ptr<UdCore> core) : core_(std::move(core)) {}
  ~UdEndpoint() override { core_->Detach(); }
  UdEndpoint(const UdEndpoint&) = delete;
  UdEndpoint& operator=(const UdEndpoint&) = delete;

  Status Connect(const sockaddr_in&, std::uint16_t, std::span<const std::uint8_t>, std::uint64_t) override {
    return Status(Code::kModelNotSupported);  // a datagram endpoint resolves instead
  }
  Status Post(const Work& work) override { return core_->Send(work); }
  Status Resolve(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us, std::uint64_t request) override {
    return core_->Resolve(remote, port, private_data, timeout_us, request);
  }
  Status PostRecv(std::uint64_t, std::span<const Segment>) override { return Status(Code::kModelNotSupported); }
  void RecvBuffersAvailable() override {}  // a datagram that found none was dropped
  void Disconnect(bool) override { core_->Disconnect(); }
  sockaddr_in local_address() const override { return core_->local(); }
  sockaddr_in remote_address() const override { return sockaddr_in{}; }

  const std::shared_ptr<UdCore>& core() const { return core_; }

 private:
  std::shared_ptr<UdCore> core_;
};

// Transport::CreateEndpoint with EndpointConfig::datagram, on `ia` (the IA address).
Status CreateDatagramEndpoint(asio::io_context& io, const sockaddr_in& ia, EndpointEvents* events,
                              std::unique_ptr<Endpoint>& out);

}  // namespace softdat::transport::tcp
