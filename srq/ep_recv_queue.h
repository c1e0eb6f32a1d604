// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The receive queue of an endpoint that does not use an SRQ: one ReceiveSource
// (receive_source.h). Its buffers are consumed in posting order: the k-th buffer posted since the
// connection began receives the k-th Send of the peer (MSN order), whatever order the messages'
// first segments arrive in. Completions are generated in MSN order too. A buffer counts as
// allocated to the EP from the moment it is posted (the dat_ep_recv_query rule for EPs without
// SRQ) until its completion is generated.
//
// Device model: every buffer is also posted to the device under recv_id = its posting number on
// this EP (1, 2, ... for the EP's life). An RC queue completes receives in posting order, so a
// completion naming recv_id is message recv_id minus the count at the connection's start.
//
// Preallocated at Create: nothing allocates afterwards; every call takes the one internal mutex,
// briefly. MT-safe.
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "base/mutex.h"
#include "base/status.h"
#include "srq/recv_buffer.h"
#include "srq/recv_completion.h"
#include "srq/receive_source.h"

namespace softdat::srq {

class EpRecvQueue final : public ReceiveSource {
 public:
  // The structural ceiling (rxe's max_qp_wr); the transport's memory-derived limit is lower on
  // small machines. A queue preallocates what its EP asks for, never this.
  static constexpr std::uint32_t kMaxRecvDtos = 1u << 20;
  static constexpr std::uint32_t kMaxRecvIov = 16;

  // At least `max_recv_dtos` buffers of up to `max_recv_iov` segments (0 allowed: zero-size
  // messages only). Out of range: kInvalidParameter, kParamAttributes.
  static Status Create(std::uint32_t max_recv_dtos, std::uint32_t max_recv_iov,
                       std::unique_ptr<EpRecvQueue>& out);

  std::uint32_t max_recv_dtos() const { return limit_; }
  std::uint32_t max_recv_iov() const { return max_iov_; }

  // ReceiveSource. Post: too many segments: kInvalidParameter, kParamNumSegments; full (max_recv_dtos
  // buffers without a generated completion): kInsufficientResources. Posting to a closed queue is
  // allowed: the buffer is flushed by the next PopCompletion (a DAT EP in the Disconnected state
  // flushes what is posted to it). `flags` (the post's completion flags) come back in the
  // completion.
  Status Post(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments, DAT_COMPLETION_FLAGS flags,
              Posted& out) override;
  void Withdraw() override;
  // A connection begins at MSN 1 (iWARP); BeginConnectionAt names another first MSN (MSNs wrap
  // at 2^32, which a test cannot wait for).
  Status BeginConnection() override { return BeginConnectionAt(1); }
  Status BeginConnectionAt(std::uint32_t first_msn);
  void Close() override;
  TakeResult TakeForMessage(std::uint32_t msn, RecvBuffer& out) override;
  // Under one lock, the copy too: callers keep `bytes` small (the lock is dat_ep_post_recv's).
  WholeResult TakeAndPlace(std::uint32_t msn, std::span<const std::uint8_t> bytes, const RecvNotes& notes) override;
  TakeResult TakeDeviceChosen(std::uint64_t recv_id, std::uint32_t& msn, RecvBuffer& out) override;
  TakeResult CompleteDeviceChosen(std::uint64_t recv_id, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                                  const RecvNotes& notes, std::uint32_t& msn) override;
  // Under one lock.
  TakeResult CompleteDeviceChosenAndPop(std::uint64_t recv_id, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                                        const RecvNotes& notes, RecvCompletion& out, bool& popped) override;
  Status Place(std::uint32_t msn, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
               const RecvNotes& notes) override;
  // Its `slot` is meaningless here (nothing to reap): `pool` is null.
  bool PopCompletion(RecvCompletion& out) override;
  // Buffers posted without a generated completion.
  std::uint32_t held() const override;
  // Equal counts: every posted buffer is allocated, and they are contiguous in MSN.
  void RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const override;
  bool announces_flush() const override { return false; }
  void StopWaking() override {}

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

    // A taken entry's completion is filled in: Place and CompleteDeviceChosen end here.
    void MarkPlaced(std::uint64_t placed_length, DAT_DTO_COMPLETION_STATUS placed_status, const RecvNotes& placed_notes) {
      length = placed_length;
      status = placed_status;
      notes = placed_notes;
      state = State::kPlaced;
    }
  };

  EpRecvQueue(std::uint32_t limit, std::uint32_t max_iov, std::uint32_t ring_size);

  Entry& At(std::uint32_t offset) { return entries_[(head_ + offset) & (ring_size_ - 1)]; }
  TakeResult TakeLocked(std::uint32_t msn, RecvBuffer& out);
  // TakeDeviceChosen with mu_ held.
  TakeResult TakeDeviceChosenLocked(std::uint64_t recv_id, std::uint32_t& msn, RecvBuffer& out);

  const std::uint32_t limit_;
  const std::uint32_t max_iov_;
  const std::uint32_t ring_size_;  // a power of two >= limit_
  std::unique_ptr<Entry[]> entries_;
  std::unique_ptr<RecvSegment[]> segment_storage_;

  mutable softdat::Mutex mu_;
  std::uint32_t head_ = 0;      // the oldest buffer without a generated completion
  std::uint32_t count_ = 0;     // buffers without a generated completion
  std::uint32_t next_msn_ = 1;  // the MSN of the head buffer
  bool closed_ = false;
  bool message_waiting_ = false;  // a TakeForMessage found no buffer since the last Post

  // Device model: recv_ids (posting numbers) of this EP.
  std::uint64_t recv_posted_ = 0;    // recv_id of the latest buffer posted
  std::uint64_t recv_base_ = 0;      // recv_id before this connection's MSN 1
  std::uint64_t recv_expected_ = 1;  // recv_id the next device completion should name
};

}  // namespace softdat::srq
