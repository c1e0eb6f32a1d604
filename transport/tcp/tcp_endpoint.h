// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The transport::Endpoint of the TCP transport: a thin owner of a Connection. Its destructor
// detaches the connection (no event after it returns) and lets the progress context close it.
#pragma once

#include <atomic>
#include <memory>

#include "transport/endpoint.h"
#include "transport/tcp/connection.h"

namespace softdat::transport::tcp {

class TcpEndpoint final : public Endpoint {
 public:
  explicit TcpEndpoint(std::shared_ptr<Connection> connection) : connection_(std::move(connection)) {}
  ~TcpEndpoint() override { connection_->Detach(); }
  TcpEndpoint(const TcpEndpoint&) = delete;
  TcpEndpoint& operator=(const TcpEndpoint&) = delete;

  Status Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us) override {
    return connection_->Connect(remote, port, private_data, timeout_us);
  }
  // Core posts kSendDatagram only to a datagram endpoint (never one of these).
  Status Post(const Work& work) override { return connection_->Post(work); }
  // The software receive model takes buffers on arrival; nothing is posted down.
  Status PostRecv(std::uint64_t, std::span<const Segment>) override { return Status(Code::kModelNotSupported); }
  void RecvBuffersAvailable() override { connection_->RecvBuffersAvailable(); }
  void Disconnect(bool graceful) override { connection_->Disconnect(graceful); }
  sockaddr_in local_address() const override { return connection_->local_address(); }
  sockaddr_in remote_address() const override { return connection_->remote_address(); }

  Connection& connection() { return *connection_; }

 private:
  std::shared_ptr<Connection> connection_;
};

}  // namespace softdat::transport::tcp
