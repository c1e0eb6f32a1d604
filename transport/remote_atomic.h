// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The target side of a remote 64-bit atomic (DAT IB Fetch and Add, Compare and Swap), shared by
// every software path that executes one in the target's process (tcp's Atomic Request, the
// same-host path's atomic record): one std::atomic_ref operation on the consumer's memory, so
// atomics arriving over any connection, TCP or shared memory, are atomic with respect to each
// other and to the consumer's own atomics on the same 8 bytes.
#pragma once

#include <cstdint>

namespace softdat::transport {

// RFC 7306's form (softdat sends the unmasked forms: a Fetch and Add with mask 0, a Compare and
// Swap with both masks all ones).
struct AtomicOperation {
  bool compare_swap = false;
  std::uint64_t add_or_swap = 0;
  std::uint64_t add_or_swap_mask = 0;  // Fetch and Add: set bits end carry fields; CmpSwap: bits replaced
  std::uint64_t compare = 0;
  std::uint64_t compare_mask = 0;
};

// Performs `op` on the 8 naturally aligned bytes at `at` (the caller resolved the key with
// RemoteAccess::kAtomic: bounds, alignment, REMOTE_ATOMIC) in one step; returns the value before.
std::uint64_t ExecuteAtomic(std::uint8_t* at, const AtomicOperation& op);

}  // namespace softdat::transport
