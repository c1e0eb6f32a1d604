// The receive queue of an endpoint that does not use an SRQ. Its buffers are consumed in posting
// order: the k-th buffer posted since the connection began receives the k-th Send of the peer
// (MSN order), whatever order the messages' first segments arrive in. Completions are generated
// in MSN order too. A buffer counts as allocated to the EP from the moment it is posted (the
// dat_ep_recv_query rule for EPs without SRQ) until its completion is generated.
//
// The same shape as SrqPool + EndpointRecvAccount (Take, Place, Close, PopCompletion), so core
// drives both receive paths alike. Preallocated at Create: Post, Take, Place and PopCompletion
// never allocate; they block only on the one internal mutex, held briefly. MT-safe.
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "base/status.h"
#include "srq/recv_buffer.h"
#include "srq/recv_completion.h"

namespace softdat::srq {

class EpRecvQueue {
 public:
  static constexpr std::uint32_t kMaxRecvDtos = 1u << 16;
  static constexpr std::uint32_t kMaxRecvIov = 16;

  enum class TakeResult : std::uint8_t {
    kTaken,     // `out` is the buffer of this MSN
    kNotReady,  // the buffer for this MSN is not posted yet: receiver not ready
    kRefused,   // the MSN was already placed or delivered, or the queue is closed
  };

  // At least `max_recv_dtos` buffers of up to `max_recv_iov` segments (0 allowed: zero-size
  // messages only). Out of range: kInvalidParameter, kArg1 / kArg2.
  static Status Create(std::uint32_t max_recv_dtos, std::uint32_t max_recv_iov,
                       std::unique_ptr<EpRecvQueue>& out);

  EpRecvQueue(const EpRecvQueue&) = delete;
  EpRecvQueue& operator=(const EpRecvQueue&) = delete;

  std::uint32_t max_recv_dtos() const { return limit_; }
  std::uint32_t max_recv_iov() const { return max_iov_; }

  // dat_ep_post_recv with validated segments. Too many segments: kInvalidParameter, kArg2. Full
  // (max_recv_dtos buffers without a generated completion): kInsufficientResources. A refused
  // post changes nothing. Posting to a closed queue is allowed: the buffer is flushed by the
  // next PopCompletion (a DAT EP in the Disconnected state flushes what is posted to it).
  // `flags` (the post's completion flags) come back in the completion.
  Status Post(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments,
              DAT_COMPLETION_FLAGS flags = DAT_COMPLETION_DEFAULT_FLAG);

  // Device receive model: the transport refused the buffer just posted, so it is taken back as if
  // never posted. False (nothing changes) when the newest buffer is no longer only posted.
  bool Withdraw();

  // A new connection begins: its first Send will carry `first_msn`. Only when no buffer is
  // outstanding (kInvalidState otherwise); reopens a closed queue.
  Status Begin(std::uint32_t first_msn);

  // The first segment of message `msn` arrived (or a later one: the same buffer again).
  TakeResult Take(std::uint32_t msn, RecvBuffer& out);

  // Message `msn` is placed or failed. kInvalidParameter: not taken, or already placed (kArg1);
  // length above the buffer's capacity (kArg2).
  Status Place(std::uint32_t msn, std::uint64_t transferred_length, DAT_DTO_COMPLETION_STATUS status,
               const RecvNotes& notes = {});

  // The connection ended: every buffer now completes in posting order, placed ones with their
  // status, all others DAT_DTO_ERR_FLUSHED.
  void Close();

  // The next completion that may be generated now, in posting (MSN) order. Its `slot` is
  // meaningless here (nothing to reap).
  bool PopCompletion(RecvCompletion& out);

  // dat_ep_recv_query: buffers posted without a generated completion, and their span (equal:
  // every posted buffer is allocated and they are contiguous in MSN). Either may be null.
  void RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const;

  // Buffers posted and not completed (dat_ep_get_status's recv_idle is count() == 0).
  std::uint32_t count() const;

 private:
  enum class State : std::uint8_t { kPosted, kTaken, kPlaced };
  struct Entry {
    DAT_DTO_COOKIE cookie;
    RecvSegment* segments;
    std::uint64_t capacity;
    std::uint64_t length;
    std::uint32_t num_segments;
    DAT_DTO_COMPLETION_STATUS status;
    DAT_COMPLETION_FLAGS flags;
    RecvNotes notes;
    State state;
  };

  EpRecvQueue(std::uint32_t limit, std::uint32_t max_iov, std::uint32_t ring_size);

  Entry& At(std::uint32_t offset) { return entries_[(head_ + offset) & (ring_size_ - 1)]; }

  const std::uint32_t limit_;
  const std::uint32_t max_iov_;
  const std::uint32_t ring_size_;  // a power of two >= limit_
  std::unique_ptr<Entry[]> entries_;
  std::unique_ptr<RecvSegment[]> segment_storage_;

  mutable std::mutex mu_;
  std::uint32_t head_ = 0;      // the oldest buffer without a generated completion
  std::uint32_t count_ = 0;     // buffers without a generated completion
  std::uint32_t next_msn_ = 1;  // the MSN of the head buffer
  bool closed_ = false;
};

}  // namespace softdat::srq
