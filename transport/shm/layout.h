// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The bytes two softdat processes share for one connection, and how each word of them is read
// and written. The connection segment (one memfd, created by the active side, mapped read-write
// by both) holds a header, each side's control lines and one ring per direction; README.md has
// the picture. Everything read from it is the peer's word: the readers (ring.h, key_table.h)
// copy what they read once, check it and use only the copy.
//
// Shared words are plain integers accessed through std::atomic_ref (the memory is the kernel's
// zero-filled pages, never a constructed C++ object); every one is naturally aligned and at most
// 8 bytes, so a read-only mapping can load it (no 16-byte atomics, which would write).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace softdat::transport::shm {

inline constexpr std::size_t kLine = 64;    // cache line: shared words owned by different sides never share one
inline constexpr std::size_t kPage = 4096;

// Ring sizes a connection may ask for (each a power of two).
inline constexpr std::uint32_t kMinRingBytes = 4096;
inline constexpr std::uint32_t kMaxRingBytes = 16u << 20;

inline constexpr std::uint64_t kSegmentMagic = 0x31766d6873646473ull;  // "sdshmv1" (little-endian)
inline constexpr std::uint32_t kLayoutVersion = 2;  // 2: the IB extensions' records

// Loads and stores of shared words.
template <typename T>
inline T LoadAcquire(const T* word) {
  return std::atomic_ref<T>(*const_cast<T*>(word)).load(std::memory_order_acquire);
}
template <typename T>
inline T LoadRelaxed(const T* word) {
  return std::atomic_ref<T>(*const_cast<T*>(word)).load(std::memory_order_relaxed);
}
template <typename T>
inline void StoreRelease(T* word, T value) {
  std::atomic_ref<T>(*word).store(value, std::memory_order_release);
}
template <typename T>
inline void StoreRelaxed(T* word, T value) {
  std::atomic_ref<T>(*word).store(value, std::memory_order_relaxed);
}

// Side 0 is the active side (it created the segment), side 1 the passive side. Ring r carries
// records from side r to side 1 - r.
inline constexpr int kActive = 0;
inline constexpr int kPassive = 1;

// The sizes of the two rings: the geometry both sides agree on in the handshake.
struct Geometry {
  std::uint32_t ring_bytes[2] = {0, 0};
};

constexpr bool ValidRingBytes(std::uint32_t bytes) {
  return bytes >= kMinRingBytes && bytes <= kMaxRingBytes && (bytes & (bytes - 1)) == 0;
}
constexpr bool ValidGeometry(const Geometry& g) { return ValidRingBytes(g.ring_bytes[0]) && ValidRingBytes(g.ring_bytes[1]); }

// One side's control lines. Each word is written by its owner only and read by the peer; each on
// a line of its own, so that the words written per message (consumed) never evict the ones the
// peer polls for other reasons.
struct alignas(kLine) SideControl {
  // Bytes of the ring this side receives that it has consumed (its head). The peer's producer
  // reads it to find room and to complete Sends its peer pulled.
  alignas(kLine) std::uint64_t consumed;
  // Odd while this side's one-sided access into the peer's memory (cross-memory attach) is in
  // flight: bumped to odd before the access checks the peer's key table and ended word, to even
  // after the copy. The peer's revocations wait for an odd value to change (key_table.h).
  alignas(kLine) std::uint64_t access;
  // 0 while this side may be accessed; 1 once its connection ended. A one-sided access by the
  // peer checks it after announcing itself (the rule of key_table.h).
  alignas(kLine) std::uint32_t ended;
  // MSN of a pulled Send whose pull the kernel refused this side (0: none): the peer sends that
  // message's bytes again through the ring.
  alignas(kLine) std::uint32_t pull_refused;
};
static_assert(sizeof(SideControl) == 4 * kLine);

// The segment's first line, written by its creator before the fd is passed and never again.
struct alignas(kLine) SegmentHeader {
  std::uint64_t magic;
  std::uint64_t nonce;  // random: the cross-memory-attach probe compares it (cma.h)
  std::uint32_t version;
  std::uint32_t ring_bytes[2];
};

// Where things are in a segment of geometry `g`.
inline constexpr std::size_t kControlOffset = kLine;  // SideControl[2]
inline constexpr std::size_t kRingsOffset = kPage;    // ring 0, then ring 1
static_assert(kControlOffset + 2 * sizeof(SideControl) <= kRingsOffset);

constexpr std::size_t RingOffset(const Geometry& g, int ring) {
  return kRingsOffset + (ring == 0 ? 0 : g.ring_bytes[0]);
}
constexpr std::size_t SegmentBytes(const Geometry& g) {
  return kRingsOffset + std::size_t{g.ring_bytes[0]} + g.ring_bytes[1];
}

// A record in a ring. Records start at multiples of kLine and never wrap: one that does not fit
// before the ring's end follows a pad record that fills it. The producer writes the header and
// payload, then `size` last (release): a nonzero size at the consumer's head is a published
// record. Before publishing it, the producer writes 0 into the size word where the next record
// will start (the ring always keeps one line free for it), so the consumer never mistakes older
// bytes there for a record.
enum class Opcode : std::uint8_t {
  kPad = 1,          // skip to the ring's end
  kSend = 2,         // a piece of a Send: `offset` bytes of message `msn` came before it
  kSendPull = 3,     // a whole Send the receiver pulls from the sender's memory: payload is PullSegment[segments]
  kWrite = 4,        // a piece of an RDMA Write: `length` bytes for STag `key` at tagged offset `offset`
  kReadRequest = 5,  // RDMA Read number `msn`: `total` bytes of STag `key` at tagged offset `offset`
  kReadResponse = 6, // a piece of the response to Read number `msn`, `offset` bytes into it
  // The DAT IB extensions. An RDMA Write with immediate data is the Write (kWrite records or a
  // one-sided copy), then kImmediate: Send MSN `msn`, which takes a receive buffer as a Send does
  // and places nothing; `key` is the immediate, `total` the Write's length.
  kImmediate = 7,
  // A 64-bit atomic, numbered with the Reads (`msn`, the IRD and ORD are shared): STag `key`,
  // tagged offset `offset`, payload AtomicPayload; kFlagCompareSwap for Compare and Swap. The
  // target executes it (remote_atomic.h: atomic against atomics over any connection) and answers
  // kAtomicResponse: Read number `msn`, payload the 8-byte original value.
  kAtomicRequest = 8,
  kAtomicResponse = 9,
};
inline constexpr Opcode kLastOpcode = Opcode::kAtomicResponse;

enum RecordFlags : std::uint8_t {
  kFlagLast = 1,        // the message's last piece
  kFlagSolicited = 2,   // Send with Solicited Event
  kFlagInvalidate = 4,  // Send with Invalidate of STag `key`
  kFlagCompareSwap = 8, // kAtomicRequest: Compare and Swap (else Fetch and Add)
};

// kAtomicRequest's payload: Fetch and Add adds `compare_add`; Compare and Swap stores `swap` if
// the 8 bytes equal `compare_add`.
struct AtomicPayload {
  std::uint64_t compare_add;
  std::uint64_t swap;
};
static_assert(sizeof(AtomicPayload) == 16);

struct RecordHeader {
  std::uint32_t size;  // the record's bytes, header included: a multiple of kLine (0: not published)
  Opcode opcode;
  std::uint8_t flags;
  std::uint16_t segments;  // kSendPull: PullSegment count
  std::uint32_t msn;       // Send: the MSN (from 1); Read Request and Response: the Read's number (from 1)
  std::uint32_t length;    // payload bytes in this record
  std::uint32_t key;       // Write: sink STag; Read Request: source STag; Send with Invalidate: its STag
  std::uint32_t total;     // Send and Pull: the message's length; Read Request: the Read's length
  std::uint64_t offset;    // Send, Read Response: offset in the message; Write, Read Request: tagged offset
};
static_assert(sizeof(RecordHeader) == 32);
inline constexpr std::uint32_t kHeaderBytes = sizeof(RecordHeader);

// One piece of the sender's memory a kSendPull names (its own address space).
struct PullSegment {
  std::uint64_t address;
  std::uint64_t length;
};
static_assert(sizeof(PullSegment) == 16);
inline constexpr std::uint16_t kMaxPullSegments = 64;

constexpr std::uint32_t RecordBytes(std::uint32_t payload) {
  return (kHeaderBytes + payload + kLine - 1) & ~std::uint32_t{kLine - 1};
}

// The largest payload one record carries in a ring of `ring_bytes`: records stay small against
// the ring, so that a stream of them pipelines (a quarter of the ring, at most 64 KiB).
constexpr std::uint32_t MaxRecordPayload(std::uint32_t ring_bytes) {
  const std::uint32_t quarter = ring_bytes / 4;
  const std::uint32_t cap = quarter < 65536 ? quarter : 65536;
  return cap - kHeaderBytes;
}

}  // namespace softdat::transport::shm
