// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One softdat-tcp endpoint set up through core like a consumer's (IA, PZs, LMRs, EVDs, an SRQ or
// the EP's own receive queue, the EP) but connected over one end of a socketpair instead of a
// TCP socket: the connection fuzzer's target, and either side of the seed capture (capture/).
// Everything is deterministic: progress=poll (nothing moves but in Step, on the caller's
// thread), a fresh IA per world (so its memory keys are the same every time) and registered
// memory at a fixed address (so a captured RDMA Write names the same STag and tagged offset the
// fuzzer's next world has). Memory outside the buffers is guarded: ASan-poisoned where ASan is
// on, and checked for its fill pattern by CheckGuards always.
#pragma once

#include <dat2/udat.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "transport/tcp/wire.h"

namespace softdat::fuzz {

namespace wire = transport::tcp::wire;

struct WorldConfig {
  bool active = false;        // connects (sends the MPA Request) instead of accepting
  bool crc = true;            // the IA's crc= option (and the C bit of a passive world's peer Request)
  bool srq = false;           // receive buffers come from an SRQ
  std::uint32_t buffers = 4;  // receive buffers posted at the start (at most kRecvBuffers)
  // Once established: our own Sends, RDMA Write and RDMA Read to the peer (0: none of that kind).
  std::uint32_t sends = 0;         // how many Sends of send_bytes each
  std::uint32_t send_bytes = 48;   // at most kMaxSendBytes
  std::uint32_t write_bytes = 0;   // one RDMA Write to the peer's window, at most kMaxWriteBytes
  std::uint32_t read_bytes = 0;    // RDMA Reads from the peer's window, at most kMaxReadBytes each
  std::uint32_t reads = 1;         // how many (all into the one sink)
  std::uint32_t writes = 1;        // how many RDMA Writes of write_bytes
  bool bad_key = false;            // the Writes and Reads name a key the peer never gave (it must refuse)
  bool bind_rmr = false;           // bind a remote-read-only RMR over part of the window
  // The DAT IB extensions too: an RDMA Write with immediate data (kImmediateWriteBytes, which
  // takes one of the peer's receive buffers), a Fetch and Add and a Compare and Swap on the
  // peer's window (their results land in kAtomicResults).
  bool extensions = false;
};
inline constexpr std::uint32_t kImmediateWriteBytes = 32;

inline constexpr std::uint32_t kRecvBuffers = 8;
// The receive buffers' sizes, in posting order: the first takes a Send of 16 KiB and more (placed
// as it arrives without CRC), the others cut messages short.
inline constexpr std::uint32_t kRecvSizes[kRecvBuffers] = {20000, 256, 64, 1024, 16, 4096, 128, 2048};
// Receive buffer i's offset in the receive area: each starts on a page, with at least 256 bytes
// of guard after it.
constexpr std::size_t RecvOffset(std::uint32_t i) {
  std::size_t at = 0;
  for (std::uint32_t j = 0; j < i; ++j) at = (at + kRecvSizes[j] + 0x100 + 0xFFF) & ~std::size_t{0xFFF};
  return at;
}

// Where a world's memory is, as offsets from its base.
struct Layout {
  static constexpr std::size_t kWindow = 0;              // LMR, every privilege (atomics too): the peer's RDMA target
  static constexpr std::size_t kWindowSize = 0x10000;
  static constexpr std::size_t kRmrOffset = 0x8000;       // the RMR window (bind_rmr): inside kWindow
  static constexpr std::size_t kRmrSize = 0x1000;
  static constexpr std::size_t kRecv = 0x11000;          // LMR, local write only: receive buffers
  static constexpr std::size_t kRecvArea = RecvOffset(kRecvBuffers);
  static constexpr std::size_t kLocal = kRecv + kRecvArea + 0x1000;  // LMR, local write only: our Send and Write
  static constexpr std::size_t kLocalSize = 0x10000;      // sources, our Read's sink
  static constexpr std::size_t kSendSource = kLocal;
  static constexpr std::size_t kWriteSource = kLocal + 0x4000;
  static constexpr std::size_t kReadSink = kLocal + 0xC000;
  static constexpr std::size_t kAtomicResults = kReadSink + 0x1000;  // 2 x 8 bytes after the largest sink
  static constexpr std::size_t kOtherPz = kLocal + kLocalSize + 0x1000;  // LMR of a second PZ, every privilege
  static constexpr std::size_t kOtherPzSize = 0x1000;
  static constexpr std::size_t kSize = kOtherPz + kOtherPzSize + 0x1000;
};
inline constexpr std::uint32_t kMaxSendBytes = 0x4000;
inline constexpr std::uint32_t kMaxWriteBytes = 0x8000;
inline constexpr std::uint32_t kMaxReadBytes = 0x1000;

// Fixed bases: a passive world and an active one may exist at once (the capture). Low addresses,
// where every sanitizer lets a program map memory (ASan's low memory ends at 2 GiB, TSan's first
// application range at 512 GiB) and nothing else maps by itself.
inline constexpr std::uintptr_t kPassiveBase = 0x40000000;
inline constexpr std::uintptr_t kActiveBase = 0x48000000;
// The Request a passive world's peer sent (the listener's part, done by the harness).
wire::MpaFrame PeerRequest(bool crc);

class World {
 public:
  // Opens the IA and everything on it; aborts on a setup failure (a harness bug).
  static std::unique_ptr<World> Open(const WorldConfig& config);
  ~World();  // abrupt IA close: everything goes
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Passive: a connection request arrives over `fd` (the harness's end of the pair is the
  // peer), with `request` and its private data as the listener read them (PeerRequest when
  // null), and the EP accepts it. Active: the EP connects over `fd`. Takes `fd` over.
  void Start(int fd, const wire::MpaFrame* request = nullptr, std::span<const std::uint8_t> private_data = {});
  // One round of progress: the transport (a few calls, so Asio's handlers run too) and every EVD
  // drained; receive buffers are reposted as they complete, our operations posted once
  // established. True if anything happened.
  bool Step();
  // Posts one more receive buffer from those not posted at the start; false when none is left.
  bool PostSpareBuffer();
  // dat_ep_disconnect, graceful or abrupt.
  void Disconnect(bool graceful);
  bool established() const { return established_; }
  bool ended() const { return ended_; }
  // What the consumer saw: receive completions (successful ones), request completions, and the
  // connection event that ended it (0 while none did).
  std::uint32_t recvs_done() const { return recvs_done_; }
  std::uint32_t requests_done() const { return requests_done_; }
  DAT_EVENT_NUMBER end_event() const { return end_event_; }

  std::uintptr_t base() const { return base_; }
  // What the peer may name: the window's STag (every privilege), the RMR's (read only; 0 until
  // bound), the other PZ's, and the receive LMR's (no remote access).
  std::uint32_t window_key() const { return window_key_; }
  std::uint32_t rmr_key() const { return rmr_key_; }
  std::uint32_t other_pz_key() const { return other_pz_key_; }
  std::uint32_t recv_key() const { return recv_key_; }
  // The peer's window, for our own RDMA Write and Read; set before Step establishes.
  void SetPeerWindow(std::uint32_t key, std::uint64_t address) {
    peer_key_ = key;
    peer_address_ = address;
  }

  // Aborts if any guard byte of the world at `base` (whose Read sink was `read_bytes` long)
  // changed; ASan reports such a write itself when it is on. Also after the world is gone:
  // nothing may write late either.
  static void CheckGuards(std::uintptr_t base, std::uint32_t read_bytes);

  struct Impl;

 private:
  explicit World(const WorldConfig& config);
  void Drain();
  void OnEstablished();
  void PostExtensions();
  void Repost(std::uint64_t cookie);

  WorldConfig config_;
  std::uintptr_t base_ = 0;
  std::unique_ptr<Impl> impl_;
  bool established_ = false;
  bool ended_ = false;
  std::uint32_t recvs_done_ = 0;
  std::uint32_t requests_done_ = 0;
  DAT_EVENT_NUMBER end_event_{};
  std::uint32_t next_spare_ = 0;
  std::uint32_t window_key_ = 0, rmr_key_ = 0, other_pz_key_ = 0, recv_key_ = 0;
  std::uint32_t peer_key_ = 0;
  std::uint64_t peer_address_ = 0;
};

}  // namespace softdat::fuzz
