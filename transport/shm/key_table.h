// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The registrations an IA publishes to its same-host peers, so that their RDMA Writes and Reads
// into it complete without its CPU, with the checks a target RNIC makes (STag, bounds, privilege,
// PZ, endpoint binding). The IA owns the table (a memfd it maps read-write, sealed so that peers
// can only map it read-only); each peer maps it read-only (KeyTableView) and checks a key there
// before it attaches to the IA's memory (cma.h). The table's first lines also hold the IA's sleep
// word: odd while nobody polls the IA's connections, when a peer must ring a doorbell.
//
// Layout: line 0 magic, version, capacity, flags; line 1 the sleep epoch; then one line per key slot
// (slot = key >> 8, as core's keys), each behind a sequence lock: the owner writes with the
// sequence odd, readers copy and retry (a bounded number of times: a table that never settles
// grants nothing).
//
// The race between a peer's access and a revocation (dat_lmr_free, dat_rmr_bind and unbind, an
// endpoint's end). A one-sided access is, in the initiator: announce (bump its access word to odd,
// seq_cst) → check the target's ended word and key entry → copy (process_vm_writev/readv) →
// retire (bump to even). A revocation is, in the target: write (the entry's key to 0, or ended to
// 1) → seq_cst fence → wait until every peer's access word that is odd has changed. Both sides
// store and then load with a full fence between, so at least one sees the other: either the
// initiator sees the revocation and refuses, or the target sees the access and waits for it. So
// when Revoke (and Connection's end) returns, no well-behaved peer is or will be copying through
// the revoked key, and the memory may be unmapped. A peer that holds its access word odd longer
// than the bound (a hostile or stopped one) has its connection broken, and the wait ends: the
// bound is what keeps dat_lmr_free from hanging on a peer; a hostile peer gains nothing by it,
// since cross-memory attach already lets it write anywhere in us.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/shm/shared_memory.h"
#include "transport/work.h"

namespace softdat::transport::shm {

// What a key lets a peer do (bits).
enum KeyAccess : std::uint32_t { kRemoteRead = 1, kRemoteWrite = 2 };

// One registration as the owner publishes it.
struct KeyGrant {
  std::uint32_t key = 0;      // the STag (rmr_context or lmr_context): slot << 8 | generation
  std::uint64_t address = 0;  // tagged offsets are virtual addresses, as core's
  std::uint64_t length = 0;
  std::uint32_t access = 0;   // KeyAccess bits
  std::uint32_t pz = 0;       // the protection zone's number, not 0
  std::uint64_t endpoint = 0; // 0: any endpoint of the PZ; else only this endpoint (an RMR bound to it)
};

// Which of the owner's endpoints a peer's access goes to: told by the owner in the handshake.
struct Binding {
  std::uint32_t pz = 0;
  std::uint64_t endpoint = 0;
};

// A peer that may access the owner's memory one-sidedly: the owner's revocations wait on its
// access word (in the connection's segment). Implemented by Connection.
class AccessWatch {
 public:
  virtual const std::uint64_t* access_word() const = 0;
  // The peer held an access open past the bound: break its connection. Called with the table's
  // mutex held; must only leave a note.
  virtual void OnFenceTimeout() = 0;

 protected:
  ~AccessWatch() = default;
};

// Waits until `*word` is even or differs from what it was: the access in flight when the caller
// revoked something is over. False when `bound` passed first.
bool WaitForAccess(const std::uint64_t* word, std::chrono::nanoseconds bound);

class KeyTable {
 public:
  static constexpr std::uint32_t kMaxCapacity = 1u << 20;
  static constexpr std::chrono::milliseconds kDefaultFenceBound{2000};

  // A table of `capacity` key slots (1 to kMaxCapacity). `owner_thread_reads`: the owner has a
  // thread that reads its rings whenever the sleep epoch is even (the IA's progress thread), so a
  // record published then is read within that thread's bound with no call of the owner's
  // consumer (peers may then send small RDMA Writes through the ring: KeyTableView::ReadsRingsNow).
  // kInsufficientResources when the memfd cannot be made.
  static Status Create(std::uint32_t capacity, bool owner_thread_reads, std::unique_ptr<KeyTable>& table);
  ~KeyTable();

  // The memfd a peer maps read-only (pass it over the rendezvous socket; it stays ours).
  int fd() const { return fd_.get(); }
  std::uint32_t capacity() const { return capacity_; }

  // Makes `grant.key` grant `grant` to peers (replacing what its slot granted). Control path;
  // any thread. False when the key's slot is outside the table.
  bool Publish(const KeyGrant& grant);
  // Revokes `key` if its slot grants it, then waits (bounded) until no peer access that may have
  // seen it is in flight. True when it was published.
  bool Revoke(std::uint32_t key);

  // Peers whose accesses revocations wait for. A watch must be removed before its access word's
  // memory goes.
  void AddWatch(AccessWatch* watch);
  void RemoveWatch(AccessWatch* watch);
  void set_fence_bound(std::chrono::nanoseconds bound) { fence_bound_ = bound; }

  // The sleep word: BeginSleep makes the epoch odd (peers ring doorbells from then on) and
  // EndSleep even again. One sleeper at a time (the IA's progress thread). BeginSleep is a
  // sequentially consistent read-modify-write: the caller then checks its connections for work,
  // and any record a peer published before the peer could see the odd epoch is found by that
  // check.
  void BeginSleep();
  void EndSleep();
  // Any thread that read a doorbell from a same-host socket (a consumer's poll may read it before
  // the sleeper's wake-up does, and the sleeper then sleeps on): if the sleeper still sleeps, its
  // epoch moves to a new odd one. A peer rings once per epoch, so without a new one what it
  // publishes next would ring nobody. Called before the caller looks at the rings: the
  // read-modify-write orders the two, so a record a peer published before it saw the new epoch is
  // found by that look.
  void RenewSleep();

 private:
  KeyTable() = default;
  void Write(std::uint32_t slot, const KeyGrant& grant);  // under mutex_
  void FenceAll();                                          // under mutex_

  UniqueFd fd_;
  Mapping mapping_;
  std::uint32_t capacity_ = 0;
  softdat::Mutex mutex_;  // one writer; guards watches_
  std::vector<AccessWatch*> watches_;
  std::chrono::nanoseconds fence_bound_ = kDefaultFenceBound;
};

// A peer's table, mapped read-only. Everything in it is the peer's word: every read is checked.
class KeyTableView {
 public:
  // Maps `fd` (a peer's KeyTable memfd): refused unless it is sealed, sized for the capacity its
  // header states and at most KeyTable::kMaxCapacity slots.
  static Status Open(int fd, std::unique_ptr<KeyTableView>& view);

  // What the owner's table says about an access of `length` bytes at tagged offset `address`
  // under `key`, for the owner's endpoint `binding`: the checks a target RNIC makes, in core's
  // order (key, association, rights, bounds). Lock-free; any thread.
  RemoteCheck Check(std::uint32_t key, std::uint64_t address, std::uint64_t length, RemoteAccess access,
                    const Binding& binding) const;
  // The owner's sleep epoch (odd: ring its doorbell).
  std::uint64_t SleepEpoch() const;
  // Whether a record published now will be read with no call of the owner's consumer, soon: the
  // owner said it has a thread that reads while awake (KeyTable::Create), and the epoch is even.
  // Were the owner about to sleep, it looks at its rings after making the epoch odd (BeginSleep),
  // so what is published now is read either way; a parked thread takes its rings back within
  // its hand-off bound. An owner that lies only delays what its own peers send it.
  bool ReadsRingsNow() const { return owner_thread_reads_ && (SleepEpoch() & 1) == 0; }
  std::uint32_t capacity() const { return capacity_; }

 private:
  Mapping mapping_;
  std::uint32_t capacity_ = 0;
  bool owner_thread_reads_ = false;
};

}  // namespace softdat::transport::shm
