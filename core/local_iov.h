// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The check every posting call (dat_srq_post_recv, dat_ep_post_recv, dat_ep_post_send,
// dat_ep_post_rdma_read/write) makes of its local I/O vector, and the copy it produces for srq/
// and the transports. Each segment must name a live LMR of the posting object's PZ, with the
// privilege the operation needs, and lie inside that LMR. A zero-length segment is legal and its
// other fields are ignored (DAT: "can be invalid"); it is dropped from the copy.
#pragma once

#include <dat2/udat.h>

#include <atomic>
#include <cstdint>
#include <span>

#include "base/segment.h"
#include "base/status.h"
#include "core/memory_window.h"

namespace softdat::core {

class MemoryTable;
class Pz;

// What the operation does with its local memory.
enum class LocalUse : std::uint8_t {
  kReceive,   // a Recv buffer or the sink of an RDMA Read: needs LOCAL_WRITE
  kTransmit,  // the source of a Send or RDMA Write: needs LOCAL_READ
};

struct CheckedIov {
  std::size_t count = 0;     // segments written to the output (zero-length ones dropped)
  std::uint64_t length = 0;  // their total length
};

// The last LMR a posting path found, kept while the table has no write since it was read (see
// MemoryTable::writes). A consumer posts from the same buffers again and again; the table's
// lookup and consistent read of the window cost about 140 instructions a segment on every post
// (docs/PERFORMANCE.md, "Same host"). One user at a time (the caller's lock guards it).
struct LocalIovCache {
  std::uint64_t writes = ~std::uint64_t{0};  // never a count the table reaches
  std::uint32_t key = 0;
  WindowView view;
};

// A LocalIovCache for a posting call several threads may make at once (dat_ep_post_recv,
// dat_srq_post_recv): a thread that finds it free uses it for its call; one that finds it in use
// reads the table as without a cache. Nobody waits.
class SharedLocalIovCache {
 public:
  // The cache for one call, or null (another thread has it).
  class Use {
   public:
    explicit Use(SharedLocalIovCache& shared)
        : shared_(shared.busy_.exchange(true, std::memory_order_acquire) ? nullptr : &shared) {}
    ~Use() {
      if (shared_ != nullptr) shared_->busy_.store(false, std::memory_order_release);
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    LocalIovCache* get() const { return shared_ != nullptr ? &shared_->cache_ : nullptr; }

   private:
    SharedLocalIovCache* const shared_;
  };

 private:
  std::atomic<bool> busy_{false};
  LocalIovCache cache_;
};

// Checks `iov` and writes its non-empty segments to `out` (room for iov.size() entries).
// Failures, in the order DAT lists them, with nothing written that the caller keeps:
//   kPrivilegesViolation  a context names no LMR of this IA, or the LMR lacks the privilege
//                         (subtype kPrivilegesWrite / kPrivilegesRead)
//   kProtectionViolation  the LMR belongs to another PZ (kProtectionWrite / kProtectionRead)
//   kInvalidParameter     a segment reaches outside its LMR (subtype `iov_argument`)
// `cache`, when given, answers for the key it holds and is refilled from the table otherwise.
Status CheckLocalIov(const MemoryTable& memory, const Pz* pz, std::span<const DAT_LMR_TRIPLET> iov,
                     LocalUse use, Detail iov_argument, std::span<Segment> out, CheckedIov& checked,
                     LocalIovCache* cache = nullptr);

}  // namespace softdat::core
