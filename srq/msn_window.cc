// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// MSN bookkeeping of one endpoint on an SRQ: the window ring, in-order delivery and flush order.
#include "srq/msn_window.h"

#include <bit>
#include <new>
#include <utility>

namespace softdat::srq {

Status MsnWindow::Create(std::uint32_t window, std::uint32_t first_expected_msn,
                                   std::unique_ptr<MsnWindow>& out) {
  if (window == 0 || window > kMaxWindow || !std::has_single_bit(window))
    return Status(Code::kInvalidParameter, Detail::kNone);
  try {
    auto entries = std::make_unique<Entry[]>(window);
    out.reset(new MsnWindow(window, first_expected_msn, std::move(entries)));
  } catch (const std::bad_alloc&) {
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  return Status::Ok();
}

MsnWindow::MsnWindow(std::uint32_t window, std::uint32_t first_expected_msn,
                                         std::unique_ptr<Entry[]> entries)
    : window_(window),
      entries_(std::move(entries)),
      // Before any message, the "latest completed" MSN is the one before the first expected.
      last_delivered_(first_expected_msn - 1),
      latest_allocated_(first_expected_msn - 1) {}

MsnWindow::Lookup MsnWindow::Find(std::uint32_t msn,
                                                      std::uint32_t& slot) const {
  if (closed_) return Lookup::kRefused;
  if (!InWindow(msn)) {
    // Ahead of the window, not behind it (MSNs are modular): the transport hands out MSNs in
    // sequence, so this one waits only for the completions before it to be generated.
    const std::uint32_t ahead = Ahead(msn);
    return ahead != 0 && ahead < (1u << 31) ? Lookup::kFull : Lookup::kRefused;
  }
  const Entry& entry = EntryOf(msn);
  switch (entry.state) {
    case EntryState::kEmpty: return Lookup::kFree;
    case EntryState::kHeld: slot = entry.slot; return Lookup::kHeld;
    case EntryState::kPlaced: break;
  }
  return Lookup::kRefused;
}

void MsnWindow::Allocate(std::uint32_t msn, std::uint32_t slot) {
  Entry& entry = EntryOf(msn);
  entry.state = EntryState::kHeld;
  entry.slot = slot;
  ++held_;
  if (Ahead(msn) > span()) latest_allocated_ = msn;
}

bool MsnWindow::HeldUnplaced(std::uint32_t msn, std::uint32_t& slot) const {
  if (!InWindow(msn)) return false;
  const Entry& entry = EntryOf(msn);
  if (entry.state != EntryState::kHeld) return false;
  slot = entry.slot;
  return true;
}

void MsnWindow::Place(std::uint32_t msn, std::uint64_t length,
                                DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes) {
  Entry& entry = EntryOf(msn);
  entry.state = EntryState::kPlaced;
  entry.length = static_cast<std::uint32_t>(length);
  entry.status = static_cast<std::uint8_t>(status);
  entry.notes = notes;
}

bool MsnWindow::PopInOrder(Ready& ready) {
  const std::uint32_t next = last_delivered_ + 1;
  Entry& entry = EntryOf(next);
  // The entry for `next` can only belong to `next`: every live MSN is within the window.
  if (entry.state != EntryState::kPlaced) return false;
  ready = Ready{next, entry.slot, entry.length, static_cast<DAT_DTO_COMPLETION_STATUS>(entry.status), entry.notes};
  entry.state = EntryState::kEmpty;
  last_delivered_ = next;
  --held_;
  return true;
}

bool MsnWindow::PopForFlush(Ready& ready) {
  while (last_delivered_ != latest_allocated_) {
    const std::uint32_t next = ++last_delivered_;
    Entry& entry = EntryOf(next);
    if (entry.state == EntryState::kEmpty) continue;  // a gap: no buffer was ever allocated
    const bool placed = entry.state == EntryState::kPlaced;
    ready = Ready{next, entry.slot, placed ? entry.length : 0,
                  placed ? static_cast<DAT_DTO_COMPLETION_STATUS>(entry.status) : DAT_DTO_ERR_FLUSHED, placed ? entry.notes : RecvNotes{}};
    entry.state = EntryState::kEmpty;
    --held_;
    return true;
  }
  return false;
}

}  // namespace softdat::srq
