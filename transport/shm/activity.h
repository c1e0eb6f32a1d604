// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Which of an IA's same-host connections have something new from their peers: one bit per
// connection (its slot, which the IA hands its peer in the handshake) in a memfd the IA shares
// read-write with every peer. A peer sets the bit after it publishes records into, or consumes
// records from, that connection's rings; the IA takes a word's bits and polls those
// connections. Without it the IA learns the same only by looking at every connection's rings:
// about 60 ns each, 60 µs per poll at 1,000 connections (an SRQ fan-in server spent a third of
// its time there).
//
// The bits are hints, never the only way: a peer may set bits it has no business with (a
// spurious poll) or clear others' (a hostile one); the IA also looks at every connection in
// turn, a few per poll, so any connection is looked at within a bounded number of polls
// whatever the bits say.
//
// Ordering (a Dekker pair, as the doorbell's): the peer publishes its records, issues a seq_cst
// fence, then loads the word and sets the bit if clear; the IA takes the word with a seq_cst
// exchange, then reads the rings. Either the IA's exchange comes after the bit was set (it polls
// the connection and sees the records) or the peer's load comes after the exchange (it sees the
// bit clear and sets it again).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "transport/shm/shared_memory.h"

namespace softdat::transport::shm {

inline constexpr std::uint32_t kActivitySlots = 1u << 16;
inline constexpr std::uint32_t kNoActivitySlot = 0xffffffffu;  // the connection has no bit: looked at in turn only
inline constexpr std::size_t kActivityWords = kActivitySlots / 64;
inline constexpr std::size_t kActivityBytes = kActivityWords * sizeof(std::uint64_t);

// Sets `slot`'s bit (slot < kActivitySlots) of the table at `words` unless it is set: the load
// first, so a bit already set (nobody took it) costs no write to a line other processes read.
// The caller issued a seq_cst fence after what it published.
inline void MarkSlot(std::atomic<std::uint64_t>* words, std::uint32_t slot) {
  std::atomic<std::uint64_t>& word = words[slot / 64];
  const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
  if ((word.load(std::memory_order_relaxed) & bit) == 0) word.fetch_or(bit, std::memory_order_release);
}

// The IA's table.
class ActivityTable {
 public:
  // kInsufficientResources when the memfd cannot be made.
  static Status Create(std::unique_ptr<ActivityTable>& table);

  // The memfd a peer maps read-write (pass it over the rendezvous socket; it stays ours).
  int fd() const { return fd_.get(); }
  // Word `word`'s bits now (a relaxed load: a look before Take).
  std::uint64_t Peek(std::size_t word) const { return Word(word).load(std::memory_order_relaxed); }
  // Takes word `word`'s bits (seq_cst: see the ordering above).
  std::uint64_t Take(std::size_t word) { return Word(word).exchange(0, std::memory_order_seq_cst); }
  // Sets bits of word `word` again (what a poll took but left for later, or work left behind).
  void Give(std::size_t word, std::uint64_t bits) { Word(word).fetch_or(bits, std::memory_order_release); }
  // Marks one of the IA's own connections, as a peer would (a note its consumer threads left).
  void Mark(std::uint32_t slot) { MarkSlot(&Word(0), slot); }

 private:
  ActivityTable() = default;
  std::atomic<std::uint64_t>& Word(std::size_t word) const {
    return reinterpret_cast<std::atomic<std::uint64_t>*>(mapping_.data())[word];
  }
  UniqueFd fd_;
  Mapping mapping_;
};

// A peer's table, mapped read-write.
class ActivityView {
 public:
  // Maps `fd` (a peer's ActivityTable memfd): refused unless sealed and exactly the table's size.
  static Status Open(int fd, std::unique_ptr<ActivityView>& view);
  // Sets `slot`'s bit (slot < kActivitySlots) unless it is set. The caller issued a seq_cst fence
  // after what it published.
  void Mark(std::uint32_t slot) { MarkSlot(reinterpret_cast<std::atomic<std::uint64_t>*>(mapping_.data()), slot); }

 private:
  Mapping mapping_;
};

}  // namespace softdat::transport::shm
