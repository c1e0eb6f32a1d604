// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The SRQ buffer store: slab of slots, posted FIFO ring, free stack, watermark, resize, and the
// pool side of taking, completing, flushing and reaping buffers.
#include "srq/srq_pool.h"

#include <algorithm>
#include <bit>
#include <new>
#include <utility>

#include "base/log.h"

namespace softdat::srq {

// Everything a growing slab needs, allocated without the lock held so that posts and takes are
// not stalled behind page faults; committed under the lock with no allocation.
struct SrqPool::Growth {
  std::vector<Slot> slots;
  std::vector<std::uint32_t> free;
  std::vector<std::uint32_t> posted;
  std::unique_ptr<SegmentChunk> chunk;

  bool Allocate(std::uint32_t old_size, std::uint32_t new_size, std::uint32_t max_iov) {
    try {
      slots.resize(new_size);
      free.resize(new_size);
      posted.resize(new_size);
      chunk = std::make_unique<SegmentChunk>();
      // Default-initialized: the segments are written by Post, so untouched pages stay untouched.
      chunk->segments.reset(
          new RecvSegment[static_cast<std::size_t>(new_size - old_size) * max_iov]);
    } catch (const std::bad_alloc&) {
      return false;
    }
    return true;
  }
};

Status SrqPool::Create(std::uint32_t max_recv_dtos, std::uint32_t max_recv_iov,
                       LowWatermarkListener* listener, std::unique_ptr<SrqPool>& out) {
  if (max_recv_dtos == 0 || max_recv_dtos > kMaxRecvDtos || max_recv_iov > kMaxRecvIov)
    return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  const std::uint32_t size = std::bit_ceil(max_recv_dtos);
  // A buffer of no segments still receives zero-size messages; keep one segment slot anyway so
  // every slot has storage and the reported max_recv_iov (at least what was asked) is honest.
  const std::uint32_t max_iov = std::max<std::uint32_t>(max_recv_iov, 1);
  std::unique_ptr<SrqPool> pool;
  Growth growth;
  try {
    pool.reset(new SrqPool(size, max_iov, listener));
  } catch (const std::bad_alloc&) {
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  if (!growth.Allocate(0, size, max_iov))
    return Status(Code::kInsufficientResources, Detail::kMemory);
  {
    std::lock_guard lock(pool->mu_);
    pool->CommitGrowthLocked(growth);
  }
  out = std::move(pool);
  return Status::Ok();
}

SrqPool::SrqPool(std::uint32_t limit, std::uint32_t max_iov, LowWatermarkListener* listener)
    : max_iov_(max_iov), limit_(limit), listener_(listener) {}

SrqPool::~SrqPool() = default;

void SrqPool::SetListener(LowWatermarkListener* listener) {
  std::lock_guard lock(mu_);
  listener_ = listener;
}

void SrqPool::AttachDevice(DeviceQueue* device) {
  std::lock_guard lock(mu_);
  device_ = device;
}

void SrqPool::CommitGrowthLocked(Growth& growth) {
  const auto old_size = static_cast<std::uint32_t>(slots_.size());
  const auto new_size = static_cast<std::uint32_t>(growth.slots.size());
  std::copy(slots_.begin(), slots_.end(), growth.slots.begin());
  for (std::uint32_t i = old_size; i < new_size; ++i) {
    RecvSegment* segments = &growth.chunk->segments[std::size_t{i - old_size} * max_iov_];
    growth.slots[i] = Slot{DAT_DTO_COOKIE{}, segments, 0, 0, SlotState::kFree};
  }
  std::copy(free_.begin(), free_.begin() + free_count_, growth.free.begin());
  // Lowest new index on top of the stack: not needed for correctness, just tidy to debug.
  for (std::uint32_t i = new_size; i > old_size; --i) growth.free[free_count_++] = i - 1;
  // Re-lay the posted ring oldest-first so posting order survives the resize.
  for (std::uint32_t k = 0; k < posted_count_; ++k)
    growth.posted[k] = posted_[(posted_head_ + k) & (old_size - 1)];
  posted_head_ = 0;
  slots_.swap(growth.slots);
  free_.swap(growth.free);
  posted_.swap(growth.posted);
  growth.chunk->older = std::move(chunks_);
  chunks_ = std::move(growth.chunk);
}

Status SrqPool::PostLocked(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments,
                           std::uint32_t& slot_out) {
  if (segments.size() > max_iov_) return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
  if (OutstandingLocked() >= limit_)
    return Status(Code::kInsufficientResources, Detail::kResourceSrq);
  const std::uint32_t index = free_[--free_count_];
  Slot& slot = slots_[index];
  std::uint64_t capacity = 0;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    slot.segments[i] = segments[i];
    capacity += segments[i].length;
  }
  slot.cookie = cookie;
  slot.capacity = capacity;
  slot.num_segments = static_cast<std::uint32_t>(segments.size());
  slot.state = SlotState::kPosted;
  const auto mask = static_cast<std::uint32_t>(posted_.size()) - 1;
  posted_[(posted_head_ + posted_count_) & mask] = index;
  ++posted_count_;
  slot_out = index;
  return Status::Ok();
}

Status SrqPool::Post(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments,
                     std::uint32_t* slot_out) {
  std::uint32_t slot = 0;
  bool wake = false;
  DeviceQueue* device = nullptr;
  {
    std::lock_guard lock(mu_);
    if (Status status = PostLocked(cookie, segments, slot); !status.ok()) return status;
    wake = WakeDueLocked();
    device = device_;
  }
  if (device != nullptr) {
    // The pool first: it enforces the queue limit, and a completion racing the post finds the slot.
    if (Status status = device->PostRecv(slot, segments); !status.ok()) {
      (void)Withdraw(slot);
      return status;
    }
  }
  if (slot_out != nullptr) *slot_out = slot;
  if (wake) WakeWaiters();
  return Status::Ok();
}

void SrqPool::EnqueueLocked(BufferWaiter* waiter, bool front) {
  waiter->wait_state_ = BufferWaiter::WaitState::kQueued;
  waiter->prev_ = front ? nullptr : wait_tail_;
  waiter->next_ = front ? wait_head_ : nullptr;
  (waiter->prev_ != nullptr ? waiter->prev_->next_ : wait_head_) = waiter;
  (waiter->next_ != nullptr ? waiter->next_->prev_ : wait_tail_) = waiter;
}

void SrqPool::SettleLocked(BufferWaiter* waiter) {
  switch (waiter->wait_state_) {
    case BufferWaiter::WaitState::kIdle:
      return;
    case BufferWaiter::WaitState::kQueued:
      (waiter->prev_ != nullptr ? waiter->prev_->next_ : wait_head_) = waiter->next_;
      (waiter->next_ != nullptr ? waiter->next_->prev_ : wait_tail_) = waiter->prev_;
      waiter->prev_ = waiter->next_ = nullptr;
      break;
    case BufferWaiter::WaitState::kWoken:
      --woken_;
      break;
  }
  waiter->wait_state_ = BufferWaiter::WaitState::kIdle;
}

void SrqPool::WakeWaiters() {
  std::lock_guard wake(wake_mutex_);
  {
    std::lock_guard lock(mu_);
    // One waiter per buffer nobody is on the way to yet; waking_ has room for every user.
    while (WakeDueLocked()) {
      BufferWaiter* waiter = wait_head_;
      SettleLocked(waiter);
      waiter->wait_state_ = BufferWaiter::WaitState::kWoken;
      ++woken_;
      waking_.push_back(waiter);
    }
  }
  for (BufferWaiter* waiter : waking_) waiter->OnBuffersPosted();
  waking_.clear();
}

bool SrqPool::RemovePostedLocked(std::uint32_t index) {
  const auto mask = static_cast<std::uint32_t>(posted_.size()) - 1;
  std::uint32_t at = 0;
  while (at < posted_count_ && posted_[(posted_head_ + at) & mask] != index) ++at;
  if (at == posted_count_) return false;
  if (at == 0) {
    posted_head_ = (posted_head_ + 1) & mask;
  } else {
    // Out of FIFO order: close the gap so the others keep their posting order.
    for (std::uint32_t k = at; k + 1 < posted_count_; ++k)
      posted_[(posted_head_ + k) & mask] = posted_[(posted_head_ + k + 1) & mask];
  }
  --posted_count_;
  return true;
}

Status SrqPool::Withdraw(std::uint32_t slot) {
  std::lock_guard lock(mu_);
  if (slot >= slots_.size() || slots_[slot].state != SlotState::kPosted || !RemovePostedLocked(slot))
    return Status(Code::kInvalidParameter, Detail::kNone);
  slots_[slot].state = SlotState::kFree;
  free_[free_count_++] = slot;
  return Status::Ok();
}

LowWatermarkListener* SrqPool::LowWatermarkCrossedLocked() {
  // "Below" the watermark: strictly fewer buffers on the SRQ than its value.
  if (!low_watermark_armed_ || AvailableLocked() >= low_watermark_) return nullptr;
  low_watermark_armed_ = false;  // one event per arming
  return listener_;
}

Status SrqPool::SetLowWatermark(DAT_COUNT low_watermark) {
  if (low_watermark < 0) return Status(Code::kInvalidParameter, Detail::kParamLowWatermark);
  if (device_ != nullptr && !device_->has_limit_event()) {
    SOFTDAT_LOG(kWarn, "dat_srq_set_lw: this device has no SRQ limit event");
    return Status(Code::kModelNotSupported);
  }
  LowWatermarkListener* notify = nullptr;
  {
    std::lock_guard lock(mu_);
    if (static_cast<std::uint32_t>(low_watermark) > limit_)
      return Status(Code::kInvalidParameter, Detail::kParamLowWatermark);
    low_watermark_ = static_cast<std::uint32_t>(low_watermark);
    low_watermark_armed_ = low_watermark != DAT_SRQ_LW_DEFAULT;
    if (device_ == nullptr) {
      // The man page's USAGE words this the other way round ("if the new low watermark value is
      // below the current number"); its DESCRIPTION is the rule: fire when the SRQ is below it.
      notify = LowWatermarkCrossedLocked();
    }
  }
  if (device_ != nullptr) return SetDeviceLowWatermark(static_cast<std::uint32_t>(low_watermark));
  if (notify != nullptr) notify->OnLowWatermark();
  return Status::Ok();
}

Status SrqPool::SetDeviceLowWatermark(std::uint32_t limit) {
  bool below = false;
  {
    std::lock_guard lock(mu_);
    // The pool counts buffers the device took but has not completed as still on the SRQ, so if
    // even its count is below the watermark the device's is too: fire now, as the software path
    // does, and leave the device disarmed.
    below = limit != 0 && AvailableLocked() < limit;
    if (below) low_watermark_armed_ = false;
  }
  const Status armed = device_->ArmLimit(below ? 0 : limit);
  if (!armed.ok()) {
    {
      std::lock_guard lock(mu_);
      low_watermark_armed_ = false;
    }
    if (limit == 0 || below || armed.code() != Code::kInvalidParameter) return armed;
    // The value is in range (checked above), so the device refuses because it already holds
    // fewer buffers than that (rxe: EINVAL): the event is due now.
    SOFTDAT_LOG(kInfo, "dat_srq_set_lw: the device already holds fewer than %u buffers", limit);
    below = true;
  }
  if (below) {
    LowWatermarkListener* notify = nullptr;
    {
      std::lock_guard lock(mu_);
      notify = listener_;
    }
    if (notify != nullptr) notify->OnLowWatermark();
  }
  return Status::Ok();
}

void SrqPool::OnDeviceLimitReached() {
  LowWatermarkListener* notify = nullptr;
  {
    std::lock_guard lock(mu_);
    if (!low_watermark_armed_) {
      SOFTDAT_LOG(kInfo, "SRQ pool %p: device limit event without an armed low watermark, ignored",
                  static_cast<void*>(this));
      return;
    }
    low_watermark_armed_ = false;  // one event per arming, whatever the device says
    notify = listener_;
  }
  if (notify != nullptr) notify->OnLowWatermark();
}

Status SrqPool::CheckResizeLocked(std::uint32_t new_max) const {
  if (new_max < OutstandingLocked() || new_max < low_watermark_)
    return Status(Code::kInvalidState, Detail::kSrqInUse);
  return Status::Ok();
}

Status SrqPool::CheckResize(std::uint32_t new_max) const {
  if (new_max == 0 || new_max > kMaxRecvDtos) return Status(Code::kInvalidParameter, Detail::kParamSrqMaxRecvDto);
  std::lock_guard lock(mu_);
  return CheckResizeLocked(new_max);
}

Status SrqPool::GrowDevice(std::uint32_t new_max) {
  // srq/'s rules first (outstanding buffers, low watermark): a refused resize touches no device.
  if (Status status = CheckResize(new_max); !status.ok()) return status;
  // As large as the pool, but never past what the device offers (the pool rounds sizes up to a
  // power of two; the device's maximum need not be one, and the consumer asked for no more).
  const std::uint32_t size = std::min(std::bit_ceil(new_max), device_->max_size());
  // Serialized, so the device queue only grows. Shrinking leaves it as it is: the pool's limit is
  // what keeps posts within the new size.
  std::lock_guard lock(device_mutex_);
  if (size > device_->size()) return device_->Grow(size);
  return Status::Ok();
}

Status SrqPool::Resize(std::uint32_t new_max) {
  if (new_max == 0 || new_max > kMaxRecvDtos) return Status(Code::kInvalidParameter, Detail::kParamSrqMaxRecvDto);
  if (device_ != nullptr) {
    if (Status status = GrowDevice(new_max); !status.ok()) return status;
  }
  const std::uint32_t new_size = std::bit_ceil(new_max);
  for (;;) {
    std::uint32_t slab_size;
    {
      std::lock_guard lock(mu_);
      if (Status status = CheckResizeLocked(new_max); !status.ok()) return status;
      slab_size = static_cast<std::uint32_t>(slots_.size());
      if (new_size <= slab_size) {  // shrink, or grow within memory already there
        limit_ = new_size;
        return Status::Ok();
      }
    }
    Growth growth;  // declared before the lock below, so the old vectors are freed after unlock
    if (!growth.Allocate(slab_size, new_size, max_iov_))
      return Status(Code::kInsufficientResources, Detail::kMemory);
    std::lock_guard lock(mu_);
    if (slots_.size() != slab_size) continue;  // a concurrent Resize changed the slab: redo
    if (Status status = CheckResizeLocked(new_max); !status.ok()) return status;
    CommitGrowthLocked(growth);
    limit_ = new_size;
    return Status::Ok();
  }
}

SrqPool::Snapshot SrqPool::Query() const {
  std::lock_guard lock(mu_);
  return Snapshot{limit_, max_iov_, low_watermark_, AvailableLocked(), OutstandingLocked()};
}

Status SrqPool::Attach(MsnWindow& ep) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != nullptr) return Status(Code::kInvalidParameter, Detail::kNone);
  ep.pool_ = this;
  return Status::Ok();
}

Status SrqPool::Detach(MsnWindow& ep) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != this) return Status(Code::kInvalidParameter, Detail::kNone);
  // Detaching now would leave those buffers outstanding forever.
  if (ep.held() > 0) return Status(Code::kInvalidState, Detail::kEpCompletionPending);
  ep.pool_ = nullptr;
  return Status::Ok();
}

Status SrqPool::AddUser() {
  std::lock_guard wake(wake_mutex_);
  std::lock_guard lock(mu_);
  try {
    // Doubling, so that 10,000 EPs joining one by one do not copy the list 10,000 times.
    if (waking_.capacity() < users_ + 1) waking_.reserve(std::max<std::size_t>(2 * waking_.capacity(), users_ + 1));
  } catch (const std::bad_alloc&) {
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  ++users_;
  return Status::Ok();
}

void SrqPool::RemoveUser() {
  std::lock_guard lock(mu_);
  if (users_ > 0) --users_;
}

void SrqPool::CancelWait(BufferWaiter* waiter) {
  bool pass_on = false;
  {
    std::lock_guard wake(wake_mutex_);  // waits out a wake-up that may be calling `waiter`
    std::lock_guard lock(mu_);
    SettleLocked(waiter);
    pass_on = WakeDueLocked();
  }
  if (pass_on) WakeWaiters();
}

std::uint32_t SrqPool::user_count() const {
  std::lock_guard lock(mu_);
  return users_;
}

SrqPool::TakeResult SrqPool::Take(MsnWindow& ep, std::uint32_t msn, RecvBuffer& out, BufferWaiter* waiter) {
  LowWatermarkListener* notify = nullptr;
  TakeResult result = TakeResult::kRefused;
  bool pass_on = false;
  {
    std::lock_guard lock(mu_);
    using WaitState = BufferWaiter::WaitState;
    const WaitState before = waiter != nullptr ? waiter->wait_state_ : WaitState::kIdle;
    result = TakeLocked(ep, msn, out, notify);
    if (waiter != nullptr) {
      if (result != TakeResult::kEmpty) {
        SettleLocked(waiter);  // took a buffer, or may not: it waits no more
      } else if (before == WaitState::kWoken) {
        // Another message took the buffer first: the woken waiter goes back to the head.
        SettleLocked(waiter);
        EnqueueLocked(waiter, true);
      } else if (before == WaitState::kIdle) {
        EnqueueLocked(waiter, false);
      }  // already queued: it keeps its place
    }
    // A woken waiter that takes nothing leaves its buffer to the next one.
    pass_on = before == WaitState::kWoken && (result == TakeResult::kRefused || result == TakeResult::kWindowFull) &&
              WakeDueLocked();
  }
  if (pass_on) WakeWaiters();
  if (notify != nullptr) notify->OnLowWatermark();
  return result;
}

SrqPool::TakeResult SrqPool::TakeLocked(MsnWindow& ep, std::uint32_t msn, RecvBuffer& out,
                                        LowWatermarkListener*& notify) {
  // The device picks buffers in the device model; a software take would race it.
  if (ep.pool_ != this || device_ != nullptr) return TakeResult::kRefused;
  std::uint32_t index = 0;
  switch (ep.Find(msn, index)) {
    case MsnWindow::Lookup::kRefused: return TakeResult::kRefused;
    case MsnWindow::Lookup::kFull: return TakeResult::kWindowFull;
    case MsnWindow::Lookup::kHeld: break;  // a later segment of the same message
    case MsnWindow::Lookup::kFree:
      if (posted_count_ == 0) return TakeResult::kEmpty;
      index = posted_[posted_head_];
      posted_head_ = (posted_head_ + 1) & (static_cast<std::uint32_t>(posted_.size()) - 1);
      --posted_count_;
      slots_[index].state = SlotState::kHeld;
      ep.Allocate(msn, index);
      notify = LowWatermarkCrossedLocked();
      break;
  }
  const Slot& slot = slots_[index];
  out = RecvBuffer{slot.cookie, slot.num_segments, slot.segments, slot.capacity, index};
  return TakeResult::kTaken;
}

SrqPool::TakeResult SrqPool::TakePosted(MsnWindow& ep, std::uint32_t msn,
                                        std::uint32_t slot, RecvBuffer& out) {
  std::lock_guard lock(mu_);
  return TakePostedLocked(ep, msn, slot, out);
}

SrqPool::TakeResult SrqPool::CompletePosted(MsnWindow& ep, std::uint32_t msn, std::uint32_t slot,
                                            std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                                            const RecvNotes& notes) {
  std::lock_guard lock(mu_);
  RecvBuffer taken;
  if (const TakeResult result = TakePostedLocked(ep, msn, slot, taken); result != TakeResult::kTaken) return result;
  ep.Place(msn, std::min(length, taken.capacity), status, notes);
  return TakeResult::kTaken;
}

SrqPool::TakeResult SrqPool::CompletePostedAndPop(MsnWindow& ep, std::uint32_t msn, std::uint32_t slot,
                                                  std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                                                  const RecvNotes& notes, RecvCompletion& out, bool& popped) {
  std::lock_guard lock(mu_);
  popped = false;
  RecvBuffer taken;
  if (const TakeResult result = TakePostedLocked(ep, msn, slot, taken); result != TakeResult::kTaken) return result;
  ep.Place(msn, std::min(length, taken.capacity), status, notes);
  MsnWindow::Ready ready;
  if (ep.PopNext(ready)) {
    out = CompletionLocked(ready);
    popped = true;
  }
  return TakeResult::kTaken;
}

SrqPool::TakeResult SrqPool::TakePostedLocked(MsnWindow& ep, std::uint32_t msn, std::uint32_t slot,
                                              RecvBuffer& out) {
  if (ep.pool_ != this || slot >= slots_.size() || slots_[slot].state != SlotState::kPosted)
    return TakeResult::kRefused;
  std::uint32_t held = 0;
  if (ep.Find(msn, held) != MsnWindow::Lookup::kFree) return TakeResult::kRefused;
  if (!RemovePostedLocked(slot)) return TakeResult::kRefused;
  Slot& taken = slots_[slot];
  taken.state = SlotState::kHeld;
  ep.Allocate(msn, slot);
  out = RecvBuffer{taken.cookie, taken.num_segments, taken.segments, taken.capacity, slot};
  return TakeResult::kTaken;
}

RecvCompletion SrqPool::CompletionLocked(const MsnWindow::Ready& ready) {
  Slot& slot = slots_[ready.slot];
  slot.state = SlotState::kCompleted;
  return RecvCompletion{slot.cookie, ready.slot, ready.msn, ready.length, ready.status, ready.notes};
}

Status SrqPool::Place(MsnWindow& ep, std::uint32_t msn, std::uint64_t transferred_length,
                      DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != this) return Status(Code::kInvalidParameter, Detail::kNone);
  std::uint32_t index = 0;
  if (!ep.HeldUnplaced(msn, index)) return Status(Code::kInvalidParameter, Detail::kNone);
  if (transferred_length > slots_[index].capacity)
    return Status(Code::kInvalidParameter, Detail::kNone);
  ep.Place(msn, transferred_length, status, notes);
  return Status::Ok();
}

Status SrqPool::Close(MsnWindow& ep, BufferWaiter* waiter) {
  bool pass_on = false;
  {
    std::lock_guard lock(mu_);
    if (ep.pool_ != this) return Status(Code::kInvalidParameter, Detail::kNone);
    ep.Close();
    if (waiter != nullptr) {
      // A closed window takes no buffer: a wake-up it was given goes to the next waiter.
      pass_on = waiter->wait_state_ == BufferWaiter::WaitState::kWoken;
      SettleLocked(waiter);
      pass_on = pass_on && WakeDueLocked();
    }
  }
  if (pass_on) WakeWaiters();
  return Status::Ok();
}

bool SrqPool::PopCompletion(MsnWindow& ep, RecvCompletion& out) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != this) return false;
  MsnWindow::Ready ready;
  if (!ep.PopNext(ready)) return false;
  out = CompletionLocked(ready);
  return true;
}

Status SrqPool::Reaped(std::uint32_t slot) {
  std::lock_guard lock(mu_);
  if (slot >= slots_.size() || slots_[slot].state != SlotState::kCompleted)
    return Status(Code::kInvalidParameter, Detail::kNone);
  slots_[slot].state = SlotState::kFree;
  free_[free_count_++] = slot;
  return Status::Ok();
}

Status SrqPool::RecvQuery(const MsnWindow& ep, DAT_COUNT* nbufs_allocated,
                          DAT_COUNT* bufs_alloc_span) const {
  std::uint32_t held;
  std::uint32_t span;
  {
    // One snapshot: the counted buffers and the reported span are the same set.
    std::lock_guard lock(mu_);
    if (ep.pool_ != this) return Status(Code::kInvalidParameter, Detail::kNone);
    held = ep.held();
    span = ep.span();
  }
  // Both are at most the window (kMaxWindow), so they fit a DAT_COUNT.
  if (nbufs_allocated != nullptr) *nbufs_allocated = static_cast<DAT_COUNT>(held);
  if (bufs_alloc_span != nullptr) *bufs_alloc_span = static_cast<DAT_COUNT>(span);
  return Status::Ok();
}

}  // namespace softdat::srq
