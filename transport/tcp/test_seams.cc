// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The TCP transport's test seams (test_seams.h).
#include "transport/tcp/test_seams.h"

#include <unistd.h>

#include <future>

#include <boost/asio/post.hpp>

#include "transport/shm/shm_connection.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/mono_clock.h"
#include "transport/tcp/tcp_endpoint.h"
#include "transport/tcp/tcp_listener.h"
#include "transport/tcp/tcp_transport.h"

// Defined here, in the test-only library, not in the engine's sources: the shipped provider
// carries no test seam (testing:no_test_seams_test).
namespace softdat::transport::shm {
softdat::Mutex& ConnectionTestAccess::IoMutex(Connection& connection) { return connection.io_mutex_; }

std::atomic<bool>& ConnectionTestAccess::KickPending(Connection& connection) { return connection.kick_pending_; }
}  // namespace softdat::transport::shm

namespace softdat::transport::tcp {

softdat::Mutex* ConnectionTestAccess::IoMutexOf(Endpoint& endpoint) {
  Connection* connection = static_cast<TcpEndpoint&>(endpoint).connection();
  return connection != nullptr ? &connection->io_mutex_ : nullptr;
}

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

bool TcpTransportTestAccess::PrepareSleep(TcpTransport& transport) { return transport.local_->PrepareSleep(); }

void TcpTransportTestAccess::EndSleep(TcpTransport& transport) { transport.local_->EndSleep(); }

int TcpTransportTestAccess::LocalEngineSocket(TcpTransport& transport, std::size_t index) {
  LocalPaths* paths = transport.local_.get();
  if (paths == nullptr) return -1;
  std::lock_guard lock(paths->mutex_);
  if (index >= paths->live_.size() || paths->live_[index]->engine_ == nullptr) return -1;
  return paths->live_[index]->engine_->socket_fd();
}

void TcpTransportTestAccess::LookInTurn(TcpTransport& transport, std::size_t per_poll) {
  std::lock_guard lock(transport.local_->mutex_);
  transport.local_->in_turn_ = per_poll;
}

bool TcpTransportTestAccess::AsioDue(TcpTransport& transport, std::uint32_t calls, bool any) {
  return transport.AsioDue(calls, any);
}

bool TcpTransportTestAccess::ReadsRingsNow(TcpTransport& transport) {
  if (transport.local_ == nullptr) return false;
  std::unique_ptr<shm::KeyTableView> view;
  return shm::KeyTableView::Open(transport.local_->keys().fd(), view).ok() && view->ReadsRingsNow();
}

void TcpTransportTestAccess::ParkAsAfterAPoll(TcpTransport& transport) {
  transport.last_poll_ns_.store(MonotonicNs(), std::memory_order_relaxed);
  transport.ArmParkFromConsumer();
}

void TcpTransportTestAccess::TakePollSetWait(TcpTransport& transport) {
  // Shared with the handlers: set_value may still be running after the wait below returns.
  auto taken = std::make_shared<std::promise<void>>();
  std::future<void> done = taken->get_future();
  boost::asio::post(transport.io_, [&transport, taken] {
    boost::system::error_code ignored;
    transport.poll_descriptor_.cancel(ignored);
    // Queued behind the cancelled wait's handler, on the one thread that runs them.
    boost::asio::post(transport.io_, [taken] { taken->set_value(); });
  });
  done.wait();
}

bool TcpTransportTestAccess::RunPostedHandlers(TcpTransport& transport, std::chrono::milliseconds bound) {
  auto ran = std::make_shared<std::promise<void>>();  // shared: set_value may outlive a timed-out wait
  std::future<void> done = ran->get_future();
  boost::asio::post(transport.io_, [ran] { ran->set_value(); });
  return done.wait_for(bound) == std::future_status::ready;
}

std::size_t TcpTransportTestAccess::QueuedKicks(TcpTransport& transport) { return transport.kicks_.depth(); }

std::uint64_t TcpTransportTestAccess::ParkWakeups(TcpTransport& transport) {
  return transport.park_wakeups_.load(std::memory_order_relaxed);
}

bool TcpTransportTestAccess::Parked(TcpTransport& transport) { return transport.parked_.load(std::memory_order_acquire); }

std::uint64_t TcpTransportTestAccess::KickWakes(TcpTransport& transport) { return transport.kicks_.wakes(); }

std::shared_ptr<LocalConnection> TcpTransportTestAccess::LiveLocal(TcpTransport& transport, std::size_t index) {
  LocalPaths* paths = transport.local_.get();
  if (paths == nullptr) return nullptr;
  std::lock_guard lock(paths->mutex_);
  if (index >= paths->live_.size() || paths->live_[index]->engine_ == nullptr) return nullptr;
  return paths->live_[index];
}

bool TcpTransportTestAccess::KickWithNothingToFind(TcpTransport& transport, std::size_t index) {
  std::shared_ptr<LocalConnection> connection = LiveLocal(transport, index);
  if (connection == nullptr) return false;
  shm::ConnectionTestAccess::KickPending(*connection->engine_).store(true);
  transport.kicks_.Push(connection);
  return true;
}

bool TcpTransportTestAccess::LocalKickPending(TcpTransport& transport, std::size_t index) {
  std::shared_ptr<LocalConnection> connection = LiveLocal(transport, index);
  return connection != nullptr && shm::ConnectionTestAccess::KickPending(*connection->engine_).load();
}

bool TcpTransportTestAccess::DeferLocalNote(TcpTransport& transport, std::size_t index) {
  std::shared_ptr<LocalConnection> connection = LiveLocal(transport, index);
  return connection != nullptr && connection->Defer(*connection->engine_);
}

bool TcpTransportTestAccess::SpellWatched(TcpTransport& transport) {
  return transport.spell_watched_.load(std::memory_order_acquire);
}

softdat::Mutex& TcpTransportTestAccess::LocalListLock(TcpTransport& transport) { return transport.local_->mutex_; }

void TcpTransportTestAccess::ClearActivity(TcpTransport& transport) {
  for (std::size_t word = 0; word < shm::kActivityWords; ++word) (void)transport.local_->activity_->Take(word);
}

softdat::Mutex* TcpTransportTestAccess::LocalEngineLock(TcpTransport& transport, std::size_t index) {
  std::shared_ptr<LocalConnection> connection = LiveLocal(transport, index);
  return connection != nullptr ? &shm::ConnectionTestAccess::IoMutex(*connection->engine_) : nullptr;
}

}  // namespace softdat::transport::tcp
