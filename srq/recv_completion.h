// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A Recv completion that srq/ says may now be generated: the buffer's cookie, how much was placed,
// and the DTO status, for core/ to turn into a DAT_DTO_COMPLETION_EVENT on the EP's recv_evd.
#pragma once

#include <dat2/udat.h>

#include <cstdint>

#include "base/receive_extension.h"

namespace softdat::srq {

// What the transport learned about a message besides its length, carried to its completion.
struct RecvNotes {
  bool solicited = false;            // Send with Solicited Event
  bool invalidated = false;          // Send with Invalidate
  std::uint32_t invalidated_key = 0;
  ReceiveExtension extension;  // immediate data, a datagram's source
};

struct RecvCompletion {
  DAT_DTO_COOKIE cookie;
  std::uint32_t slot;  // from_srq: hand back to SrqPool::Reaped once the consumer dequeued it
  std::uint32_t msn;
  std::uint64_t transferred_length;  // not defined by the spec unless status is DAT_DTO_SUCCESS
  DAT_DTO_COMPLETION_STATUS status;
  RecvNotes notes{};
  DAT_COMPLETION_FLAGS post_flags = DAT_COMPLETION_DEFAULT_FLAG;  // what the post asked for
  bool from_srq = false;  // the buffer stays outstanding on its SRQ until reaped
  // Whether another completion may be ready behind this one. False only when none was as this one
  // was taken: its caller need not ask again (a completion readied later comes with its own
  // delivery request).
  bool more = true;
};

}  // namespace softdat::srq
