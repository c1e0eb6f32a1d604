// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The TCP transport's test seams (test_seams.h).
#include "transport/tcp/test_seams.h"

#include <unistd.h>

#include <boost/asio/post.hpp>

#include "transport/tcp/connection.h"
#include "transport/tcp/tcp_listener.h"
#include "transport/tcp/tcp_transport.h"

namespace softdat::transport::tcp {

Status ConnectionTestAccess::ConnectOver(Connection& c, int fd, std::span<const std::uint8_t> private_data) {
  asio::ip::tcp::socket socket(c.io_);
  boost::system::error_code error;
  socket.assign(asio::ip::tcp::v4(), fd, error);
  if (error) {
    ::close(fd);
    return Status(Code::kInvalidParameter);
  }
  if (private_data.size() > c.options_.max_private_data)
    return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  if (c.started_.exchange(true)) return Status(Code::kInvalidState, Detail::kEpConnected);
  {
    Connection::IoLock lock(c);
    c.socket_ = std::move(socket);
    c.private_data_.assign(private_data.begin(), private_data.end());
  }
  asio::post(c.io_, [self = c.shared_from_this()] {
    Connection::IoLock lock(*self);
    if (self->detached() || self->setup() != SetupState::kIdle) return;
    self->Enter(SetupEvent::kConnect);
    self->OnConnected({});  // as if the TCP connect had just completed
  });
  return Status::Ok();
}

void TcpTransportTestAccess::CoalesceLikeTheDefaultMode(TcpTransport& transport, std::uint32_t coalesce_us) {
  transport.connection_options_.post_writes_all = false;
  transport.connection_options_.coalesce_ns = std::uint64_t{coalesce_us} * 1000;
}

std::unique_ptr<PendingConnection> TcpTransportTestAccess::AdoptRequest(TcpTransport& transport, int fd,
                                                                         const wire::MpaFrame& request,
                                                                         std::vector<std::uint8_t> private_data) {
  asio::ip::tcp::socket socket(transport.io_);
  boost::system::error_code error;
  socket.assign(asio::ip::tcp::v4(), fd, error);
  if (error) {
    ::close(fd);
    return nullptr;
  }
  return std::make_unique<TcpPendingConnection>(std::move(socket), request, std::move(private_data));
}

std::size_t TcpTransportTestAccess::LocalConnections(TcpTransport& transport) {
  return transport.local_ != nullptr ? transport.local_->live() : 0;
}

}  // namespace softdat::transport::tcp
