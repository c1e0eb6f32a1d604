// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The sockets of one transport's live connections in one level-triggered epoll set: the answer to
// "which connections have bytes to read?" for whoever drives progress now — a consumer spinning in
// an EVD wait or dequeue (busy-poll, or the default mode's brief spin) or the progress thread.
// Registered once per connection, so polling costs one epoll_wait and no epoll_ctl per message
// (Asio's per-operation async_wait re-armed the socket on every read).
//
// Each socket's entry carries a slot and a generation, and the slot table holds a weak_ptr: a
// poller gets a shared_ptr to a connection that is still alive, never a dangling pointer, even
// when the connection goes away between epoll_wait and its use. A connection is a ProgressTarget:
// an iWARP socket, or the rendezvous socket of a shared-memory connection, whose data moves
// through memory and whose socket carries only wake-ups and the end (registered not `direct`).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/mutex.h"
#include "transport/tcp/progress_target.h"

namespace softdat::transport::tcp {

class PollSet {
 public:
  PollSet();
  ~PollSet();
  PollSet(const PollSet&) = delete;
  PollSet& operator=(const PollSet&) = delete;

  // The epoll descriptor itself (readable when a registered socket is), for the progress thread's
  // event loop; -1 if epoll_create1 failed.
  int fd() const { return epfd_; }

  // Registers `socket` for reading (control path: it may allocate). False if epoll refused it.
  // `direct`: its data arrives on the socket, so a poller of the only connection reads it
  // straight away (Sole); a shared-memory connection's socket is not.
  bool Add(int socket, const std::shared_ptr<ProgressTarget>& connection, std::uint64_t& token, bool direct = true);
  // What a registered socket is reported for. kData: readable (bytes, the peer's end, a failure).
  // kEnd: a connection holding a message for want of a receive buffer must not be reported
  // readable again and again, but must notice the peer's end (EPOLLRDHUP) or a failure (EPOLLERR,
  // EPOLLHUP, which epoll reports whatever is asked). kFailure: the peer's end was seen already
  // (EPOLLRDHUP would report it again and again); only a failure is reported. A socket that is not
  // kData is not the Sole connection (a spinning poller would read it for nothing).
  enum class Watch { kData, kEnd, kFailure };
  void SetWatch(int socket, std::uint64_t token, Watch watch);
  void Remove(int socket, std::uint64_t token);

  // Up to `max` connections with bytes to read (or an error to report), waiting at most
  // `timeout_ms` (0: not at all). Never allocates.
  std::size_t Wait(std::shared_ptr<ProgressTarget>* out, std::size_t max, int timeout_ms);

  // The one registered connection, when there is exactly one (else null). A poller that spins
  // may read it straight away: one recv instead of an epoll_wait and then a recv, which is the
  // latency of a ping-pong (and costs the same one syscall when nothing came).
  std::shared_ptr<ProgressTarget> Sole();
  // Registered sockets whose data arrives on them (Add's `direct`): none means every registered
  // socket only wakes or ends its connection, and a spinning poller may look less often.
  std::size_t direct_count() const { return direct_count_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::weak_ptr<ProgressTarget> connection;
    std::uint32_t generation = 0;
    bool reading = true;
    bool direct = true;
  };

  void CountLocked(int change, bool direct);  // a connection came or went: the counts and sole_

  int epfd_ = -1;
  softdat::Mutex mutex_;  // the slot table
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::atomic<std::size_t> count_{0};  // registered connections (written under mutex_)
  std::atomic<std::size_t> direct_count_{0};  // of which direct (written under mutex_)
  std::weak_ptr<ProgressTarget> sole_;  // the registered one while count_ == 1, it reads and is direct (mutex_)
};

}  // namespace softdat::transport::tcp
