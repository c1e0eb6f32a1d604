// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The transport::Endpoint of the TCP transport: the owner of a connection, which is either iWARP
// over TCP (Connection) or, when both ends are softdat IAs of this host and network namespace,
// shared memory (LocalConnection, local_path.h). Which one is decided once, by Connect (the
// active side dials the peer's rendezvous first) or by the listener's request the consumer
// accepts; every other call goes to the one chosen. Its destructor detaches the connection (no
// event after it returns) and lets the progress context close it.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "transport/endpoint.h"
#include "transport/shm/handshake.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/local_path.h"

namespace softdat::transport::tcp {

class TcpEndpoint final : public Endpoint {
 public:
  // `local`: the IA's same-host path (null with shm=off); `options` are the transport's (it
  // outlives its endpoints); `config` and `events` as the connection's.
  TcpEndpoint(asio::io_context& io, const ConnectionOptions& options, LocalPaths* local, const EndpointConfig& config,
              EndpointEvents* events, std::uint32_t max_private_data);
  ~TcpEndpoint() override;
  TcpEndpoint(const TcpEndpoint&) = delete;
  TcpEndpoint& operator=(const TcpEndpoint&) = delete;

  Status Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us) override;
  // Core posts kSendDatagram only to a datagram endpoint (never one of these), and posts only on
  // a connected EP, whose connection was chosen.
  Status Post(const Work& work) override {
    if (LocalConnection* local = local_connection()) return local->Post(work);
    if (Connection* tcp = tcp_connection()) return tcp->Post(work);
    return Status(Code::kInvalidState, Detail::kEpNotReady);
  }
  // The software receive model takes buffers on arrival; nothing is posted down.
  Status PostRecv(std::uint64_t, std::span<const Segment>) override { return Status(Code::kModelNotSupported); }
  void RecvBuffersAvailable() override {
    if (LocalConnection* local = local_connection()) return local->RecvBuffersAvailable();
    // Before a connection exists there is no held stream to resume.
    if (Connection* tcp = tcp_connection()) tcp->RecvBuffersAvailable();
  }
  void Disconnect(bool graceful) override;
  sockaddr_in local_address() const override;
  sockaddr_in remote_address() const override;

  // Passive side (tcp_listener.cc): the consumer accepted a request read over TCP, or one read on
  // the same-host rendezvous (local_listener.cc), which it takes only when it returns kOk.
  Status AcceptTcp(asio::ip::tcp::socket socket, const wire::MpaFrame& request, std::span<const std::uint8_t> private_data);
  Status AcceptLocal(std::unique_ptr<shm::PassiveHandshake>& handshake, std::span<const std::uint8_t> private_data,
                     const sockaddr_in& local, const sockaddr_in& remote);

  // The iWARP connection, made now if it was not (tests drive it over a socketpair); null when
  // there was no memory for it.
  Connection* connection() { return MakeConnection(); }

 private:
  LocalConnection* local_connection() const { return local_ready_.load(std::memory_order_acquire); }
  Connection* tcp_connection() const { return tcp_ready_.load(std::memory_order_acquire); }
  Status Start(std::span<const std::uint8_t> private_data);  // the checks both sides make first
  // The iWARP connection is made when TCP is chosen (control path), not with the endpoint: an
  // endpoint that goes over shared memory never has one (its memory, about 4 KiB with the
  // rings it preallocates, is most of what an idle same-host connection would cost beyond the
  // engine). Null when there was no memory.
  Connection* MakeConnection();

  asio::io_context& io_;
  const ConnectionOptions& options_;
  LocalPaths* const paths_;
  const EndpointConfig config_;
  EndpointEvents* const events_;
  const std::uint32_t max_private_data_;
  std::atomic<bool> started_{false};  // Connect or Accept happened (once)
  std::shared_ptr<Connection> connection_;                // set once, before tcp_ready_
  std::atomic<Connection*> tcp_ready_{nullptr};          // the iWARP connection, when chosen
  std::shared_ptr<LocalConnection> local_;               // set once, before local_ready_
  std::atomic<LocalConnection*> local_ready_{nullptr};  // the shared-memory connection, when chosen
};

}  // namespace softdat::transport::tcp
