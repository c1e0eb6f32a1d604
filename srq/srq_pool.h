// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The SRQ's buffer store and every rule dat_srq_* puts on it: posting checks, the one-shot low
// watermark, resize without losing a buffer, who holds which buffer under which MSN, completion
// order per connection, flush on disconnect, dat_ep_recv_query's snapshot, and which endpoints
// wait for a buffer (in arrival order; one is woken per buffer posted for it).
//
// Transport-independent: it knows nothing of handles, LMRs or EVDs. core/ validates segments
// before Post and turns the completions and watermark events it gets back into DAT events. Each
// EP reaches the pool through its SrqAccount (srq_account.h), one MsnWindow per connection.
//
// Device receive model (AttachDevice): every posted buffer is also posted to the device's queue
// under its slot number, the device picks which buffer a message takes (TakePosted), the low
// watermark is the device's limit event (armed here, one event per arming as in software), and a
// resize that grows past the device queue asks the device first.
//
// A buffer's life: free -> Post -> on the SRQ -> Take -> held by an EP -> Place (or Close) ->
// PopCompletion: completion generated -> Reaped -> free. "Outstanding" (what dat_srq_resize and
// the queue limit count) is every state but free.
//
// Everything is allocated at Create (and by a growing Resize, and AddUser): Post, Take, Place,
// PopCompletion and Reaped never allocate and block only on the internal mutex, held briefly.
// MT-safe (dat_srq_create: MT-Level Safe).
#pragma once

#include <dat2/udat.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "srq/buffer_waiter.h"
#include "srq/device_queue.h"
#include "srq/msn_window.h"
#include "srq/low_watermark_listener.h"
#include "srq/recv_buffer.h"
#include "srq/recv_completion.h"

namespace softdat::srq {

class SrqPool {
 public:
  // Largest queue an SRQ may have (requested or resized), and most segments per buffer.
  static constexpr std::uint32_t kMaxRecvDtos = 1u << 20;
  static constexpr std::uint32_t kMaxRecvIov = 16;

  // dat_srq_query's counts, taken under one lock.
  struct Snapshot {
    std::uint32_t max_recv_dtos;  // actual queue size (a power of two)
    std::uint32_t max_recv_iov;   // actual segments per buffer
    std::uint32_t low_watermark;  // the value set, armed or not (0: DAT_SRQ_LW_DEFAULT)
    std::uint32_t available_dto_count;    // buffers on the SRQ
    std::uint32_t outstanding_dto_count;  // on the SRQ + held by EPs + completed, not reaped
  };

  enum class TakeResult : std::uint8_t {
    kTaken,    // `out` is the buffer for this MSN (taken now, or already held by it)
    kEmpty,       // no buffer on the SRQ: receiver not ready, keep the message waiting
    kWindowFull,  // the account's window holds completions not generated yet: keep the message
                  // waiting until its EP's delivery pass pops some (not a buffer wait)
    kRefused,     // this MSN may not take a buffer: already placed or delivered, the account is
                  // flushed or not attached to this pool
  };

  // Queue size at least `max_recv_dtos` (rounded up to a power of two) and `max_recv_iov`
  // segments per buffer (0 is allowed: zero-size messages only; reported as 1). Out-of-range
  // values, including negative DAT_COUNTs converted by the caller, give kInvalidParameter with
  // kParamAttributes (srq_attr). `listener` may be null; it must outlive the pool.
  static Status Create(std::uint32_t max_recv_dtos, std::uint32_t max_recv_iov,
                       LowWatermarkListener* listener, std::unique_ptr<SrqPool>& out);

  SrqPool(const SrqPool&) = delete;
  SrqPool& operator=(const SrqPool&) = delete;
  ~SrqPool();

  // Replaces the listener (null: none). A call already past the lock may still reach the old one.
  void SetListener(LowWatermarkListener* listener);

  // Device receive model: from now on buffers are posted to `device` too (see above). Once, right
  // after Create, before any post; `device` must outlive the pool's use of it.
  void AttachDevice(DeviceQueue* device);

  // dat_srq_post_recv, with segments already validated. More segments than max_recv_iov:
  // kInvalidParameter, kParamNumSegments. Queue full, counting every outstanding buffer:
  // kInsufficientResources, kResourceSrq. A refused post changes nothing. Valid in every state.
  // `slot`, if given, gets the pool's name for the buffer (what a device receive is posted as).
  // Wakes the oldest waiting endpoint, if no woken one is already on its way to this buffer
  // (software model); posts to the device (device model), and a buffer the device refuses is
  // withdrawn and its error returned.
  Status Post(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments,
              std::uint32_t* slot = nullptr);

  // Device receive model: the device refused to take buffer `slot` just posted here, so it goes
  // back to free as if never posted. Not a posted buffer: kInvalidParameter.
  Status Withdraw(std::uint32_t slot);

  // dat_srq_set_lw: negative or above the actual queue size: kInvalidParameter, kParamLowWatermark.
  // DAT_SRQ_LW_DEFAULT (0) disarms. Otherwise arms one event for the first time the number of
  // buffers on the SRQ is below `low_watermark`, delivered before returning if it already is.
  // Device model: arms the device's limit event instead (its error if the device refuses).
  Status SetLowWatermark(DAT_COUNT low_watermark);

  // Device model: the device's limit event fired. Delivers the low-watermark event if one is
  // armed (and disarms); otherwise it is stale and ignored.
  void OnDeviceLimitReached();

  // The rules of Resize without resizing: kOk when Resize(new_max) would be allowed now. A
  // device SRQ is grown only once this says yes, so that a refused resize changes nothing.
  Status CheckResize(std::uint32_t new_max) const;

  // dat_srq_resize. 0 or above kMaxRecvDtos: kInvalidParameter, kParamSrqMaxRecvDto. Below the outstanding
  // count or below the low watermark: kInvalidState, kSrqInUse (no state subtype fits better;
  // both mean "what the SRQ holds or promises forbids this size"), and nothing changes. Device
  // model: growing past the device queue grows it first (its error, and nothing changes, if it
  // cannot).
  // Growing allocates (kInsufficientResources, kMemory if it cannot). Either way the queue size
  // becomes `new_max` rounded up to a power of two. Shrinking only lowers the limit Post enforces:
  // memory stays allocated, so no buffer moves, every held buffer's segments stay where they are,
  // and growing back to the largest size ever reached allocates nothing.
  Status Resize(std::uint32_t new_max);

  // dat_srq_query's counts.
  Snapshot Query() const;

  // An EP starts or stops using this SRQ (its SrqAccount is made or destroyed); dat_srq_free is
  // refused while user_count() > 0. AddUser reserves the waiting list's room for one more
  // endpoint, so waiting never allocates (kInsufficientResources, kMemory if it cannot).
  Status AddUser();
  void RemoveUser();
  std::uint32_t user_count() const;
  // Takes `waiter` off the waiting list, or hands its wake-up to the next waiter if it was woken
  // and never came back for the buffer; returns only once no wake-up of it is running.
  void CancelWait(BufferWaiter* waiter);

  // A connection's MSN window starts or stops taking buffers from this SRQ.
  // Attach: already attached anywhere: kInvalidParameter. Detach: not attached here:
  // kInvalidParameter; still holds buffers (flush first): kInvalidState, kEpCompletionPending.
  Status Attach(MsnWindow& ep);
  Status Detach(MsnWindow& ep);

  // The first segment of message `msn` arrived on `ep`: give it the oldest posted buffer. May fire
  // the low watermark. kEmpty with a `waiter`: it joins the waiting endpoints and is told once
  // when a buffer is posted for it (the check and the registration are one step, so no post can
  // slip between them); a woken waiter that finds the buffer gone to another message goes back
  // to the head of the line.
  TakeResult Take(MsnWindow& ep, std::uint32_t msn, RecvBuffer& out, BufferWaiter* waiter = nullptr);

  // Device receive model: the device gave buffer `slot` to message `msn` of `ep` (the device,
  // not the pool, chose it, usually but not necessarily the oldest). kRefused when `slot` is not
  // on the SRQ or `msn` may not take a buffer. Never fires the low watermark: the device's limit
  // event does.
  TakeResult TakePosted(MsnWindow& ep, std::uint32_t msn, std::uint32_t slot,
                        RecvBuffer& out);
  // TakePosted and Place in one step under one lock, what a device's receive completion is:
  // `length` is clamped to the buffer's capacity (a device reports kLocalLength with what it
  // could place at most). kRefused as TakePosted refuses; nothing changes then.
  TakeResult CompletePosted(MsnWindow& ep, std::uint32_t msn, std::uint32_t slot, std::uint64_t length,
                            DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes);
  // CompletePosted, then PopCompletion, under the same lock, for the holder of the EP's delivery
  // turn: `popped` says whether `out` holds the next completion to generate.
  TakeResult CompletePostedAndPop(MsnWindow& ep, std::uint32_t msn, std::uint32_t slot, std::uint64_t length,
                                  DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes, RecvCompletion& out,
                                  bool& popped);

  // Message `msn` on `ep` is fully placed (or failed with `status`). Its completion becomes
  // deliverable once every earlier MSN's is (PopCompletion). Errors change nothing, all kInvalidParameter:
  // `ep` not attached here, `msn` not holding an unplaced buffer, length above the buffer's
  // capacity.
  Status Place(MsnWindow& ep, std::uint32_t msn, std::uint64_t transferred_length,
               DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes = {});

  // The EP was disconnected: it takes no more buffers, and PopCompletion now hands out every
  // buffer it holds, in MSN order: placed ones with their status, the others
  // DAT_DTO_ERR_FLUSHED. Buffers still on the SRQ stay for the other EPs. kInvalidParameter
  // when `ep` is not attached here. `waiter`, the EP's, stops waiting: a wake-up it had
  // not used goes to the next waiter.
  Status Close(MsnWindow& ep, BufferWaiter* waiter = nullptr);

  // The next completion of `ep` that may be generated now, in MSN order (none while an earlier
  // MSN is still open, unless the account is closed). One at a time, so the caller can hand each
  // to an EVD without holding any lock of the pool.
  bool PopCompletion(MsnWindow& ep, RecvCompletion& out);

  // The consumer dequeued the completion of `slot` from its recv_evd (or it was dropped by an
  // overflowed EVD): the buffer stops being outstanding. A slot without a generated completion:
  // kInvalidParameter.
  Status Reaped(std::uint32_t slot);

  // dat_ep_recv_query for `ep` (not attached here: kInvalidParameter): buffers held
  // without a generated completion, and their MSN span; either pointer may be null.
  Status RecvQuery(const MsnWindow& ep, DAT_COUNT* nbufs_allocated,
                   DAT_COUNT* bufs_alloc_span) const;

 private:
  enum class SlotState : std::uint8_t { kFree, kPosted, kHeld, kCompleted };
  struct Slot {
    DAT_DTO_COOKIE cookie;
    RecvSegment* segments;  // max_iov_ entries in a segment chunk; never moves
    std::uint64_t capacity;
    std::uint32_t num_segments;
    SlotState state;
  };
  // Segment storage added by one Create or growing Resize; older chunks stay linked behind.
  struct SegmentChunk {
    std::unique_ptr<RecvSegment[]> segments;
    std::unique_ptr<SegmentChunk> older;
  };
  struct Growth;

  SrqPool(std::uint32_t limit, std::uint32_t max_iov, LowWatermarkListener* listener);

  // Everything named *Locked runs under mu_.
  Status PostLocked(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments, std::uint32_t& slot);
  Status CheckResizeLocked(std::uint32_t new_max) const;
  void CommitGrowthLocked(Growth& growth);
  std::uint32_t OutstandingLocked() const {
    return static_cast<std::uint32_t>(slots_.size()) - free_count_;
  }
  std::uint32_t AvailableLocked() const { return posted_count_; }
  // Disarms and returns the listener when the watermark is armed and the SRQ is below it.
  LowWatermarkListener* LowWatermarkCrossedLocked();
  RecvCompletion CompletionLocked(const MsnWindow::Ready& ready);
  // Take's buffer decision; `notify` gets the listener if the low watermark fired.
  TakeResult TakeLocked(MsnWindow& ep, std::uint32_t msn, RecvBuffer& out, LowWatermarkListener*& notify);
  TakeResult TakePostedLocked(MsnWindow& ep, std::uint32_t msn, std::uint32_t slot, RecvBuffer& out);
  // Takes posted slot `index` out of the FIFO wherever it is (the oldest in practice).
  bool RemovePostedLocked(std::uint32_t index);
  // The waiting endpoints, oldest first, under mu_. Settle: not queued and no wake-up pending.
  void EnqueueLocked(BufferWaiter* waiter, bool front);
  void SettleLocked(BufferWaiter* waiter);
  bool WakeDueLocked() const { return wait_head_ != nullptr && woken_ < posted_count_; }
  // Wakes the oldest waiters while buffers on the SRQ outnumber the wake-ups still pending.
  // Takes wake_mutex_ then mu_; call with neither held.
  void WakeWaiters();
  Status SetDeviceLowWatermark(std::uint32_t low_watermark);
  Status GrowDevice(std::uint32_t new_max);

  const std::uint32_t max_iov_;
  mutable softdat::Mutex mu_;
  std::uint32_t limit_;  // the queue size: most outstanding buffers
  std::uint32_t low_watermark_ = 0;
  bool low_watermark_armed_ = false;
  LowWatermarkListener* listener_;
  DeviceQueue* device_ = nullptr;  // set once, before any post
  softdat::Mutex device_mutex_;        // serializes device resizes
  // The slab: slots_.size() is a power of two >= limit_; it only grows.
  std::vector<Slot> slots_;
  std::unique_ptr<SegmentChunk> chunks_;
  // Free slot indices, a stack of free_count_ entries (capacity slots_.size()).
  std::vector<std::uint32_t> free_;
  std::uint32_t free_count_ = 0;
  // Posted slot indices in FIFO order: a ring of slots_.size() entries.
  std::vector<std::uint32_t> posted_;
  std::uint32_t posted_head_ = 0;  // index of the oldest, modulo the ring size
  std::uint32_t posted_count_ = 0;

  // Endpoints using the SRQ and those waiting for a buffer. Receiver-not-ready path only; the
  // queue is intrusive and waking_ has room for every user (AddUser), so waiting never allocates.
  // Lock order: wake_mutex_, then mu_. A waker holds wake_mutex_ while it calls the waiters it
  // took off the queue, so CancelWait (which takes it too) never returns while its waiter runs.
  std::uint32_t users_ = 0;
  BufferWaiter* wait_head_ = nullptr;  // guarded by mu_
  BufferWaiter* wait_tail_ = nullptr;
  std::uint32_t woken_ = 0;             // waiters told of a buffer, not yet back (mu_)
  std::vector<BufferWaiter*> waking_;   // guarded by wake_mutex_
  softdat::Mutex wake_mutex_;
};

}  // namespace softdat::srq
