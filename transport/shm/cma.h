// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Cross-memory attach: one copy between this process and a same-host peer
// (process_vm_readv/process_vm_writev), for RDMA Writes and Reads that complete without the
// target's CPU and for large Sends the receiver pulls. The kernel allows it only where this
// process may already ptrace the peer (same user and not forbidden by Yama's ptrace_scope, or
// CAP_SYS_PTRACE), so it gives no peer more than it had. Whether it works is found by a probe at
// connection setup, not assumed; a copy the kernel refuses later (kRefused) falls back to the
// ring, and one that faults (kFault) means the peer's word about its memory was wrong.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/segment.h"

namespace softdat::transport::shm {

enum class CmaResult : std::uint8_t {
  kDone,
  kRefused,  // EPERM, ESRCH: the kernel does not let us attach (or the peer is gone): use the ring
  kFault,    // EFAULT, ENOMEM, EINVAL: an address is not mapped as said
};

// Whether this process can read `n` bytes at `address` in process `pid` and finds `expected`
// there: the peer is who it says, maps what it says where it says, and lets us attach.
bool ProbeCrossMemory(pid_t pid, std::uint64_t address, const void* expected, std::size_t n);

// Copies `bytes` between local pieces and remote pieces (both in order, each list long enough):
// `write` true copies local → remote (process_vm_writev), false remote → local. Resumes after
// partial transfers; 64 pieces of each list at most go into one call, the rest into further calls.
CmaResult CrossMemoryCopy(pid_t pid, bool write, std::span<const iovec> local, std::span<const iovec> remote,
                          std::uint64_t bytes);

// Fills `out` with the iovecs of `bytes` bytes of `segments` starting `offset` bytes in: how many
// were used (0 when the segments hold fewer bytes, or `out` is too short).
std::size_t SegmentIovecs(std::span<const Segment> segments, std::uint64_t offset, std::uint64_t bytes,
                          std::span<iovec> out);

// Yama's ptrace_scope (0 classic, 1 restricted to descendants, 2 admin only, 3 none), or -1
// when Yama is not there.
int YamaPtraceScope();
// Lets process `pid` attach to us under Yama scope 1 (PR_SET_PTRACER). One such process per
// process: the latest call wins. False when the call failed.
bool AllowAttachBy(pid_t pid);

}  // namespace softdat::transport::shm
