// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The pools of one transport that its connections take buffers from, shared (shared_ptr) by the
// connections, which may outlive the transport, and the counters they keep: sendmsg calls (tests
// check that bursts are coalesced), the IA's last write (coalescing across connections) and the
// live connections (what the kick ring must hold).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/tcp/block_pool.h"

namespace softdat::transport::tcp {

struct ConnectionBuffers {
  // What a connection waiting for an SRQ buffer keeps of what it read, when it is this small.
  static constexpr std::size_t kHeldBlock = 16 * 1024;

  BlockPool rx;           // received bytes not yet placed (RxStream::kBlockSize)
  BlockPool rx_held;      // the same, of a connection held for a receive buffer (kHeldBlock)
  BlockPool frames;       // a batch's gather list and FPDU headers (TxBatch::kFrameBlock)
  BlockPool staging;      // payload copies that must be checksummed (TxBatch::kStagingSize)
  BlockPool inline_copy;  // small payloads copied when posted (InlineRing::kBlockSize)
  std::atomic<std::uint64_t> sendmsg_calls{0};
  // When any connection of the transport last wrote a batch (MonotonicNs): a stream spread over
  // many connections coalesces too (TxStream::Due).
  std::atomic<std::uint64_t> last_write_ns{0};
  // Connections not yet destroyed (a Connection outlives its endpoint while the progress context
  // still holds it), and endpoints (whose same-host connection may be queued instead, and which
  // make their Connection only when TCP is chosen): what the kick ring must hold, since each may
  // be queued once.
  std::atomic<std::uint32_t> live_connections{0};
  std::atomic<std::uint32_t> live_endpoints{0};
  ConnectionBuffers();
};

}  // namespace softdat::transport::tcp
