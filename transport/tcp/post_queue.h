// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What consumer threads posted on one connection that the transmit stream has not taken yet: a
// ring of max_send_work slots made with the connection, and for small payloads their copies in an
// inline ring (an RNIC's inline data: the consumer may reuse its buffer at once). A small Send on
// an established connection is framed whole when posted, its payload copied and checksummed in
// one pass while it is in cache (FrameAtPost): framing it later read the copy again, cold.
//
// Threads: Add runs on consumer threads, the Take calls in the progress context (or in Post's
// latency path, under the connection's IoLock); one mutex guards the ring. count() is also read
// without it: a hint that is exact once posts stop (a Work it misses comes with a kick).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/tcp/block_pool.h"
#include "transport/tcp/inline_ring.h"
#include "transport/work.h"

namespace softdat::transport::tcp {

class PostQueue {
 public:
  // A posted Work and, for a small Send or Write, where its payload was copied at post (for a
  // small Send on an established connection, the whole FPDU: `framed`).
  struct Posted {
    Work work;
    Segment inline_segment;
    std::uint32_t inline_charged = 0;  // its InlineRing charge; 0 when not copied
    std::uint32_t msn = 0;  // a Send's (and a Write with immediate data's Immediate Data message's):
                            // they are framed in post order
    bool framed = false;
  };

  PostQueue(BlockPool& inline_pool, std::uint32_t capacity) : slots_(capacity < 1 ? 1 : capacity), inline_(inline_pool) {}

  // The MPA exchange decided: Sends posted from now on are framed at post, with or without CRC.
  void EnableFraming(bool crc);

  // Consumer thread: queues `work` (kInsufficientResources/kTep when the ring is full).
  Status Add(const Work& work);

  std::uint32_t count() const { return count_.load(std::memory_order_acquire); }

  // Post's shortest path: when the only Work queued is a Send framed whole at post, takes it and
  // returns its frame (false otherwise).
  bool TakeLoneFramed(Posted& out);
  // Takes the oldest Work if `may_take(it)` says it may go now (a fenced one waits for our Reads,
  // a Read for the ORD); false when there is none or it must wait.
  template <class MayTake>
  bool TakeFront(MayTake may_take, Posted& out) {
    std::lock_guard lock(mutex_);
    const std::uint32_t count = count_.load(std::memory_order_relaxed);
    if (count == 0 || !may_take(slots_[head_])) return false;
    PopLocked(out, count);
    return true;
  }
  // The inline copies of Work that completed are free again.
  void ReleaseInline(std::uint32_t charged);
  // Whether nothing is queued, under the lock (a graceful close sends its FIN only then).
  bool Empty();

 private:
  void CopyInline(Posted& slot);
  void FrameAtPost(Posted& slot, bool crc);
  void PopLocked(Posted& out, std::uint32_t count);

  enum class Framing : std::uint8_t { kNotYet, kWithCrc, kWithoutCrc };

  softdat::Mutex mutex_;
  std::vector<Posted> slots_;
  InlineRing inline_;
  std::uint32_t head_ = 0;
  std::atomic<std::uint32_t> count_{0};  // written under mutex_, read without it too (see above)
  std::uint32_t send_msn_ = 1;           // the next Send's MSN
  Framing framing_ = Framing::kNotYet;   // under mutex_
};

}  // namespace softdat::transport::tcp
