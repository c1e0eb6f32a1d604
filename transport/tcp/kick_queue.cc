// KickQueue: the ring, the eventfd and the handler that runs each queued connection's OnKick.
#include "transport/tcp/kick_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/tcp_connection.h"

namespace softdat::transport::tcp {

KickQueue::KickQueue(boost::asio::io_context& io, std::size_t capacity)
    : io_(io), fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), descriptor_(io), ring_(capacity) {
  if (fd_ < 0) {
    SOFTDAT_LOG(kWarn, "tcp: no eventfd (%s); wake-ups fall back to asio::post", std::strerror(errno));
    return;
  }
  boost::system::error_code error;
  descriptor_.assign(fd_, error);
  if (error) {
    ::close(fd_);
    fd_ = -1;
  }
}

KickQueue::~KickQueue() = default;  // the descriptor closes the eventfd

void KickQueue::Start() {
  if (fd_ >= 0) Arm();
}

void KickQueue::Stop() {
  boost::system::error_code ignored;
  descriptor_.close(ignored);
  std::lock_guard lock(mutex_);
  for (auto& connection : ring_) connection.reset();
  count_ = 0;
}

void KickQueue::Push(std::shared_ptr<Connection> connection) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (fd_ >= 0 && count_ < ring_.size()) {
      ring_[(head_ + count_) % ring_.size()] = std::move(connection);
      wake = count_++ == 0;
      connection = nullptr;
    }
  }
  if (connection) {
    boost::asio::post(io_, [connection = std::move(connection)] { connection->OnKick(); });
    return;
  }
  if (wake) {
    const std::uint64_t one = 1;
    (void)!::write(fd_, &one, sizeof one);
  }
}

void KickQueue::Arm() {
  descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                         [this](const boost::system::error_code& error) {
                           if (error) return;
                           Drain();
                           Arm();
                         });
}

void KickQueue::Drain() {
  std::uint64_t value = 0;
  (void)!::read(fd_, &value, sizeof value);
  for (;;) {
    std::shared_ptr<Connection> connection;
    {
      std::lock_guard lock(mutex_);
      if (count_ == 0) return;
      connection = std::move(ring_[head_]);
      head_ = (head_ + 1) % ring_.size();
      --count_;
    }
    connection->OnKick();
  }
}

}  // namespace softdat::transport::tcp
