// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Where an endpoint's receive buffers come from: the one interface core/'s EP uses for every
// receive, whichever queue is behind it. Two implementations, chosen once when the EP is created
// (CreateReceiveSource):
//  - EpRecvQueue (ep_recv_queue.h): the EP's own receive queue (dat_ep_post_recv); the k-th
//    buffer posted since the connection began takes the k-th message (MSN order).
//  - SrqAccount (srq_account.h): the EP's account on a shared SrqPool; buffers are taken from
//    the SRQ in arrival order, the RNIC way, each held under its MSN until its completion.
//
// The shape is the shared-receive component libfabric keeps in util_srx: the receive source, not
// the transport or core, claims a buffer for an arriving message (TakeForMessage), or takes the
// one a device chose (TakeDeviceChosen), records its placement (Place), flushes on close (Close),
// hands completions out in MSN order (PopCompletion), and says what it holds (held, RecvQuery).
// It also owns the receive-side rules that count held buffers: the EP's soft and hard high
// watermarks (dat_ep_set_watermark) and, for an SRQ, the waiting of an EP that found no buffer.
//
// Threads: MT-safe. Take*, Place and PopCompletion come from the transport's progress context
// and core's delivery turn; Post, queries and watermark calls from consumer threads. Nothing here
// allocates after creation except BeginConnection on an SRQ (a new MSN window per connection).
#pragma once

#include <dat2/udat.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "base/mutex.h"
#include "base/status.h"
#include "srq/recv_buffer.h"
#include "srq/recv_completion.h"

namespace softdat::srq {

class BufferWaiter;
class SrqPool;

class ReceiveSource {
 public:
  enum class TakeResult : std::uint8_t {
    kTaken,     // `out` is the buffer of this message
    kNotReady,  // no buffer for it yet (receiver not ready); an SRQ account will wake its
                // BufferWaiter once one is posted
    kRefused,   // the message may not take a buffer: already placed or delivered, outside the
                // window, the connection closed, or (device model) the named buffer is not posted
  };

  // What a successful Post tells its caller.
  struct Posted {
    std::uint64_t recv_id = 0;  // device model: the name to post the buffer to the device under
    bool resumes = false;       // a message was waiting for a buffer: the transport may go on
  };

  // What TakeAndPlace did with a message that arrived whole.
  enum class WholeResult : std::uint8_t {
    kPlaced,    // taken, its bytes copied in, placed with DAT_DTO_SUCCESS
    kTooLong,   // taken, longer than the buffer: placed with DAT_DTO_ERR_LOCAL_LENGTH and no bytes
    kNotReady,  // as TakeForMessage's kNotReady: nothing changed
    kRefused,   // as TakeForMessage's kRefused: nothing changed
  };

  // Which high watermark a count of held buffers crossed (each at most once per arming).
  struct Crossing {
    bool soft = false;  // raise DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT for the EP
    bool hard = false;  // break the connection (DAT_CONNECTION_EVENT_BROKEN)
  };

  virtual ~ReceiveSource() = default;
  ReceiveSource(const ReceiveSource&) = delete;
  ReceiveSource& operator=(const ReceiveSource&) = delete;

  // Whether dat_ep_post_recv may post here at all, checked before its arguments: an SRQ account
  // refuses with a log line (kInvalidState, kEpNotReady): its buffers come from the SRQ.
  virtual Status CanPost() const { return Status::Ok(); }
  // dat_ep_post_recv with validated segments (refused as CanPost says). Errors change nothing.
  virtual Status Post(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments,
                      DAT_COMPLETION_FLAGS flags, Posted& out) = 0;
  // Device model: the device refused the buffer just posted; it is taken back as never posted.
  virtual void Withdraw() = 0;

  // A connection begins (Connect or Accept): fresh MSN accounting from MSN 1. kInvalidState when
  // the previous connection still holds buffers whose completions were not generated.
  virtual Status BeginConnection() = 0;
  // The connection ended: take no more buffers; PopCompletion now hands out every buffer held,
  // placed ones with their status, the others DAT_DTO_ERR_FLUSHED. Idempotent.
  virtual void Close() = 0;

  // Software model: the first bytes of message `msn` arrived (or a later segment of it: the same
  // buffer again).
  virtual TakeResult TakeForMessage(std::uint32_t msn, RecvBuffer& out) = 0;
  // Software model, TakeForMessage, the copy and Place as one step, for message `msn` whose
  // `bytes` arrived at once (a small Send in one piece): what an RNIC does with such a message.
  // The bytes are copied into the buffer before it counts as placed, so no completion is popped
  // before they are there. The base class takes the three steps; a source that can do it under
  // one lock does (the steps cost a lock each on every small message).
  virtual WholeResult TakeAndPlace(std::uint32_t msn, std::span<const std::uint8_t> bytes, const RecvNotes& notes);

  // Device model: the device completed the receive posted as `recv_id` (Posted::recv_id, or an
  // SRQ slot): take exactly that buffer for this connection's next message, whose MSN is set.
  virtual TakeResult TakeDeviceChosen(std::uint64_t recv_id, std::uint32_t& msn, RecvBuffer& out) = 0;

  // Device model, TakeDeviceChosen and Place as one step, what a device's receive completion
  // is: the buffer posted as `recv_id` took this connection's next message (`msn` is set), and
  // holds `length` bytes of it, at most its capacity (a device reports kLocalLength with what it
  // could place at most), with `status`. One lock where the source allows: it is on every
  // receive. kRefused as TakeDeviceChosen refuses; nothing changes then.
  virtual TakeResult CompleteDeviceChosen(std::uint64_t recv_id, std::uint64_t length,
                                          DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes,
                                          std::uint32_t& msn) = 0;

  // Device model, CompleteDeviceChosen and then PopCompletion, for a caller that holds its EP's
  // delivery turn (nobody else pops meanwhile): `popped` says whether `out` holds the next
  // completion to generate. A completion is a device's receive and its event at once when
  // nothing earlier waits (core's fused path: docs/PERFORMANCE.md, "On a device"). This default
  // takes the two steps; a source that can, takes one lock.
  virtual TakeResult CompleteDeviceChosenAndPop(std::uint64_t recv_id, std::uint64_t length,
                                                DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes,
                                                RecvCompletion& out, bool& popped);

  // Message `msn` is placed (or failed with `status`). kInvalidParameter when `msn` holds no
  // unplaced buffer or `length` exceeds it; nothing changes then.
  virtual Status Place(std::uint32_t msn, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                       const RecvNotes& notes) = 0;
  // The next completion that may be generated now, in MSN order.
  virtual bool PopCompletion(RecvCompletion& out) = 0;

  // Buffers allocated to the EP whose completion is not generated yet (dat_ep_get_status's
  // recv_idle is held() == 0; the high watermarks count these).
  virtual std::uint32_t held() const = 0;
  // dat_ep_recv_query: nbufs_allocated and bufs_alloc_span (either may be null).
  virtual void RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const = 0;

  // Whether the EP raises DAT_ASYNC_ERROR_EP_BROKEN once the flush of a connection is delivered:
  // an SRQ EP does (what OFED derives from IBV_EVENT_QP_LAST_WQE_REACHED; stock dtestsrq waits
  // for it), so its IA's async EVD needs one more entry per such EP.
  virtual bool announces_flush() const = 0;
  // No more BufferWaiter calls after this returns (the EP goes away).
  virtual void StopWaking() = 0;

  // dat_ep_set_watermark: DAT_WATERMARK_INFINITE disarms; other negative values are invalid
  // (kInvalidParameter, kParamSoftWatermark / kParamHardWatermark). Returns what the EP already
  // holds crosses, which the caller acts on at once ("an asynchronous event will be generated
  // immediately").
  Status SetHighWatermarks(DAT_COUNT soft, DAT_COUNT hard, bool connected, Crossing& crossed);
  // After a buffer was taken (or a connection established): which watermark the held count now
  // crosses. `connected`: a hard crossing only breaks a live connection.
  Crossing CheckHighWatermarks(bool connected);
  // Whether a high watermark could be crossed now (one is set and has not fired): when not,
  // CheckHighWatermarks returns at once, and its caller need not look at the connection either.
  bool watermarks_armed() const { return armed_.load(); }

 protected:
  ReceiveSource() = default;
  // Whether this source can count what its EP holds, and so honour finite high watermarks (a
  // device SRQ hands buffers to an EP unseen). kModelNotSupported with a log line when not.
  virtual Status HighWatermarksSupported() const { return Status::Ok(); }
  // A new connection: a hard watermark may trip again.
  void RearmHardWatermark();

 private:
  Crossing CrossingLocked(std::uint32_t held, bool connected);
  void UpdateArmedLocked();  // armed_ from the settings below

  softdat::Mutex watermark_mutex_;
  DAT_COUNT soft_high_watermark_ = DAT_WATERMARK_INFINITE;
  DAT_COUNT hard_high_watermark_ = DAT_WATERMARK_INFINITE;
  bool soft_armed_ = false;
  bool hard_tripped_ = false;
  // soft_armed_, or a finite hard watermark not tripped: read without the lock by every buffer
  // taken (an 8 B ping-pong's receive path took the lock and counted for nothing).
  std::atomic<bool> armed_{false};
};

// What an EP's receive source is made from: its own queue's size, or the SRQ it shares.
struct ReceiveSourceConfig {
  SrqPool* pool = nullptr;              // an SRQ: the EP's account on it (the sizes are unused)
  BufferWaiter* waiter = nullptr;       // SRQ: told when buffers arrive for a waiting message
  bool device_model = false;            // the transport's device picks buffers (TakeDeviceChosen)
  std::uint32_t max_recv_dtos = 0;      // own queue: at least 1
  std::uint32_t max_recv_iov = 0;
};

// The EP's own queue when `config.pool` is null, else its account on the pool. The EP attributes
// out of range: kInvalidParameter.
Status CreateReceiveSource(const ReceiveSourceConfig& config, std::unique_ptr<ReceiveSource>& out);

// The receive-side EP attributes a source of `config` accepts, within what the transport
// carries: its own queue holds 1..min(max_recv_work, EpRecvQueue::kMaxRecvDtos) buffers (0 asks
// for 1), an SRQ EP's max_recv_dtos is ignored (the SRQ holds its buffers); at most
// min(max_segments, kMaxRecvIov) segments; UNSIGNALLED receive completions together with
// EVD_THRESHOLD only on an SRQ EP (DAT: there UNSIGNALLED means "signal all"). Returns the name of
// the first attribute refused, or nullptr.
const char* RefusedReceiveAttribute(const ReceiveSourceConfig& config, DAT_COUNT max_recv_dtos,
                                    DAT_COUNT max_recv_iov, DAT_COMPLETION_FLAGS recv_completion_flags,
                                    std::uint32_t max_recv_work, std::uint32_t max_segments);

}  // namespace softdat::srq
