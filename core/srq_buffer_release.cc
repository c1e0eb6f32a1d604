// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The SRQ mark on receive completion events and its release.
#include "core/srq_buffer_release.h"

#include "core/srq.h"

namespace softdat::core {
namespace {

// Provider-private words at the end of event_extension_data: the IB extensions consumers read
// use the first ones, and softdat reports no extension events.
constexpr int kMarkWord = 5;
constexpr int kSrqWord = 6;
constexpr int kSerialWord = 7;
constexpr std::uint64_t kMark = 0x5d5a000000000000ULL;  // high bits: ours; low 32: the slot

}  // namespace

void MarkSrqBuffer(DAT_EVENT& event, const Srq& srq, std::uint32_t slot) {
  event.event_extension_data[kMarkWord] = kMark | slot;
  event.event_extension_data[kSrqWord] = reinterpret_cast<std::uintptr_t>(&srq);
  event.event_extension_data[kSerialWord] = srq.serial();
}

void ReleaseSrqBuffer(DAT_EVENT& event) {
  if (event.event_number != DAT_DTO_COMPLETION_EVENT) return;
  const std::uint64_t mark = event.event_extension_data[kMarkWord];
  if ((mark & 0xFFFFFFFF00000000ULL) != kMark) return;
  const void* handle = reinterpret_cast<const void*>(event.event_extension_data[kSrqWord]);
  Srq* srq = HandleAs<Srq>(handle);
  // A freed SRQ, or a new one in its storage, has nothing of this buffer.
  if (srq != nullptr && srq->serial() == event.event_extension_data[kSerialWord])
    (void)srq->pool().Reaped(static_cast<std::uint32_t>(mark & 0xFFFFFFFFu));
  event.event_extension_data[kMarkWord] = 0;
  event.event_extension_data[kSrqWord] = 0;
  event.event_extension_data[kSerialWord] = 0;
}

}  // namespace softdat::core
