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
  const std::uint64_t next = next_id_.load(std::memory_order_relaxed);
  // Acquire: the pop that freed this entry read it before it moved the head.
  if (next - head_id_.load(std::memory_order_acquire) >= limit_) return nullptr;
  Entry& entry = EntryOf(next);
  Segment* storage = entry.request.segments;
  entry.request = Request{};
  entry.request.segments = storage;
  return &entry.request;
}

std::uint64_t RequestQueue::Commit() {
  const std::uint64_t id = next_id_.load(std::memory_order_relaxed);
  // Release: a Finish or a pop that sees the word sees the request written before it.
  EntryOf(id).word.store(Word(id, kOutstanding), std::memory_order_release);
  next_id_.store(id + 1, std::memory_order_release);
  return id;
}

void RequestQueue::Abandon(std::uint64_t id) {
  // Nobody finishes it meanwhile: the transport refused it, and a flush of the connection's end
  // comes after the poster releases the EP's state lock (the end is set under it, and a post that
  // finds it flushes its own request and abandons nothing).
  if (id + 1 != next_id_.load(std::memory_order_relaxed)) return;
  EntryOf(id).word.store(Word(0, kFree), std::memory_order_relaxed);
  next_id_.store(id, std::memory_order_release);
}

bool RequestQueue::FinishEntry(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) {
  Entry& entry = EntryOf(id);
  // The word holds the id: a stale Finish of an entry reused for a later request fails here.
  std::uint64_t expected = Word(id, kOutstanding);
  if (!entry.word.compare_exchange_strong(expected, Word(id, kFinishing), std::memory_order_acquire,
                                          std::memory_order_relaxed))
    return false;
  entry.status = status;
  entry.length = length;
  entry.word.store(Word(id, kFinished), std::memory_order_release);  // the pop reads the status after this
  return true;
}

bool RequestQueue::Finish(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) {
  if (id == 0 || id >= next_id_.load(std::memory_order_acquire)) return false;
  return FinishEntry(id, status, length);
}

void RequestQueue::FlushAll() {
  const std::uint64_t next = next_id_.load(std::memory_order_acquire);
  for (std::uint64_t id = head_id_.load(std::memory_order_acquire); id < next; ++id)
    (void)FinishEntry(id, transport::WorkStatus::kFlushed, 0);  // finished ones keep their status
}

bool RequestQueue::PopCompletion(Completion& out) {
  const std::uint64_t head = head_id_.load(std::memory_order_relaxed);
  Entry& entry = EntryOf(head);
  if (entry.word.load(std::memory_order_acquire) != Word(head, kFinished)) return false;  // none, or still out
  out = Completion{entry.request.cookie, entry.request.operation, entry.request.flags,
                   entry.status, entry.length, entry.request.rmr, false};
  entry.word.store(Word(0, kFree), std::memory_order_relaxed);
  head_id_.store(head + 1, std::memory_order_release);  // the entry is the poster's again
  out.more = EntryOf(head + 1).word.load(std::memory_order_acquire) == Word(head + 1, kFinished);
  return true;
}

std::uint32_t RequestQueue::count() const {
  const std::uint64_t head = head_id_.load(std::memory_order_acquire);
  return static_cast<std::uint32_t>(next_id_.load(std::memory_order_acquire) - head);
}

}  // namespace softdat::core
