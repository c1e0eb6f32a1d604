// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// RequestQueue: a ring indexed by request id, popped in id order.
#include "core/request_queue.h"

#include <bit>
#include <new>

namespace softdat::core {

Status RequestQueue::Create(std::uint32_t max_requests, std::uint32_t max_iov,
                            std::unique_ptr<RequestQueue>& out) {
  if (max_requests == 0 || max_requests > kMaxRequests) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  if (max_iov > kMaxIov) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  try {
    out.reset(new RequestQueue(max_requests, max_iov == 0 ? 1 : max_iov, std::bit_ceil(max_requests)));
  } catch (const std::bad_alloc&) {
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  return Status::Ok();
}

RequestQueue::RequestQueue(std::uint32_t limit, std::uint32_t max_iov, std::uint32_t ring_size)
    : limit_(limit),
      max_iov_(max_iov),
      ring_size_(ring_size),
      entries_(new Entry[ring_size]),
      segment_storage_(new Segment[std::size_t{ring_size} * max_iov]) {
  for (std::uint32_t i = 0; i < ring_size; ++i)
    entries_[i].request.segments = &segment_storage_[std::size_t{i} * max_iov];
}

RequestQueue::Request* RequestQueue::Reserve() {
  std::lock_guard lock(mu_);
  if (next_id_ - head_id_ >= limit_) return nullptr;
  Entry& entry = EntryOf(next_id_);
  Segment* storage = entry.request.segments;
  entry.request = Request{};
  entry.request.segments = storage;
  return &entry.request;
}

std::uint64_t RequestQueue::Commit() {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_id_++;
  Entry& entry = EntryOf(id);
  entry.id = id;
  entry.status = transport::WorkStatus::kSuccess;
  entry.length = 0;
  entry.state = State::kOutstanding;
  return id;
}

void RequestQueue::Abandon(std::uint64_t id) {
  std::lock_guard lock(mu_);
  if (id + 1 != next_id_) return;
  EntryOf(id).state = State::kFree;
  --next_id_;
}

bool RequestQueue::Finish(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) {
  std::lock_guard lock(mu_);
  if (id < head_id_ || id >= next_id_) return false;
  Entry& entry = EntryOf(id);
  if (entry.id != id || entry.state != State::kOutstanding) return false;
  entry.status = status;
  entry.length = length;
  entry.state = State::kFinished;
  return true;
}

void RequestQueue::FlushAll() {
  std::lock_guard lock(mu_);
  for (std::uint64_t id = head_id_; id != next_id_; ++id) {
    Entry& entry = EntryOf(id);
    if (entry.state != State::kOutstanding) continue;
    entry.status = transport::WorkStatus::kFlushed;
    entry.length = 0;
    entry.state = State::kFinished;
  }
}

bool RequestQueue::PopCompletion(Completion& out) {
  std::lock_guard lock(mu_);
  if (head_id_ == next_id_) return false;
  Entry& entry = EntryOf(head_id_);
  if (entry.state != State::kFinished) return false;
  out = Completion{entry.request.cookie, entry.request.operation, entry.request.flags,
                   entry.status, entry.length, entry.request.rmr, false};
  entry.state = State::kFree;
  ++head_id_;
  out.more = head_id_ != next_id_ && EntryOf(head_id_).state == State::kFinished;
  return true;
}

std::uint32_t RequestQueue::count() const {
  std::lock_guard lock(mu_);
  return static_cast<std::uint32_t>(next_id_ - head_id_);
}

}  // namespace softdat::core
