// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ExecuteAtomic (remote_atomic.h): the one place a remote atomic touches the target's memory.
#include "transport/remote_atomic.h"

#include <atomic>

namespace softdat::transport {
namespace {

// RFC 7306 masked Fetch and Add: a set bit of `mask` ends a field, so no carry leaves that bit
// (mask 0 is the plain 64-bit add softdat sends).
std::uint64_t MaskedAdd(std::uint64_t a, std::uint64_t b, std::uint64_t mask) {
  std::uint64_t sum = 0, carry = 0;
  for (int bit = 0; bit < 64; ++bit) {
    const std::uint64_t x = a >> bit & 1, y = b >> bit & 1;
    sum |= (x ^ y ^ carry) << bit;
    carry = (x & y) | (carry & (x ^ y));
    if (mask >> bit & 1) carry = 0;
  }
  return sum;
}

}  // namespace

std::uint64_t ExecuteAtomic(std::uint8_t* at, const AtomicOperation& op) {
  std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(at));
  if (!op.compare_swap) {
    if (op.add_or_swap_mask == 0) return word.fetch_add(op.add_or_swap);
    std::uint64_t old = word.load();
    while (!word.compare_exchange_weak(old, MaskedAdd(old, op.add_or_swap, op.add_or_swap_mask))) {
    }
    return old;
  }
  // Compare and Swap: where the compare mask's bits agree, the swap mask's bits are replaced.
  std::uint64_t old = word.load();
  do {
    if ((old & op.compare_mask) != (op.compare & op.compare_mask)) return old;
  } while (!word.compare_exchange_weak(old, (old & ~op.add_or_swap_mask) | (op.add_or_swap & op.add_or_swap_mask)));
  return old;
}

}  // namespace softdat::transport
