// How consumer threads wake a connection's progress without allocating: a preallocated ring of
// connections that have something new (a posted Work, a receive buffer, a disconnect) and an
// eventfd the io_context waits on. asio::post would allocate a handler per wake-up from a
// thread that is not running the io_context; this does not.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace softdat::transport::tcp {

class Connection;

class KickQueue {
 public:
  KickQueue(boost::asio::io_context& io, std::size_t capacity);
  ~KickQueue();
  KickQueue(const KickQueue&) = delete;
  KickQueue& operator=(const KickQueue&) = delete;

  // Any thread. The caller makes sure a connection is queued at most once at a time (its
  // kick_pending_ flag), so `capacity` connections never overflow the ring; if they do anyway
  // the kick falls back to asio::post.
  void Push(std::shared_ptr<Connection> connection);
  // Starts waiting on the eventfd (progress context, once).
  void Start();
  // Stops waiting and drops what is queued (the transport is going away).
  void Stop();

 private:
  void Arm();
  void Drain();

  boost::asio::io_context& io_;
  int fd_ = -1;
  boost::asio::posix::stream_descriptor descriptor_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Connection>> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace softdat::transport::tcp
