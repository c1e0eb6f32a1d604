// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// How consumer threads hand a connection to whoever drives progress, without allocating: a
// preallocated ring of connections that have something new (a posted Work to send or complete, a
// receive buffer, a disconnect) and an eventfd the progress thread's io_context waits on. Any
// poller drains the ring (TcpTransport::Progress from a consumer's wait, or the progress thread).
// The eventfd is written only when someone must be woken: never in busy-poll mode (the consumer's
// own waits drain the ring), never for a completion nobody waits for (it waits in the ring for
// the next poll), and in the default mode only when no consumer has polled lately.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/mutex.h"
#include "transport/tcp/progress_target.h"

namespace softdat::transport::tcp {

class KickQueue {
 public:
  // What a drain runs for a queued connection: ProgressTarget::OnKick(consumer, ia_last_write_ns);
  // false queues it again. Tests give their own to script a drain.
  using Run = std::function<bool(ProgressTarget&, bool consumer, std::uint64_t ia_last_write_ns)>;

  // `needs_wake` says whether a push must wake the progress thread (null: never); `run`, if
  // given, replaces ProgressTarget::OnKick.
  KickQueue(boost::asio::io_context& io, std::size_t capacity, std::function<bool()> needs_wake, Run run = nullptr);
  // Room for `connections` queued at once, so none overflows (endpoint creation calls it; it
  // allocates, doubling, and never shrinks). False when memory ran out: pushes beyond the room
  // still work, through asio::post.
  bool Reserve(std::size_t connections);
  ~KickQueue();
  KickQueue(const KickQueue&) = delete;
  KickQueue& operator=(const KickQueue&) = delete;

  // Any thread. The caller makes sure a connection is queued at most once at a time (its
  // kick_state_), so `capacity` connections never overflow the ring; if they do anyway the kick
  // falls back to asio::post. `wake` false queues it for the next drain and wakes nobody: a
  // completion nobody waits for (Connection::Defer). A later Push with `wake`, or WakeForQueued,
  // wakes the thread for it and everything queued before.
  void Push(std::shared_ptr<ProgressTarget> connection, bool wake = true);
  // A connection queued without a wake needs one now (Work to send came after its completion).
  // Wakes the progress thread as a Push would, unless a wake is already on its way for the
  // ring; nothing when the ring is empty (a drain took the connection, and polls it next).
  void WakeForQueued();
  // Runs OnKick of every connection queued when it starts; one that defers its writes (a
  // consumer's poll inside the coalescing window) is queued again. `consumer`: called from a
  // consumer's poll rather than the progress thread; `ia_last_write_ns`: when the IA last wrote,
  // as the drain begins (TxStream::Due). True if a connection ran. Any thread.
  bool Drain(bool consumer = false, std::uint64_t ia_last_write_ns = 0);
  // Whether a connection is queued: a drain is due, and Work posted now can join it.
  bool queued() const { return depth_.load(std::memory_order_relaxed) != 0; }
  // How many connections are queued (read without the lock: a hint, exact once posts stop).
  std::size_t depth() const { return depth_.load(std::memory_order_relaxed); }
  // Whether a push now would wake the progress thread (the constructor's `needs_wake`): false
  // while a consumer polls, which drains the ring, and always in busy-poll mode. The caller
  // issued a seq_cst fence after what the push would announce.
  bool NeedsWake() const { return needs_wake_ && needs_wake_(); }
  // Starts waiting on the eventfd (progress context, once).
  void Start();

  // Who may be waiting on the IA's events without calling in (Transport::ReportWaits): once the
  // waits are reported, `delta` counts each consumer asleep in a wait (from its Pause to its
  // Resume) and each CNO. Any thread; the count's changes are sequentially consistent.
  void ReportWaits() { waits_reported_.store(true, std::memory_order_seq_cst); }
  void AddWaiters(int delta) { waiters_.fetch_add(delta, std::memory_order_seq_cst); }
  // Whether a completion left for the next poll, with nobody woken, could keep someone waiting:
  // true unless the waits are reported and none is under way. The caller issued a seq_cst fence
  // after the note it would leave (a waiter counts itself before the look that finds it).
  bool MayBeWaitedOn() const {
    return !waits_reported_.load(std::memory_order_seq_cst) || waiters_.load(std::memory_order_seq_cst) != 0;
  }
  // How often a push or drain woke the progress thread (an eventfd write each).
  std::uint64_t wakes() const { return wakes_.load(std::memory_order_relaxed); }

 private:
  void Arm();
  void Wake();
  // Queues a connection whose drain deferred it again; runs it later when the ring is full.
  void Requeue(std::shared_ptr<ProgressTarget> connection);
  bool RunOne(ProgressTarget& connection, bool consumer, std::uint64_t ia_last_write_ns);
  void RunLater(std::shared_ptr<ProgressTarget> connection);

  boost::asio::io_context& io_;
  int fd_ = -1;
  boost::asio::posix::stream_descriptor descriptor_;
  std::function<bool()> needs_wake_;
  Run run_;
  softdat::Mutex mutex_;
  std::vector<std::shared_ptr<ProgressTarget>> ring_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  // Under mutex_: a wake was asked for what the ring holds (a Push with `wake` since the ring was
  // empty or the last drain began), so another Push need not ask again: one wake per batch.
  bool wake_asked_ = false;
  std::atomic<std::size_t> depth_{0};  // count_, readable without the lock (written under it)
  std::atomic<bool> waits_reported_{false};
  std::atomic<int> waiters_{0};
  std::atomic<std::uint64_t> wakes_{0};
};

}  // namespace softdat::transport::tcp
