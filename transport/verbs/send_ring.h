// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// SendRing: an endpoint's posted sends (Sends, RDMA Writes, RDMA Reads) in posting order, from the
// post until the device's completion, and which of them the device is asked to complete (signal).
//
// A request the consumer wants no event for on success (DAT_COMPLETION_SUPPRESS_FLAG) is posted
// unsignalled, as OFED DAPL does: the device writes no CQE for it unless it fails or is flushed,
// so a ping-pong of suppressed RDMA Writes costs no completion at either end. RC completes a send
// queue in order, so a completion of entry S says every older entry succeeded: Complete reports
// them, then S. Every `interval`-th post is signalled whatever the consumer asked, so the ring
// (and the device's send queue) never fills with entries no completion will ever free.
//
// At teardown the QP is in ERR: the device flushes (with a CQE) every entry it had not completed,
// signalled or not, so once the flush is in, what remains unsignalled had succeeded (TakeDone).
//
// Threads: Push and Unpush under the poster's lock; Complete and TakeDone on the one thread that
// polls the CQ at a time; signalled_outstanding and empty from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace softdat::transport::verbs {

class SendRing {
 public:
  struct Posted {
    std::uint64_t id;
    std::uint32_t length;
    bool signalled;
  };

  // Room for `entries` outstanding sends; at most interval() of them unsignalled in a row.
  void Allocate(std::uint32_t entries) {
    size_ = entries + 1;
    interval_ = entries / 2 > 0 ? entries / 2 : 1;
    slots_.reset(new Posted[size_]);
  }
  std::uint32_t interval() const { return interval_; }

  // Under the poster's lock: records a send the consumer wants reported (`wanted`) or not; `seq`
  // names it in the wr_id and `signalled` says whether to post it IBV_SEND_SIGNALED. False when full.
  bool Push(std::uint64_t id, std::uint32_t length, bool wanted, std::uint64_t& seq, bool& signalled) {
    seq = head_.load(std::memory_order_relaxed);
    if (seq - tail_.load(std::memory_order_acquire) >= size_ - 1) return false;
    signalled = wanted || run_ + 1 >= interval_;
    saved_run_ = run_;
    saved_last_signalled_ = last_signalled_.load(std::memory_order_relaxed);
    run_ = signalled ? 0 : run_ + 1;
    slots_[seq % size_] = Posted{id, length, signalled};
    if (signalled) last_signalled_.store(seq + 1, std::memory_order_release);
    head_.store(seq + 1, std::memory_order_release);  // before the post: its completion may beat us back
    return true;
  }
  // Under the poster's lock, right after a Push whose post failed.
  void Unpush() {
    run_ = saved_run_;
    last_signalled_.store(saved_last_signalled_, std::memory_order_release);
    head_.store(head_.load(std::memory_order_relaxed) - 1, std::memory_order_release);
  }

  // The polling thread: the completion of the entry whose sequence ends in `seq_low32`. Calls
  // each(posted, completed) for every older entry (completed false: it succeeded without a CQE)
  // and then for that one (completed true), oldest first. False if no outstanding entry has it.
  template <typename Each>
  bool Complete(std::uint32_t seq_low32, Each&& each) {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    const std::uint64_t distance = static_cast<std::uint32_t>(seq_low32 - static_cast<std::uint32_t>(tail));
    if (distance >= head - tail) return false;
    for (std::uint64_t seq = tail; seq <= tail + distance; ++seq) {
      const Posted posted = slots_[seq % size_];
      tail_.store(seq + 1, std::memory_order_release);
      each(posted, seq == tail + distance);
    }
    return true;
  }

  // Teardown, the flush in: the unsignalled entries older than any signalled one left, each(posted).
  template <typename Each>
  void TakeDone(Each&& each) {
    std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    for (; tail != head && !slots_[tail % size_].signalled; ++tail) {
      const Posted posted = slots_[tail % size_];
      tail_.store(tail + 1, std::memory_order_release);
      each(posted);
    }
  }

  // A signalled entry has not completed yet (what a graceful disconnect and teardown wait for).
  bool signalled_outstanding() const {
    return last_signalled_.load(std::memory_order_acquire) > tail_.load(std::memory_order_acquire);
  }
  bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire); }

 private:
  std::unique_ptr<Posted[]> slots_;
  std::uint32_t size_ = 1;
  std::uint32_t interval_ = 1;
  std::atomic<std::uint64_t> head_{0};
  std::atomic<std::uint64_t> tail_{0};
  std::atomic<std::uint64_t> last_signalled_{0};  // sequence + 1 of the newest signalled entry
  // Under the poster's lock.
  std::uint32_t run_ = 0;  // unsignalled entries posted since the last signalled one
  std::uint32_t saved_run_ = 0;
  std::uint64_t saved_last_signalled_ = 0;
};

}  // namespace softdat::transport::verbs
