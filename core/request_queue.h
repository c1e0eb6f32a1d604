// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// An endpoint's request queue: the Sends, RDMA Writes, RDMA Reads and RMR binds posted to it,
// each with its cookie, completion flags and (preallocated) segment storage, completed to the
// consumer in posting order whatever order the transport finishes them in (an RDMA Read ends
// when its response arrives, after Sends posted behind it have left).
//
// Threads: posting (Reserve, Commit, Abandon) is serialized by the caller (the EP's post lock)
// and is the only writer of the tail; Finish and FlushAll come from any thread (the transport's
// progress context, core's flushes); PopCompletion from whoever holds the EP's delivery turn,
// one at a time, and is the only writer of the head. No lock: each entry's id and state are one
// atomic word, which Finish moves from outstanding with a compare-and-swap (exactly once, and
// never for a later request that reuses the entry), and the head and tail are atomics their one
// writer publishes. A Send's post and completion execute one locked instruction here, where a
// mutex took eight (docs/PERFORMANCE.md, "Locked instructions"). Nothing allocates after Create.
#pragma once

#include <dat2/udat.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/segment.h"
#include "base/status.h"
#include "transport/work.h"

namespace softdat::core {

class RequestQueue {
 public:
  // The structural ceiling (rxe's max_qp_wr); the transport's memory-derived limit is lower on
  // small machines. A queue preallocates what its EP asks for, never this.
  static constexpr std::uint32_t kMaxRequests = 1u << 20;
  static constexpr std::uint32_t kMaxIov = 16;

  // What the consumer posted; `segments` has room for max_iov() entries.
  struct Request {
    DAT_DTO_COOKIE cookie{};
    DAT_DTOS operation = DAT_DTO_SEND;
    DAT_COMPLETION_FLAGS flags = DAT_COMPLETION_DEFAULT_FLAG;
    Segment* segments = nullptr;
    std::uint32_t num_segments = 0;
    std::uint64_t length = 0;
    DAT_HANDLE rmr = nullptr;  // DAT_DTO_BIND_MW: the RMR bound
  };

  // A finished request, in posting order.
  struct Completion {
    DAT_DTO_COOKIE cookie;
    DAT_DTOS operation;
    DAT_COMPLETION_FLAGS flags;
    transport::WorkStatus status;
    std::uint32_t length;
    DAT_HANDLE rmr;
    bool more;  // the next request had finished too when this one was popped
  };

  // Room for `max_requests` outstanding requests of up to `max_iov` segments each. Out of range:
  // kInvalidParameter, kParamAttributes (both come from the EP's attributes).
  static Status Create(std::uint32_t max_requests, std::uint32_t max_iov,
                       std::unique_ptr<RequestQueue>& out);

  std::uint32_t max_requests() const { return limit_; }
  std::uint32_t max_iov() const { return max_iov_; }

  // The entry the next post fills, or null when max_requests are outstanding. Stays reserved
  // until Commit; calling Reserve again returns the same entry.
  Request* Reserve();
  // Makes the reserved entry outstanding; returns its id, the transport Work id.
  std::uint64_t Commit();
  // The transport refused the just-committed request: it never happened. Only right after the
  // Commit that returned `id`, before any other post.
  void Abandon(std::uint64_t id);

  // The transport (or core, for binds) finished request `id`. False for an id that is not
  // outstanding (a transport bug, or a completion after a flush: ignored).
  bool Finish(std::uint64_t id, transport::WorkStatus status, std::uint32_t length);
  // The connection ended: every outstanding request not finished is flushed.
  void FlushAll();

  // The oldest request, if it is finished.
  bool PopCompletion(Completion& out);

  // Requests posted and not popped (dat_ep_get_status's request_idle is count() == 0).
  std::uint32_t count() const;

 private:
  // An entry's state, in the low bits of its word beside the id (word = id << 2 | state).
  // kFinishing: a Finish won the entry and is writing its status; nobody else touches it.
  enum State : std::uint64_t { kFree = 0, kOutstanding = 1, kFinishing = 2, kFinished = 3 };
  static constexpr std::uint64_t Word(std::uint64_t id, State state) { return id << 2 | state; }
  struct Entry {
    Request request;  // the poster's until Commit, then read-only until the pop frees it
    transport::WorkStatus status = transport::WorkStatus::kSuccess;  // the winning Finish's
    std::uint32_t length = 0;
    std::atomic<std::uint64_t> word{0};
  };
  // Moves request `id` from outstanding to finished with `status`; false if it was not outstanding.
  bool FinishEntry(std::uint64_t id, transport::WorkStatus status, std::uint32_t length);

  RequestQueue(std::uint32_t limit, std::uint32_t max_iov, std::uint32_t ring_size);
  Entry& EntryOf(std::uint64_t id) { return entries_[id & (ring_size_ - 1)]; }

  const std::uint32_t limit_;
  const std::uint32_t max_iov_;
  const std::uint32_t ring_size_;  // a power of two >= limit_
  std::unique_ptr<Entry[]> entries_;
  std::unique_ptr<Segment[]> segment_storage_;

  std::atomic<std::uint64_t> head_id_{1};  // the oldest not popped (ids start at 1: 0 means none); the popper's
  std::atomic<std::uint64_t> next_id_{1};  // the id the next Commit gives; the poster's
};

}  // namespace softdat::core
