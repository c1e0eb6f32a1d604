// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test seams (testing/fuzz and transport tests): a connection over a stream socket that is
// already connected — one end of a socketpair — instead of a TCP connect or a listener's accept.
// Everything after the socket exists (MPA, FPDUs, teardown) is the production path; only how the
// socket came to be differs. Neither is used by the provider.
#include <unistd.h>

#include <boost/asio/post.hpp>

#include "transport/tcp/tcp_connection.h"
#include "transport/tcp/tcp_listener.h"
#include "transport/tcp/tcp_transport.h"

namespace softdat::transport::tcp {

Status Connection::ConnectOver(int fd, std::span<const std::uint8_t> private_data) {
  asio::ip::tcp::socket socket(io_);
  boost::system::error_code error;
  socket.assign(asio::ip::tcp::v4(), fd, error);
  if (error) {
    ::close(fd);
    return Status(Code::kInvalidParameter);
  }
  if (private_data.size() > options_.max_private_data) return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  if (started_.exchange(true)) return Status(Code::kInvalidState, Detail::kEpConnected);
  {
    IoLock lock(*this);
    socket_ = std::move(socket);
    private_data_.assign(private_data.begin(), private_data.end());
  }
  asio::post(io_, [self = shared_from_this()] {
    IoLock lock(*self);
    if (self->detached_ || self->phase_ != Phase::kIdle) return;
    self->phase_ = Phase::kConnecting;
    self->OnConnected({});  // as if the TCP connect had just completed
  });
  return Status::Ok();
}

std::unique_ptr<PendingConnection> TcpTransport::AdoptRequest(int fd, const wire::MpaFrame& request,
                                                              std::vector<std::uint8_t> private_data) {
  asio::ip::tcp::socket socket(io_);
  boost::system::error_code error;
  socket.assign(asio::ip::tcp::v4(), fd, error);
  if (error) {
    ::close(fd);
    return nullptr;
  }
  return std::make_unique<TcpPendingConnection>(std::move(socket), request, std::move(private_data));
}

}  // namespace softdat::transport::tcp
