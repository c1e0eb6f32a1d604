// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The check every posting call (dat_srq_post_recv, dat_ep_post_recv, dat_ep_post_send,
// dat_ep_post_rdma_read/write) makes of its local I/O vector, and the copy it produces for srq/
// and the transports. Each segment must name a live LMR of the posting object's PZ, with the
// privilege the operation needs, and lie inside that LMR. A zero-length segment is legal and its
// other fields are ignored (DAT: "can be invalid"); it is dropped from the copy.
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <span>

#include "base/segment.h"
#include "base/status.h"

namespace softdat::core {

class MemoryTable;
class Pz;

// What the operation does with its local memory.
enum class LocalUse : std::uint8_t {
  kReceive,   // a Recv buffer or the sink of an RDMA Read: needs LOCAL_WRITE
  kTransmit,  // the source of a Send or RDMA Write: needs LOCAL_READ
};

struct CheckedIov {
  std::size_t count = 0;     // segments written to the output (zero-length ones dropped)
  std::uint64_t length = 0;  // their total length
};

// Checks `iov` and writes its non-empty segments to `out` (room for iov.size() entries).
// Failures, in the order DAT lists them, with nothing written that the caller keeps:
//   kPrivilegesViolation  a context names no LMR of this IA, or the LMR lacks the privilege
//                         (subtype kPrivilegesWrite / kPrivilegesRead)
//   kProtectionViolation  the LMR belongs to another PZ (kProtectionWrite / kProtectionRead)
//   kInvalidParameter     a segment reaches outside its LMR (subtype `iov_argument`)
Status CheckLocalIov(const MemoryTable& memory, const Pz* pz, std::span<const DAT_LMR_TRIPLET> iov,
                     LocalUse use, Detail iov_argument, std::span<Segment> out, CheckedIov& checked);

}  // namespace softdat::core
