// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// SRQ buffers stay outstanding until the consumer reaps their completion (dat_srq_resize counts
// "completions generated but not yet reaped"). A receive completion that holds an SRQ buffer is
// marked with its SRQ and slot in provider-private words of the event, and every way an event
// leaves an EVD (dequeue, wait, drop on overflow, EVD destruction) releases the buffer here.
#pragma once

#include <dat2/udat.h>

#include <cstdint>

namespace softdat::core {

class Srq;

// Marks `event` as holding buffer `slot` of `srq`.
void MarkSrqBuffer(DAT_EVENT& event, const Srq& srq, std::uint32_t slot);

// Releases the SRQ buffer `event` holds, if any, and clears the mark. Harmless for any other
// event, and for an SRQ freed meanwhile.
void ReleaseSrqBuffer(DAT_EVENT& event);

}  // namespace softdat::core
