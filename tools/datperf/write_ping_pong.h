// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One side of write_lat, the RDMA Write ping-pong, as both ends run it: post a round's Write (and
// the zero-byte Send that notifies it, with --notify send), and spin until the peer's Write of a
// round's tag lands in this side's memory.
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <string>

#include "tools/datperf/options.h"

namespace softdat::datperf {

// Every this many Writes (and Sends) one is signaled; the others complete silently, as dtest -W
// signals every 10th and perftest every 100th.
inline constexpr std::uint64_t kWriteSignalEvery = 16;

class WritePingPong {
 public:
  WritePingPong(DAT_EP_HANDLE ep, DAT_EVD_HANDLE request_evd, Notify notify, Spin spin)
      : ep_(ep), request_evd_(request_evd), notify_(notify), spin_(spin) {}

  // Writes `local` to `remote` (the caller set its last byte to the round's tag), then, with
  // --notify send, posts a zero-byte Send. A signaled round's completions are reaped at once by
  // a dequeue loop, as dtest -W reaps them.
  bool Post(const DAT_LMR_TRIPLET& local, const DAT_RMR_TRIPLET& remote, std::uint64_t round, std::string& error);

  enum class Landed { kTag, kEnd, kTimedOut };
  // Spins until the byte at `mailbox` is `tag` (or kEndTag), or the monotonic clock passes
  // `give_up_ns`. With Spin::kDequeue each pass also dequeues the request EVD once.
  Landed Await(const std::uint8_t* mailbox, std::uint8_t tag, std::uint64_t give_up_ns);

 private:
  bool Reap(std::string& error);

  DAT_EP_HANDLE ep_;
  DAT_EVD_HANDLE request_evd_;
  Notify notify_;
  Spin spin_;
  std::uint32_t signaled_ = 0;  // signaled completions not yet reaped
};

// The monotonic clock in nanoseconds.
std::uint64_t MonotonicNs();

}  // namespace softdat::datperf
