// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EpRecvQueue: a ring of posted buffers whose position is their MSN.
#include "srq/ep_recv_queue.h"

#include <algorithm>
#include <bit>
#include <new>
#include <utility>

#include "base/log.h"

namespace softdat::srq {

Status EpRecvQueue::Create(std::uint32_t max_recv_dtos, std::uint32_t max_recv_iov,
                           std::unique_ptr<EpRecvQueue>& out) {
  if (max_recv_dtos == 0 || max_recv_dtos > kMaxRecvDtos)
    return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  if (max_recv_iov > kMaxRecvIov) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  const std::uint32_t max_iov = std::max<std::uint32_t>(max_recv_iov, 1);
  const std::uint32_t ring_size = std::bit_ceil(max_recv_dtos);
  try {
    out.reset(new EpRecvQueue(max_recv_dtos, max_iov, ring_size));
  } catch (const std::bad_alloc&) {
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  return Status::Ok();
}

EpRecvQueue::EpRecvQueue(std::uint32_t limit, std::uint32_t max_iov, std::uint32_t ring_size)
    : limit_(limit),
      max_iov_(max_iov),
      ring_size_(ring_size),
      entries_(new Entry[ring_size]),
      segment_storage_(new RecvSegment[std::size_t{ring_size} * max_iov]) {
  for (std::uint32_t i = 0; i < ring_size; ++i)
    entries_[i] = Entry{DAT_DTO_COOKIE{}, &segment_storage_[std::size_t{i} * max_iov], 0, 0, 0,
                        DAT_DTO_SUCCESS, DAT_COMPLETION_DEFAULT_FLAG, RecvNotes{}, State::kPosted};
}

Status EpRecvQueue::Post(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments,
                         DAT_COMPLETION_FLAGS flags, Posted& out) {
  if (segments.size() > max_iov_) return Status(Code::kInvalidParameter, Detail::kParamNumSegments);
  std::lock_guard lock(mu_);
  if (count_ >= limit_) return Status(Code::kInsufficientResources);
  Entry& entry = At(count_);
  std::uint64_t capacity = 0;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    entry.segments[i] = segments[i];
    capacity += segments[i].length;
  }
  entry.cookie = cookie;
  entry.capacity = capacity;
  entry.length = 0;
  entry.num_segments = static_cast<std::uint32_t>(segments.size());
  entry.status = DAT_DTO_SUCCESS;
  entry.flags = flags;
  entry.notes = RecvNotes{};
  entry.state = State::kPosted;
  ++count_;
  out.recv_id = ++recv_posted_;
  out.resumes = std::exchange(message_waiting_, false);
  return Status::Ok();
}

void EpRecvQueue::Withdraw() {
  std::lock_guard lock(mu_);
  if (count_ == 0 || At(count_ - 1).state != State::kPosted) return;
  --count_;
  --recv_posted_;
}

Status EpRecvQueue::BeginConnectionAt(std::uint32_t first_msn) {
  std::lock_guard lock(mu_);
  for (std::uint32_t offset = 0; offset < count_; ++offset)
    if (At(offset).state != State::kPosted) return Status(Code::kInvalidState);
  // Every buffer still queued was posted before this connection and none is taken: the oldest
  // is its first message, whose recv_id follows recv_base_.
  next_msn_ = first_msn;
  closed_ = false;
  message_waiting_ = false;
  recv_base_ = recv_posted_ - count_;
  recv_expected_ = recv_base_ + 1;
  RearmHardWatermark();
  return Status::Ok();
}

EpRecvQueue::TakeResult EpRecvQueue::TakeLocked(std::uint32_t msn, RecvBuffer& out) {
  if (closed_) return TakeResult::kRefused;
  // Modular: an MSN before the head (already delivered) is a huge offset, never below count_
  // unless the peer wrapped 2^32 messages ahead, which the window of a transport never allows.
  const std::uint32_t offset = msn - next_msn_;
  if (offset >= ring_size_) {
    // Behind the head: delivered already. Far ahead: more than this queue can ever hold.
    return offset >= 0x80000000u ? TakeResult::kRefused : TakeResult::kNotReady;
  }
  if (offset >= count_) return TakeResult::kNotReady;
  Entry& entry = At(offset);
  if (entry.state == State::kPlaced) return TakeResult::kRefused;
  entry.state = State::kTaken;
  out = RecvBuffer{entry.cookie, entry.num_segments, entry.segments, entry.capacity, 0};
  return TakeResult::kTaken;
}

EpRecvQueue::TakeResult EpRecvQueue::TakeForMessage(std::uint32_t msn, RecvBuffer& out) {
  std::lock_guard lock(mu_);
  const TakeResult taken = TakeLocked(msn, out);
  if (taken == TakeResult::kNotReady) message_waiting_ = true;
  return taken;
}

EpRecvQueue::WholeResult EpRecvQueue::TakeAndPlace(std::uint32_t msn, std::span<const std::uint8_t> bytes,
                                                    const RecvNotes& notes) {
  std::lock_guard lock(mu_);
  RecvBuffer buffer;
  switch (TakeLocked(msn, buffer)) {
    case TakeResult::kTaken: break;
    case TakeResult::kNotReady:
      message_waiting_ = true;
      return WholeResult::kNotReady;
    case TakeResult::kRefused: return WholeResult::kRefused;
  }
  // Place without its checks: the entry was taken just now, under this lock.
  Entry& entry = At(msn - next_msn_);
  if (bytes.size() > entry.capacity) {
    entry.MarkPlaced(0, DAT_DTO_ERR_LOCAL_LENGTH, notes);
    return WholeResult::kTooLong;
  }
  CopyIntoSegments({entry.segments, entry.num_segments}, bytes.data(), bytes.size());
  entry.MarkPlaced(bytes.size(), DAT_DTO_SUCCESS, notes);
  return WholeResult::kPlaced;
}

EpRecvQueue::TakeResult EpRecvQueue::TakeDeviceChosen(std::uint64_t recv_id, std::uint32_t& msn,
                                                      RecvBuffer& out) {
  std::lock_guard lock(mu_);
  return TakeDeviceChosenLocked(recv_id, msn, out);
}

EpRecvQueue::TakeResult EpRecvQueue::CompleteDeviceChosen(std::uint64_t recv_id, std::uint64_t length,
                                                          DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes,
                                                          std::uint32_t& msn) {
  std::lock_guard lock(mu_);
  RecvBuffer buffer;
  const TakeResult taken = TakeDeviceChosenLocked(recv_id, msn, buffer);
  if (taken != TakeResult::kTaken) return taken;
  // Place without its checks: the entry was taken just now, under this lock.
  Entry& entry = At(msn - next_msn_);
  entry.MarkPlaced(std::min(length, entry.capacity), status, notes);
  return TakeResult::kTaken;
}

EpRecvQueue::TakeResult EpRecvQueue::TakeDeviceChosenLocked(std::uint64_t recv_id, std::uint32_t& msn,
                                                            RecvBuffer& out) {
  if (recv_id != recv_expected_) {
    SOFTDAT_LOG(kWarn, "receive queue %p: the device completed receive %llu, expected %llu: out of posting order",
                static_cast<void*>(this), static_cast<unsigned long long>(recv_id),
                static_cast<unsigned long long>(recv_expected_));
  }
  // RC completes receives in posting order, so the buffer's position is its MSN. Only a
  // completion that names a buffer moves the expectation on: a stray one must not open a gap
  // that in-order delivery would wait on forever.
  msn = static_cast<std::uint32_t>(recv_id - recv_base_);
  const TakeResult taken = TakeLocked(msn, out);
  if (taken == TakeResult::kTaken) recv_expected_ = recv_id + 1;
  return taken == TakeResult::kNotReady ? TakeResult::kRefused : taken;
}

Status EpRecvQueue::Place(std::uint32_t msn, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                          const RecvNotes& notes) {
  std::lock_guard lock(mu_);
  const std::uint32_t offset = msn - next_msn_;
  if (offset >= count_ || At(offset).state != State::kTaken)
    return Status(Code::kInvalidParameter, Detail::kNone);
  Entry& entry = At(offset);
  if (length > entry.capacity) return Status(Code::kInvalidParameter, Detail::kNone);
  entry.MarkPlaced(length, status, notes);
  return Status::Ok();
}

void EpRecvQueue::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
}

EpRecvQueue::TakeResult EpRecvQueue::CompleteDeviceChosenAndPop(std::uint64_t recv_id, std::uint64_t length,
                                                                DAT_DTO_COMPLETION_STATUS status,
                                                                const RecvNotes& notes, RecvCompletion& out,
                                                                bool& popped) {
  std::lock_guard lock(mu_);
  popped = false;
  RecvBuffer buffer;
  std::uint32_t msn = 0;
  const TakeResult taken = TakeDeviceChosenLocked(recv_id, msn, buffer);
  if (taken != TakeResult::kTaken) return taken;
  const std::uint64_t placed = std::min(length, buffer.capacity);
  if (msn != next_msn_) {
    At(msn - next_msn_).MarkPlaced(placed, status, notes);  // behind an earlier buffer
    return taken;
  }
  // The next completion to generate: straight out, without a stop in its entry (a closed queue
  // took nothing, so no flush is due).
  const Entry& entry = At(0);
  out.cookie = entry.cookie;
  out.slot = 0;
  out.msn = msn;
  out.transferred_length = placed;
  out.status = status;
  out.notes = notes;
  out.post_flags = entry.flags;
  out.from_srq = false;
  head_ = (head_ + 1) & (ring_size_ - 1);
  --count_;
  ++next_msn_;
  out.more = count_ != 0 && At(0).state == State::kPlaced;
  popped = true;
  return taken;
}

bool EpRecvQueue::PopCompletion(RecvCompletion& out) {
  std::lock_guard lock(mu_);
  if (count_ == 0) return false;
  Entry& entry = At(0);
  const bool placed = entry.state == State::kPlaced;
  if (!placed && !closed_) return false;
  // Field by field into `out`: a temporary built here and copied out was read back with wide
  // loads right after its narrow stores, and each such load waited for the stores to retire (the
  // stalls were most of this function's samples in the busy same-host message rate, perf).
  out.cookie = entry.cookie;
  out.slot = 0;
  out.msn = next_msn_;
  out.transferred_length = placed ? entry.length : 0;
  out.status = placed ? entry.status : DAT_DTO_ERR_FLUSHED;
  out.notes = placed ? entry.notes : RecvNotes{};
  out.post_flags = entry.flags;
  out.from_srq = false;
  head_ = (head_ + 1) & (ring_size_ - 1);
  --count_;
  ++next_msn_;
  out.more = count_ != 0 && (closed_ || At(0).state == State::kPlaced);
  return true;
}

void EpRecvQueue::RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const {
  std::lock_guard lock(mu_);
  if (nbufs_allocated != nullptr) *nbufs_allocated = static_cast<DAT_COUNT>(count_);
  if (bufs_alloc_span != nullptr) *bufs_alloc_span = static_cast<DAT_COUNT>(count_);
}

std::uint32_t EpRecvQueue::held() const {
  std::lock_guard lock(mu_);
  return count_;
}

}  // namespace softdat::srq
