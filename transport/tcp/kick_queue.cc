// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// KickQueue: the ring, the eventfd and draining it.
#include "transport/tcp/kick_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/log.h"

namespace softdat::transport::tcp {

KickQueue::KickQueue(boost::asio::io_context& io, std::size_t capacity, std::function<bool()> needs_wake, Run run)
    : io_(io),
      fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      descriptor_(io),
      needs_wake_(std::move(needs_wake)),
      run_(std::move(run)),
      ring_(capacity) {
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

bool KickQueue::Reserve(std::size_t connections) {
  std::lock_guard lock(mutex_);
  if (ring_.size() >= connections) return true;
  std::vector<std::shared_ptr<ProgressTarget>> grown;
  try {
    grown.resize(std::max(connections, 2 * ring_.size()));
  } catch (const std::bad_alloc&) {
    return false;
  }
  for (std::size_t i = 0; i < count_; ++i) grown[i] = std::move(ring_[(head_ + i) % ring_.size()]);
  ring_.swap(grown);
  head_ = 0;
  return true;
}

void KickQueue::Push(std::shared_ptr<ProgressTarget> connection, bool wake) {
  bool ask = false;
  {
    std::lock_guard lock(mutex_);
    if (fd_ >= 0 && count_ < ring_.size()) {
      ring_[(head_ + count_) % ring_.size()] = std::move(connection);
      if (count_++ == 0) wake_asked_ = false;
      ask = wake && !wake_asked_;
      wake_asked_ |= ask;
      depth_.store(count_, std::memory_order_seq_cst);
      connection = nullptr;
    }
  }
  if (connection) {
    RunLater(std::move(connection));
    return;
  }
  // One wake per batch of kicks, and none when a polling consumer will drain the ring itself.
  if (ask && NeedsWake()) Wake();
}

void KickQueue::WakeForQueued() {
  bool ask = false;
  {
    std::lock_guard lock(mutex_);
    ask = count_ != 0 && !wake_asked_;
    wake_asked_ |= ask;
  }
  if (ask && NeedsWake()) Wake();
}

void KickQueue::Wake() {
  wakes_.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  (void)!::write(fd_, &one, sizeof one);
}

void KickQueue::Arm() {
  descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                         [this](const boost::system::error_code& error) {
                           if (error) return;
                           std::uint64_t value = 0;
                           (void)!::read(fd_, &value, sizeof value);
                           Drain();
                           Arm();
                         });
}

bool KickQueue::Drain(bool consumer, std::uint64_t ia_last_write_ns) {
  if (depth_.load(std::memory_order_acquire) == 0) return false;
  bool any = false;
  bool began = false;
  std::size_t left = 0;  // connections queued when the drain began: a requeued one waits for the next
  // One lock per connection taken, the first also reading how many there are and the last also
  // closing the drain (a drain of one connection locks twice).
  for (;;) {
    std::shared_ptr<ProgressTarget> connection;
    {
      std::lock_guard lock(mutex_);
      if (!began) {
        began = true;
        left = count_;
        // This drain takes what is queued now; a connection pushed while it runs asks for a wake
        // of its own (the drain stops at what was queued when it began: without one, that
        // connection would wait for whatever pushes next onto an empty ring).
        wake_asked_ = false;
      }
      if (left == 0 || count_ == 0) {
        depth_.store(count_, std::memory_order_release);
        break;
      }
      connection = std::move(ring_[head_]);
      head_ = (head_ + 1) % ring_.size();
      --count_;
      --left;
    }
    const bool ran = RunOne(*connection, consumer, ia_last_write_ns);
    any |= ran;
    if (!ran) Requeue(std::move(connection));
  }
  return any;
}

bool KickQueue::RunOne(ProgressTarget& connection, bool consumer, std::uint64_t ia_last_write_ns) {
  return run_ ? run_(connection, consumer, ia_last_write_ns) : connection.OnKick(consumer, ia_last_write_ns);
}

void KickQueue::RunLater(std::shared_ptr<ProgressTarget> connection) {
  // The ring is full (more connections than it was reserved for): the progress context runs it.
  boost::asio::post(io_, [this, connection = std::move(connection)]() mutable {
    if (!RunOne(*connection, false, 0)) Requeue(std::move(connection));
  });
}

void KickQueue::Requeue(std::shared_ptr<ProgressTarget> connection) {
  // No wake: a poller is here. The slot it was taken from may have been filled by a Push since
  // (the ring is reserved for the live connections, but a test or a failed Reserve may give it
  // fewer): then it runs later, never overwriting another connection's kick.
  {
    std::lock_guard lock(mutex_);
    if (count_ < ring_.size()) {
      ring_[(head_ + count_) % ring_.size()] = std::move(connection);
      ++count_;
      depth_.store(count_, std::memory_order_seq_cst);
      return;
    }
  }
  RunLater(std::move(connection));
}

}  // namespace softdat::transport::tcp
