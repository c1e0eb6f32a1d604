// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What ThreadSanitizer cannot see on its own: a ring's consumed count is published with a release
// store through the reader's mapping of the segment and loaded with acquire through the
// writer's. When both ends run in one process (the tests, two IAs of one process) each maps the
// memfd at its own address, so the two look unrelated, and what the reader placed before it
// published (an RDMA Write through the ring, into the consumer's memory) looks racy against the
// initiator's consumer, who reads that memory after a Read that waited for the count. These
// hooks name each ring's pair on one process-wide address, picked by the segment's nonce and the
// ring. They tell TSan about an order that exists; outside TSan builds they are nothing.
#pragma once

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
#endif

namespace softdat::transport::shm {

// The address both ends of ring `ring` of the segment with `nonce` annotate (null without TSan).
inline void* TsanRingSync([[maybe_unused]] std::uint64_t nonce, [[maybe_unused]] int ring) {
#if defined(__SANITIZE_THREAD__)
  static char slots[4096];
  return &slots[(nonce * 2 + static_cast<std::uint64_t>(ring)) % sizeof slots];
#else
  return nullptr;
#endif
}

inline void TsanRelease([[maybe_unused]] void* sync) {
#if defined(__SANITIZE_THREAD__)
  if (sync != nullptr) __tsan_release(sync);
#endif
}

inline void TsanAcquire([[maybe_unused]] void* sync) {
#if defined(__SANITIZE_THREAD__)
  if (sync != nullptr) __tsan_acquire(sync);
#endif
}

}  // namespace softdat::transport::shm
