// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One connection's window of MSNs on an SRQ: which buffers it took, under which MSN, and when
// each one's completion may be generated. Completions of one connection must follow the remote
// Send order (the MSN order) even when messages finish placement out of order, so the window is a
// small ring of MSNs, preallocated when the connection begins, indexed by MSN modulo its size.
//
// The window is passive: all of its state changes happen inside SrqPool calls, under the pool's
// lock, which is what makes dat_ep_recv_query one consistent snapshot. It therefore has no public
// mutators; an EP's SrqAccount (srq_account.h) makes one per connection and passes it to the
// pool. A closed window (the connection ended) takes no buffers again: a new connection gets a
// new window.
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "srq/recv_completion.h"

namespace softdat::srq {

class SrqPool;

class MsnWindow {
 public:
  // Largest MSN window: the most messages one connection may have in flight past the oldest one
  // whose completion is not generated yet.
  static constexpr std::uint32_t kMaxWindow = 1u << 16;

  // `window` must be a power of two in [1, kMaxWindow] (else kInvalidParameter). The first
  // message the connection will carry has MSN `first_expected_msn` (1 for iWARP).
  static Status Create(std::uint32_t window, std::uint32_t first_expected_msn,
                       std::unique_ptr<MsnWindow>& out);

  MsnWindow(const MsnWindow&) = delete;
  MsnWindow& operator=(const MsnWindow&) = delete;

  // Immutable: the number of MSNs tracked, and so the most completions one Complete or
  // FlushEndpoint call can produce (their output arrays need this many entries).
  std::uint32_t window() const { return window_; }

 private:
  friend class SrqPool;

  enum class EntryState : std::uint8_t { kEmpty, kHeld, kPlaced };
  // 32 bytes: a window is preallocated per connection (256 entries for 10,000 connections in the
  // scale test), so its entry stays small. A placed length fits 32 bits (core keeps every message
  // below 2^32 bytes) and a completion status 8.
  struct Entry {
    std::uint32_t length = 0;
    std::uint32_t slot = 0;
    RecvNotes notes{};
    std::uint8_t status = DAT_DTO_SUCCESS;
    EntryState state = EntryState::kEmpty;
  };
  static_assert(sizeof(Entry) == 32);
  // A completion leaving the window, in MSN order.
  struct Ready {
    std::uint32_t msn;
    std::uint32_t slot;
    std::uint64_t length;
    DAT_DTO_COMPLETION_STATUS status;
    RecvNotes notes;
  };
  // kFull: `msn` is ahead of the window because the completions before it are not generated yet
  // (placed, waiting for the EP's delivery pass); it may take a buffer once they are.
  enum class Lookup : std::uint8_t { kFree, kHeld, kFull, kRefused };

  MsnWindow(std::uint32_t window, std::uint32_t first_expected_msn,
                      std::unique_ptr<Entry[]> entries);

  // Everything below runs under the owning pool's lock.

  // Whether `msn` may take a buffer now (kFree), already holds one (kHeld, `slot` set), must wait
  // for the completions before it to leave the window (kFull), or must not take one: already
  // placed or delivered, or the window is closed.
  Lookup Find(std::uint32_t msn, std::uint32_t& slot) const;
  // Records that `msn` holds pool slot `slot` (after Find said kFree).
  void Allocate(std::uint32_t msn, std::uint32_t slot);
  // The slot `msn` holds if its message is not placed yet.
  bool HeldUnplaced(std::uint32_t msn, std::uint32_t& slot) const;
  // The message for `msn` is fully placed (after HeldUnplaced said yes).
  void Place(std::uint32_t msn, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
             const RecvNotes& notes);
  // Disconnect: the window takes no more buffers and PopNext flushes.
  void Close() { closed_ = true; }
  // The next completion in MSN order: while open, only if its message is placed; once closed,
  // every held buffer, placed ones with their status and the others DAT_DTO_ERR_FLUSHED (MSNs
  // never allocated, the gaps, are skipped).
  bool PopNext(Ready& ready) { return closed_ ? PopForFlush(ready) : PopInOrder(ready); }
  bool PopInOrder(Ready& ready);
  bool PopForFlush(Ready& ready);

  // Buffers taken whose completion is not generated yet (nbufs_allocated).
  std::uint32_t held() const { return held_; }
  // Latest allocated MSN minus latest MSN whose completion was generated (bufs_alloc_span).
  // Every held MSN lies in that range, so held() <= span() always.
  std::uint32_t span() const { return latest_allocated_ - last_delivered_; }

  // Distance of `msn` past the last delivered one: 1 for the next expected message. MSNs wrap
  // at 2^32, so this is modular like everything MSN here.
  std::uint32_t Ahead(std::uint32_t msn) const { return msn - last_delivered_; }
  bool InWindow(std::uint32_t msn) const { return Ahead(msn) - 1 < window_; }
  Entry& EntryOf(std::uint32_t msn) { return entries_[msn & (window_ - 1)]; }
  const Entry& EntryOf(std::uint32_t msn) const { return entries_[msn & (window_ - 1)]; }

  const std::uint32_t window_;
  const std::unique_ptr<Entry[]> entries_;
  std::uint32_t last_delivered_;    // latest MSN whose completion was generated
  std::uint32_t latest_allocated_;  // latest MSN holding a buffer (== last_delivered_ if none)
  std::uint32_t held_ = 0;
  bool closed_ = false;              // flushed: takes no more buffers
  const SrqPool* pool_ = nullptr;    // the pool this window is attached to
};

}  // namespace softdat::srq
