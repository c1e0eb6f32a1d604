// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The RDMA Reads (and RFC 7306 atomics) of one connection in flight, in both directions, each in a ring sized when the
// connection is made (never allocating afterwards):
//  - OutboundRead: one of ours whose response has not fully arrived (at most the ORD the peer
//    granted). The transmit stream adds it when it frames the Read Request; the receive stream
//    places its response and completes it.
//  - InboundRead: one the peer asked of us (at most our IRD). The receive stream queues it when
//    the Read Request arrives; the transmit stream frames its response.
// Both live on the Connection and are used only under its IoLock.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/tcp/wire.h"
#include "transport/work.h"

namespace softdat::transport::tcp {

// A fixed-capacity FIFO ring (capacity at least 1, set at construction).
template <class T>
class FixedRing {
 public:
  explicit FixedRing(std::size_t capacity) : slots_(capacity < 1 ? 1 : capacity) {}
  std::size_t size() const { return count_; }
  std::size_t capacity() const { return slots_.size(); }
  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == slots_.size(); }
  T& front() { return slots_[head_]; }
  // The slot the next Push fills: the caller writes it, then pushes (only when !full()).
  T& back_slot() { return slots_[Index(count_)]; }
  void Push() { ++count_; }
  void Pop() {
    head_ = Index(1);
    --count_;
  }

 private:
  std::size_t Index(std::size_t offset) const {
    std::size_t at = head_ + offset;
    return at >= slots_.size() ? at - slots_.size() : at;
  }

  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

// Or one of our atomics (they share the ORD), sink_stag then being its request identifier.
struct OutboundRead {
  Work work;
  std::uint32_t sink_stag = 0;  // names our sink in the peer's Read Responses
  std::uint64_t received = 0;
  std::uint32_t segment = 0;  // scatter cursor into work.local
  std::uint32_t segment_offset = 0;
};

// Or an Atomic Request of the peer's, done when it arrived, whose response waits its turn (Read
// and Atomic Responses go in request order, RFC 7306).
struct InboundRead {
  const std::uint8_t* source = nullptr;  // our memory the peer reads (checked when it asked)
  std::uint32_t length = 0;
  std::uint32_t sink_stag = 0;
  std::uint64_t sink_offset = 0;
  bool atomic = false;
  wire::AtomicResponseBody atomic_response;
};

}  // namespace softdat::transport::tcp
