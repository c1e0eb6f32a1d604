// Payload of small Sends and RDMA Writes, copied when they are posted. An RNIC reads a posted
// buffer within microseconds; this transport frames it whenever the progress thread gets to the
// connection, which under load can be long after the post. Consumers that reuse a small source
// buffer before its (often unsignalled) completion — stock dtest does — would then send the new
// bytes. Copying up to kMaxInline bytes at post time, like an RNIC's inline data, closes that
// window for small messages; larger ones are still read from registered memory at framing time.
//
// A FIFO byte ring: space is taken in post order and given back in the same order once the
// message's bytes are on the socket. Not thread-safe; the connection's post mutex guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace softdat::transport::tcp {

class InlineRing {
 public:
  static constexpr std::size_t kMaxInline = 4096;

  explicit InlineRing(std::size_t capacity) : bytes_(capacity) {}

  // Contiguous room for `length` (1..kMaxInline) bytes, or nullptr when the ring is too full.
  // `charged` is what to hand back to Release: the length plus any tail skipped to stay
  // contiguous.
  std::uint8_t* Allocate(std::size_t length, std::uint32_t& charged);
  // Gives back the oldest allocation (allocations are released in the order they were made).
  void Release(std::uint32_t charged);

  std::size_t used() const { return used_; }
  std::size_t capacity() const { return bytes_.size(); }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t head_ = 0;  // next free byte
  std::size_t used_ = 0;  // bytes allocated, skipped tails included
};

}  // namespace softdat::transport::tcp
