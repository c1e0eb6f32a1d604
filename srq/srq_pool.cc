// The SRQ buffer store: slab of slots, posted FIFO ring, free stack, watermark, resize, and the
// pool side of taking, completing, flushing and reaping buffers.
#include "srq/srq_pool.h"

#include <algorithm>
#include <bit>
#include <new>
#include <utility>

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
    return Status(Code::kInvalidParameter, Detail::kArg3);
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

Status SrqPool::Post(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments,
                     std::uint32_t* slot_out) {
  if (segments.size() > max_iov_) return Status(Code::kInvalidParameter, Detail::kArg2);
  std::lock_guard lock(mu_);
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
  if (slot_out != nullptr) *slot_out = index;
  return Status::Ok();
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
    return Status(Code::kInvalidParameter, Detail::kArg1);
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
  if (low_watermark < 0) return Status(Code::kInvalidParameter, Detail::kArg2);
  LowWatermarkListener* notify = nullptr;
  {
    std::lock_guard lock(mu_);
    if (static_cast<std::uint32_t>(low_watermark) > limit_)
      return Status(Code::kInvalidParameter, Detail::kArg2);
    low_watermark_ = static_cast<std::uint32_t>(low_watermark);
    low_watermark_armed_ = low_watermark != DAT_SRQ_LW_DEFAULT;
    // The man page's USAGE words this the other way round ("if the new low watermark value is
    // below the current number"); its DESCRIPTION is the rule: fire when the SRQ is below it.
    notify = LowWatermarkCrossedLocked();
  }
  if (notify != nullptr) notify->OnLowWatermark();
  return Status::Ok();
}

Status SrqPool::CheckResizeLocked(std::uint32_t new_max) const {
  if (new_max < OutstandingLocked() || new_max < low_watermark_)
    return Status(Code::kInvalidState, Detail::kSrqInUse);
  return Status::Ok();
}

Status SrqPool::CheckResize(std::uint32_t new_max) const {
  if (new_max == 0 || new_max > kMaxRecvDtos) return Status(Code::kInvalidParameter, Detail::kArg2);
  std::lock_guard lock(mu_);
  return CheckResizeLocked(new_max);
}

Status SrqPool::Resize(std::uint32_t new_max) {
  if (new_max == 0 || new_max > kMaxRecvDtos) return Status(Code::kInvalidParameter, Detail::kArg2);
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

Status SrqPool::Attach(EndpointRecvAccount& ep) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != nullptr) return Status(Code::kInvalidParameter, Detail::kArg1);
  ep.pool_ = this;
  ++attached_;
  return Status::Ok();
}

Status SrqPool::Detach(EndpointRecvAccount& ep) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != this) return Status(Code::kInvalidParameter, Detail::kArg1);
  // Detaching now would leave those buffers outstanding forever.
  if (ep.held() > 0) return Status(Code::kInvalidState, Detail::kEpCompletionPending);
  ep.pool_ = nullptr;
  --attached_;
  return Status::Ok();
}

std::uint32_t SrqPool::attached_count() const {
  std::lock_guard lock(mu_);
  return attached_;
}

SrqPool::TakeResult SrqPool::Take(EndpointRecvAccount& ep, std::uint32_t msn, RecvBuffer& out) {
  LowWatermarkListener* notify = nullptr;
  std::uint32_t index = 0;
  RecvBuffer view;
  {
    std::lock_guard lock(mu_);
    if (ep.pool_ != this) return TakeResult::kRefused;
    switch (ep.Find(msn, index)) {
      case EndpointRecvAccount::Lookup::kRefused: return TakeResult::kRefused;
      case EndpointRecvAccount::Lookup::kHeld: break;  // a later segment of the same message
      case EndpointRecvAccount::Lookup::kFree:
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
    view = RecvBuffer{slot.cookie, slot.num_segments, slot.segments, slot.capacity, index};
  }
  out = view;
  if (notify != nullptr) notify->OnLowWatermark();
  return TakeResult::kTaken;
}

SrqPool::TakeResult SrqPool::TakePosted(EndpointRecvAccount& ep, std::uint32_t msn,
                                        std::uint32_t slot, RecvBuffer& out) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != this || slot >= slots_.size() || slots_[slot].state != SlotState::kPosted)
    return TakeResult::kRefused;
  std::uint32_t held = 0;
  if (ep.Find(msn, held) != EndpointRecvAccount::Lookup::kFree) return TakeResult::kRefused;
  if (!RemovePostedLocked(slot)) return TakeResult::kRefused;
  Slot& taken = slots_[slot];
  taken.state = SlotState::kHeld;
  ep.Allocate(msn, slot);
  out = RecvBuffer{taken.cookie, taken.num_segments, taken.segments, taken.capacity, slot};
  return TakeResult::kTaken;
}

RecvCompletion SrqPool::CompletionLocked(const EndpointRecvAccount::Ready& ready) {
  Slot& slot = slots_[ready.slot];
  slot.state = SlotState::kCompleted;
  return RecvCompletion{slot.cookie, ready.slot, ready.msn, ready.length, ready.status, ready.notes};
}

Status SrqPool::Place(EndpointRecvAccount& ep, std::uint32_t msn, std::uint64_t transferred_length,
                      DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != this) return Status(Code::kInvalidParameter, Detail::kArg1);
  std::uint32_t index = 0;
  if (!ep.HeldUnplaced(msn, index)) return Status(Code::kInvalidParameter, Detail::kArg2);
  if (transferred_length > slots_[index].capacity)
    return Status(Code::kInvalidParameter, Detail::kArg3);
  ep.Place(msn, transferred_length, status, notes);
  return Status::Ok();
}

Status SrqPool::Close(EndpointRecvAccount& ep) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != this) return Status(Code::kInvalidParameter, Detail::kArg1);
  ep.Close();
  return Status::Ok();
}

bool SrqPool::PopCompletion(EndpointRecvAccount& ep, RecvCompletion& out) {
  std::lock_guard lock(mu_);
  if (ep.pool_ != this) return false;
  EndpointRecvAccount::Ready ready;
  if (!ep.PopNext(ready)) return false;
  out = CompletionLocked(ready);
  return true;
}

Status SrqPool::Complete(EndpointRecvAccount& ep, std::uint32_t msn,
                         std::uint64_t transferred_length, DAT_DTO_COMPLETION_STATUS status,
                         std::span<RecvCompletion> out, std::size_t& delivered) {
  if (out.size() < ep.window()) return Status(Code::kInvalidParameter, Detail::kArg5);
  if (Status placed = Place(ep, msn, transferred_length, status); !placed.ok()) return placed;
  std::size_t count = 0;
  while (count < out.size() && PopCompletion(ep, out[count])) ++count;
  delivered = count;
  return Status::Ok();
}

Status SrqPool::FlushEndpoint(EndpointRecvAccount& ep, std::span<RecvCompletion> out,
                              std::size_t& delivered) {
  if (out.size() < ep.window()) return Status(Code::kInvalidParameter, Detail::kArg2);
  if (Status closed = Close(ep); !closed.ok()) return closed;
  std::size_t count = 0;
  while (count < out.size() && PopCompletion(ep, out[count])) ++count;
  delivered = count;
  return Status::Ok();
}

Status SrqPool::Reaped(std::uint32_t slot) {
  std::lock_guard lock(mu_);
  if (slot >= slots_.size() || slots_[slot].state != SlotState::kCompleted)
    return Status(Code::kInvalidParameter, Detail::kArg1);
  slots_[slot].state = SlotState::kFree;
  free_[free_count_++] = slot;
  return Status::Ok();
}

Status SrqPool::RecvQuery(const EndpointRecvAccount& ep, DAT_COUNT* nbufs_allocated,
                          DAT_COUNT* bufs_alloc_span) const {
  std::uint32_t held;
  std::uint32_t span;
  {
    // One snapshot: the counted buffers and the reported span are the same set.
    std::lock_guard lock(mu_);
    if (ep.pool_ != this) return Status(Code::kInvalidParameter, Detail::kArg1);
    held = ep.held();
    span = ep.span();
  }
  // Both are at most the window (kMaxWindow), so they fit a DAT_COUNT.
  if (nbufs_allocated != nullptr) *nbufs_allocated = static_cast<DAT_COUNT>(held);
  if (bufs_alloc_span != nullptr) *bufs_alloc_span = static_cast<DAT_COUNT>(span);
  return Status::Ok();
}

}  // namespace softdat::srq
