// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// TcpEndpoint: the choice between the same-host path and TCP, made once per connection.
#include "transport/tcp/tcp_endpoint.h"

#include "base/log.h"

namespace softdat::transport::tcp {

TcpEndpoint::TcpEndpoint(asio::io_context& io, const ConnectionOptions& options, LocalPaths* local,
                         const EndpointConfig& config, EndpointEvents* events, std::uint32_t max_private_data)
    : io_(io),
      options_(options),
      paths_(local),
      config_(config),
      events_(events),
      max_private_data_(max_private_data) {
  options_.buffers->live_endpoints.fetch_add(1, std::memory_order_relaxed);
}

TcpEndpoint::~TcpEndpoint() {
  if (local_ != nullptr) local_->Detach();
  if (connection_ != nullptr) connection_->Detach();
  options_.buffers->live_endpoints.fetch_sub(1, std::memory_order_relaxed);
}

Connection* TcpEndpoint::MakeConnection() {
  if (Connection* made = tcp_connection()) return made;
  try {
    connection_ = std::make_shared<Connection>(io_, options_, config_, events_);
  } catch (const std::bad_alloc&) {
    SOFTDAT_LOG(kWarn, "tcp: no memory for a connection");
    return nullptr;
  }
  tcp_ready_.store(connection_.get(), std::memory_order_release);
  return connection_.get();
}

Status TcpEndpoint::Start(std::span<const std::uint8_t> private_data) {
  if (private_data.size() > max_private_data_) return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  if (started_.exchange(true)) return Status(Code::kInvalidState, Detail::kEpConnected);
  return Status::Ok();
}

Status TcpEndpoint::Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                            std::uint64_t timeout_us) {
  if (Status status = Start(private_data); !status.ok()) return status;
  if (paths_ != nullptr) {
    // A softdat listener of this host and namespace answers on its rendezvous at once; nobody
    // there (another host, another namespace, siw, OFED DAPL, shm=off) means TCP, as before.
    auto local = std::make_shared<LocalConnection>(*paths_, config_, events_);
    if (local->Dial(remote, port, private_data, timeout_us) == LocalConnection::Dialed::kStarted) {
      local_ = std::move(local);
      local_ready_.store(local_.get(), std::memory_order_release);
      return Status::Ok();
    }
  }
  Connection* tcp = MakeConnection();
  if (tcp == nullptr) return Status(Code::kInsufficientResources, Detail::kMemory);
  return tcp->Connect(remote, port, private_data, timeout_us);
}

Status TcpEndpoint::AcceptTcp(asio::ip::tcp::socket socket, const wire::MpaFrame& request,
                              std::span<const std::uint8_t> private_data) {
  if (Status status = Start(private_data); !status.ok()) return status;
  Connection* tcp = MakeConnection();
  if (tcp == nullptr) return Status(Code::kInsufficientResources, Detail::kMemory);
  return tcp->Accept(std::move(socket), request, private_data);
}

Status TcpEndpoint::AcceptLocal(std::unique_ptr<shm::PassiveHandshake>& handshake,
                                std::span<const std::uint8_t> private_data, const sockaddr_in& local,
                                const sockaddr_in& remote) {
  // An IA with shm=off has no rendezvous, so its listeners read no such request: a request of
  // another IA's listener is not this endpoint's to take.
  if (paths_ == nullptr) return Status(Code::kInvalidParameter, Detail::kNone);
  if (Status status = Start(private_data); !status.ok()) return status;
  local_ = std::make_shared<LocalConnection>(*paths_, config_, events_);
  local_ready_.store(local_.get(), std::memory_order_release);
  local_->Accept(std::move(handshake), private_data, local, remote);
  return Status::Ok();
}

void TcpEndpoint::Disconnect(bool graceful) {
  if (LocalConnection* local = local_connection()) return local->Disconnect(graceful);
  if (Connection* tcp = tcp_connection()) tcp->Disconnect(graceful);
}

sockaddr_in TcpEndpoint::local_address() const {
  if (LocalConnection* local = local_connection()) return local->local_address();
  if (Connection* tcp = tcp_connection()) return tcp->local_address();
  return sockaddr_in{};
}

sockaddr_in TcpEndpoint::remote_address() const {
  if (LocalConnection* local = local_connection()) return local->remote_address();
  if (Connection* tcp = tcp_connection()) return tcp->remote_address();
  return sockaddr_in{};
}

}  // namespace softdat::transport::tcp
