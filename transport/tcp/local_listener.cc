// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A TCP listener's same-host rendezvous (transport/shm/rendezvous.h): the connection requests of
// softdat peers of this host and network namespace, read beside the TCP socket's MPA Requests
// and bounded the same way (at most kMaxRequestsInFlight read at once, 5 s each), then handed to
// the consumer as PendingConnections with TCP's semantics: the request's private data and the
// active side's address (dat_cr_query), the consumer's accept or reject (with private data), and
// a request dropped unanswered refused as the provider's.
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/log.h"
#include "transport/shm/rendezvous.h"
#include "transport/tcp/tcp_endpoint.h"
#include "transport/tcp/tcp_listener.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {
namespace {

constexpr auto kRequestTimeout = std::chrono::seconds(5);  // as an MPA Request's (tcp_listener.cc)
constexpr auto kStarvedRetry = std::chrono::milliseconds(100);
// Requests one readiness of the rendezvous accepts before it lets other handlers run.
constexpr int kAcceptsPerTurn = 64;

class ShmPendingConnection final : public PendingConnection {
 public:
  ShmPendingConnection(std::unique_ptr<shm::PassiveHandshake> handshake, const sockaddr_in& local)
      : handshake_(std::move(handshake)), local_(local) {
    const shm::Request& request = handshake_->request();
    const std::span<const std::uint8_t> data = request.private_data.view();
    private_data_.assign(data.begin(), data.end());
    remote_ = request.address;
  }
  ~ShmPendingConnection() override {
    // Dropped unanswered: the active side sees the provider's refusal, as over TCP.
    if (handshake_ != nullptr) handshake_->RejectWith(false, {});
  }
  std::span<const std::uint8_t> private_data() const override { return private_data_; }
  sockaddr_in remote_address() const override { return remote_; }
  sockaddr_in local_address() const override { return local_; }

  Status Accept(Endpoint& endpoint, std::span<const std::uint8_t> private_data) override {
    if (handshake_ == nullptr) return Status(Code::kInvalidState);
    auto* tcp = dynamic_cast<TcpEndpoint*>(&endpoint);
    if (tcp == nullptr) return Status(Code::kInvalidParameter, Detail::kNone);
    return tcp->AcceptLocal(handshake_, private_data, local_, remote_);
  }

  void Reject(std::span<const std::uint8_t> private_data) override {
    if (handshake_ == nullptr) return;
    // As much as an MPA Reply to a softdat peer carries (tcp_listener.cc: an enhanced Request).
    const std::size_t room = wire::kMaxMpaPrivateData - wire::kMpaEnhancedBlockSize;
    handshake_->RejectWith(true, private_data.first(std::min(private_data.size(), room)));
    handshake_.reset();
  }

 private:
  std::unique_ptr<shm::PassiveHandshake> handshake_;  // null once answered
  std::vector<std::uint8_t> private_data_;
  sockaddr_in local_{};
  sockaddr_in remote_{};
};

bool OutOfResources(int error) { return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM; }

}  // namespace

struct ListenerCore::LocalReader {
  LocalReader(asio::io_context& io, shm::UniqueFd socket)
      : handshake(std::make_unique<shm::PassiveHandshake>(std::move(socket))), wait(io), timer(io) {}
  std::unique_ptr<shm::PassiveHandshake> handshake;
  asio::posix::stream_descriptor wait;  // a duplicate of the handshake's socket (it closes its own on failure)
  asio::steady_timer timer;
  bool done = false;
};

void ListenerCore::StartLocal(in_addr address, std::uint16_t port) {
  shm::UniqueFd fd;
  if (Status status = shm::ListenRendezvous(address, port, fd); !status.ok()) {
    // Taken (ListenRendezvous says so): same-host peers reach this listener over TCP.
    if (status.code() != Code::kConnQualInUse)
      SOFTDAT_LOG(kWarn, "tcp listener %s: cannot listen for same-host softdat peers (%s); they connect over TCP",
                  ListenText().c_str(), CodeName(status.code()));
    return;
  }
  local_address_.sin_family = AF_INET;
  local_address_.sin_addr = address;
  local_address_.sin_port = htons(port);
  {
    std::lock_guard lock(acceptor_mutex_);
    boost::system::error_code error;
    rendezvous_.assign(fd.get(), error);
    if (error) return;  // fd closes: TCP only
    (void)fd.Release();
  }
  asio::post(io_, [self = shared_from_this()] { self->AcceptLocalNext(); });
}

void ListenerCore::AcceptLocalNext() {
  if (local_reading_ >= kMaxRequestsInFlight) {
    local_paused_ = true;  // FinishLocal accepts again; the rest wait in the socket's backlog
    return;
  }
  std::lock_guard lock(acceptor_mutex_);
  if (!rendezvous_.is_open()) return;  // stopped
  rendezvous_.async_wait(asio::posix::stream_descriptor::wait_read, [self = shared_from_this()](
                                                                        const boost::system::error_code& error) {
    if (error) return;  // stopped
    for (int i = 0; i < kAcceptsPerTurn && self->local_reading_ < kMaxRequestsInFlight; ++i) {
      shm::UniqueFd socket;
      int why = 0;
      {
        std::lock_guard lock(self->acceptor_mutex_);
        if (!self->rendezvous_.is_open()) return;
        socket = shm::AcceptRendezvous(self->rendezvous_.native_handle());
        why = errno;
      }
      if (socket.valid()) {
        self->local_starved_ = false;
        ++self->local_reading_;
        self->ReadLocalRequest(std::make_shared<LocalReader>(self->io_, std::move(socket)));
        continue;
      }
      if (OutOfResources(why)) {
        // The rendezvous stays readable: waiting again at once would spin.
        if (!self->local_starved_)
          SOFTDAT_LOG(kWarn, "tcp listener %s: cannot accept same-host connections: %s; they wait until descriptors "
                      "are free (raise the limit: ulimit -n)", self->ListenText().c_str(), std::strerror(why));
        self->local_starved_ = true;
        self->local_retry_.expires_after(kStarvedRetry);
        self->local_retry_.async_wait([self](const boost::system::error_code& cancelled) {
          if (!cancelled) self->AcceptLocalNext();
        });
        return;
      }
      break;  // nothing more waits (EAGAIN), or the peer left before we took it
    }
    self->AcceptLocalNext();
  });
}

void ListenerCore::ReadLocalRequest(const std::shared_ptr<LocalReader>& reader) {
  reader->timer.expires_after(kRequestTimeout);
  reader->timer.async_wait([self = shared_from_this(), reader](const boost::system::error_code& error) {
    if (error || reader->done) return;
    SOFTDAT_LOG(kInfo, "tcp listener %s: closing an incoming same-host connection: no request within 5 s",
                self->ListenText().c_str());
    self->FinishLocal(reader, false);
  });
  const int copy = ::fcntl(reader->handshake->fd(), F_DUPFD_CLOEXEC, 0);
  boost::system::error_code error;
  if (copy >= 0) reader->wait.assign(copy, error);
  if (copy < 0 || error) {
    if (copy >= 0) ::close(copy);
    FinishLocal(reader, false);
    return;
  }
  WaitLocal(reader);
}

void ListenerCore::WaitLocal(const std::shared_ptr<LocalReader>& reader) {
  reader->wait.async_wait(asio::posix::stream_descriptor::wait_read, [self = shared_from_this(), reader](
                                                                          const boost::system::error_code& error) {
    if (error || reader->done) return;
    switch (reader->handshake->OnReadable()) {
      case shm::PassiveHandshake::Step::kPending:
        self->WaitLocal(reader);
        return;
      case shm::PassiveHandshake::Step::kRequest:
        self->FinishLocal(reader, true);
        return;
      default:
        self->FinishLocal(reader, false);  // the handshake said why
        return;
    }
  });
}

void ListenerCore::FinishLocal(const std::shared_ptr<LocalReader>& reader, bool delivered) {
  if (reader->done) return;
  reader->done = true;
  reader->timer.cancel();
  boost::system::error_code ignored;
  reader->wait.close(ignored);
  std::unique_ptr<shm::PassiveHandshake> handshake = std::move(reader->handshake);
  --local_reading_;
  if (local_paused_ && local_reading_ < kMaxRequestsInFlight) {
    local_paused_ = false;
    AcceptLocalNext();
  }
  if (delivered) Report(std::make_unique<ShmPendingConnection>(std::move(handshake), local_address_));
}

}  // namespace softdat::transport::tcp
