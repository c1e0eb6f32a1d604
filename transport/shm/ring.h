// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One direction of a connection: a single-producer, single-consumer byte ring of records
// (layout.h) in the shared segment. No lock, no syscall, no allocation: the producer writes a
// record and publishes its size word (release); the consumer polls the size word at its head
// (acquire), copies the header, checks it, uses the payload in place and publishes how far it
// consumed. The producer learns the consumer's progress only when it runs short of room.
//
// Threads: a RingWriter is used by one thread at a time (the connection's io lock), a RingReader
// likewise; the two sides are different processes (or, in tests, threads).
//
// Trust: the reader checks every header it reads (size, alignment, no wrap, opcode, payload
// length); the writer checks the consumed count the reader publishes (never backwards, never
// beyond what was written). A lying peer gets kCorrupt / false, and breaks its own connection.
#pragma once

#include <cstdint>
#include <cstring>

#include "transport/shm/layout.h"
#include "transport/shm/tsan_sync.h"

namespace softdat::transport::shm {

// Asks for the cache line at `line` in a state this core may write without asking again (x86's
// PREFETCHW; a no-op where the instruction is not implemented, and elsewhere). A hint: it
// changes no byte and never faults.
inline void PrefetchForWrite(const void* line) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(line)));
#else
  __builtin_prefetch(line, 1);
#endif
}

class RingWriter {
 public:
  // `ring`: the ring's `bytes` in the segment (a valid ring size); `peer_consumed`: the
  // receiver's consumed word.
  // `tsan_sync`: TsanRingSync's address for this ring (tsan_sync.h), or null.
  void Attach(std::uint8_t* ring, std::uint32_t bytes, const std::uint64_t* peer_consumed, void* tsan_sync = nullptr) {
    tsan_sync_ = tsan_sync;
    ring_ = ring;
    bytes_ = bytes;
    mask_ = bytes - 1;
    peer_consumed_ = peer_consumed;
    tail_ = consumed_ = 0;
  }

  std::uint32_t max_payload() const { return MaxRecordPayload(bytes_); }

  // Room for a record of `payload` bytes (at most max_payload()): its header, to fill (all but
  // `size`) with the payload after it, then Commit. Null when the receiver has not consumed
  // enough yet, or when its consumed count lies (check broken()). Writes the pad record that
  // ends the ring first when the record does not fit before the end.
  RecordHeader* Begin(std::uint32_t payload) {
    if (broken_) return nullptr;
    const std::uint32_t need = RecordBytes(payload);
    const std::uint32_t offset = static_cast<std::uint32_t>(tail_) & mask_;
    const std::uint32_t pad = offset + need > bytes_ ? bytes_ - offset : 0;
    // One line always stays free: the next record's size word, zeroed before this one is
    // published.
    const std::uint64_t wanted = tail_ + pad + need + kLine;
    if (wanted > consumed_ + bytes_ && (!Refresh() || wanted > consumed_ + bytes_)) return nullptr;
    if (pad != 0) {
      auto* header = reinterpret_cast<RecordHeader*>(ring_ + offset);
      header->opcode = Opcode::kPad;
      header->flags = 0;
      header->length = 0;
      // The record after the pad starts at 0, whose size word is zero: the free line rule held
      // it when the ring was last consumed past it (and a fresh ring is zero).
      StoreRelaxed(reinterpret_cast<std::uint32_t*>(ring_), 0u);
      StoreRelease(&header->size, pad);
      tail_ += pad;
    }
    return reinterpret_cast<RecordHeader*>(ring_ + (static_cast<std::uint32_t>(tail_) & mask_));
  }

  static std::uint8_t* Payload(RecordHeader* header) { return reinterpret_cast<std::uint8_t*>(header) + kHeaderBytes; }

  // Publishes the record Begin returned, whose fields but `size` are written, `payload` bytes
  // long. The caller issues the fence that orders it before a check of the peer's sleep word.
  void Commit(RecordHeader* header, std::uint32_t payload) {
    const std::uint32_t need = RecordBytes(payload);
    header->length = payload;
    StoreRelaxed(reinterpret_cast<std::uint32_t*>(ring_ + (static_cast<std::uint32_t>(tail_ + need) & mask_)), 0u);
    StoreRelease(&header->size, need);
    tail_ += need;
    // The line after the next record's size word, which the next Commit zeroes: fetched for
    // writing now, it is this core's by then. Otherwise each Commit's store to a line the
    // reader's core last held waited out that transfer at the next locked instruction (the io
    // lock's release), one line at a time: most of Post's samples in the busy same-host message
    // rate (perf). Only a line no unconsumed record uses (the consumed count as last seen, which
    // lags): one the reader is still to read would be taken from under it.
    if (tail_ + 2 * kLine <= consumed_ + bytes_) PrefetchForWrite(ring_ + (static_cast<std::uint32_t>(tail_ + kLine) & mask_));
  }

  // Reloads the receiver's consumed count. False (and broken() from then on) when it moved
  // backwards or past what was written.
  bool Refresh() {
    if (broken_) return false;
    const std::uint64_t seen = LoadAcquire(peer_consumed_);
    TsanAcquire(tsan_sync_);
    if (seen < consumed_ || seen > tail_) {
      broken_ = true;
      return false;
    }
    consumed_ = seen;
    return true;
  }

  std::uint64_t written() const { return tail_; }
  std::uint64_t consumed() const { return consumed_; }  // as of the last Refresh
  bool broken() const { return broken_; }

 private:
  std::uint8_t* ring_ = nullptr;
  std::uint32_t bytes_ = 0;
  std::uint32_t mask_ = 0;
  const std::uint64_t* peer_consumed_ = nullptr;
  void* tsan_sync_ = nullptr;
  std::uint64_t tail_ = 0;
  std::uint64_t consumed_ = 0;
  bool broken_ = false;
};

class RingReader {
 public:
  enum class Next : std::uint8_t { kEmpty, kRecord, kCorrupt };

  // `ring`: the ring's `bytes` in the segment; `my_consumed`: this side's consumed word.
  void Attach(const std::uint8_t* ring, std::uint32_t bytes, std::uint64_t* my_consumed, void* tsan_sync = nullptr) {
    tsan_sync_ = tsan_sync;
    ring_ = ring;
    bytes_ = bytes;
    mask_ = bytes - 1;
    my_consumed_ = my_consumed;
    head_ = published_ = 0;
  }

  // Whether a record (or pad) is published at the head: one load.
  bool Ready() const { return LoadAcquire(SizeWord()) != 0; }
  // The size word Ready loads, for a lock-free idle check by another thread.
  const std::uint32_t* SizeWord() const {
    return reinterpret_cast<const std::uint32_t*>(ring_ + (static_cast<std::uint32_t>(head_) & mask_));
  }

  // The record at the head, pads skipped: its header copied into `header` and checked (size,
  // alignment, within the ring, opcode known, payload inside the record), `payload` pointing at
  // its `header.length` bytes in the ring. The payload bytes are the peer's to change under us:
  // copy them once, interpret nothing in place but through a copy.
  Next Peek(RecordHeader& header, const std::uint8_t*& payload) {
    for (int pads = 0; pads < 2; ++pads) {
      const std::uint32_t offset = static_cast<std::uint32_t>(head_) & mask_;
      const std::uint32_t size = LoadAcquire(SizeWord());
      if (size == 0) return Next::kEmpty;
      std::memcpy(&header, ring_ + offset, sizeof header);
      header.size = size;  // the value published, not a second read of the peer's word
      if (size % kLine != 0 || size > bytes_ - offset) return Next::kCorrupt;
      if (header.opcode == Opcode::kPad) {
        if (offset == 0 || size != bytes_ - offset) return Next::kCorrupt;
        head_ += size;
        continue;
      }
      if (header.opcode < Opcode::kSend || header.opcode > kLastOpcode) return Next::kCorrupt;
      if (header.length > MaxRecordPayload(bytes_) || size != RecordBytes(header.length)) return Next::kCorrupt;
      payload = ring_ + offset + kHeaderBytes;
      return Next::kRecord;
    }
    return Next::kCorrupt;  // a pad after a pad
  }

  // Past the record Peek returned (not yet published to the peer).
  void Consume(const RecordHeader& header) { head_ += header.size; }
  // Tells the peer how far this side consumed (release), if it moved. True when it moved.
  bool Publish() {
    if (published_ == head_) return false;
    published_ = head_;
    TsanRelease(tsan_sync_);
    StoreRelease(my_consumed_, head_);
    return true;
  }

  std::uint64_t head() const { return head_; }

 private:
  const std::uint8_t* ring_ = nullptr;
  std::uint32_t bytes_ = 0;
  std::uint32_t mask_ = 0;
  std::uint64_t* my_consumed_ = nullptr;
  void* tsan_sync_ = nullptr;
  std::uint64_t head_ = 0;
  std::uint64_t published_ = 0;
};

}  // namespace softdat::transport::shm
