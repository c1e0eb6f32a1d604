// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One consumer process of the fault and soak suites, through the stock registry and the DAT API
// only: an IA with an SRQ, memory exposed to the peer for its RDMA Reads (fixed, self-checking
// messages) and Writes, and a workload run over one connection at a time in both directions at
// once — Sends into the peer's SRQ, RDMA Writes announced by the Send that follows them (so the
// receiver knows which bytes are placed), RDMA Reads kept outstanding. Every DTO goes through a
// DtoLedger; every delivered byte is checked (testing/ledger/message.h).
//
// A connection ends one of two ways:
//  - clean: each side has sent its messages, seen its own complete, read what it was to read, and
//    received the peer's last message (a "done" Send); the active side then disconnects
//    gracefully;
//  - broken: any other end (a killed peer, a fault on the path). The node stops posting, reaps
//    until every DTO it posted has completed or been flushed (bounded), waits for the SRQ EP's
//    DAT_ASYNC_ERROR_EP_BROKEN, frees the EP and checks the SRQ's counts.
// Either way the round's report says what the ledger saw.
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "testing/ledger/dto_ledger.h"
#include "testing/ledger/process_resources.h"

namespace softdat::testing::faults {

struct PeerOptions {
  std::string ia_name = "softdat-tcp";
  std::uint32_t id = 1;             // this node's stream id (the peer learns it at connect)
  std::uint32_t messages = 200;     // data Sends each way per connection
  std::uint32_t min_size = 64;      // Send sizes vary in [min_size, max_size]
  std::uint32_t max_size = 8192;
  std::uint32_t window = 16;        // Sends (and Writes) outstanding at once
  std::uint32_t srq_size = 64;      // SRQ buffers, each max_size bytes
  bool writes = true;               // RDMA Writes, one before each Send while credits allow
  std::uint32_t write_size = 8192;
  std::uint32_t write_slots = 16;   // the peer writes into this many slots of ours
  bool reads = true;                // RDMA Reads of the peer's exposed slots, messages / 2 of them
  std::uint32_t read_size = 65536;
  std::uint32_t read_slots = 8;     // slots we expose for the peer's Reads
  std::uint32_t reads_outstanding = 4;
  DAT_TIMEOUT connect_timeout_us = 20'000'000;
  std::uint32_t drain_ms = 30'000;  // after a break: how long every DTO has to complete
  std::uint32_t idle_ms = 60'000;   // a connection with no event for this long is a hang
  std::uint32_t progress_every = 0; // print a progress line every N received messages (0: never)
  bool srq_churn = false;           // resize the SRQ and re-arm its low watermark under traffic
};

// What one connection did.
struct RoundReport {
  bool established = false;
  bool clean = false;               // ended the clean way (see above)
  std::string end;                  // how it ended: "clean", or the event / status that broke it
  std::uint64_t sent = 0;           // data Sends completed successfully
  std::uint64_t received = 0;       // peer messages received intact
  std::uint64_t writes_verified = 0;  // peer Writes found intact where announced
  std::uint64_t reads_verified = 0;
  std::uint64_t low_watermark_events = 0;
  std::vector<std::string> violations;  // the ledger's and the node's own findings
  ProcessResources resources;       // after the EP was freed
};

class PeerNode {
 public:
  explicit PeerNode(const PeerOptions& options);
  ~PeerNode();
  PeerNode(const PeerNode&) = delete;
  PeerNode& operator=(const PeerNode&) = delete;

  // Opens the IA and creates everything that outlives a connection. False with `error`.
  bool Open(std::string& error);
  // Creates the PSP (port 0: any); `port` gets the one used.
  bool Listen(DAT_CONN_QUAL& port, std::string& error);
  // One connection, passive (waits up to `wait_us` for a request) or active.
  RoundReport Accept(DAT_TIMEOUT wait_us);
  RoundReport Connect(const std::string& ipv4, DAT_CONN_QUAL port);
  // Frees everything; false (with the reason in `error`) if a DAT call refused.
  bool Close(std::string& error);

  // Called between events with the connection's state; may print (the "status" command).
  std::function<void(const std::string& status)> on_idle;
  // Asked between events: a line of input to act on (empty: none). "status" is answered.
  std::function<std::string()> poll_command;
  // Called every progress_every received messages.
  std::function<void(const RoundReport& so_far)> on_progress;

  const DtoLedger& ledger() const { return ledger_; }

 private:
  struct Region;
  struct Connection;

  bool Register(Region& region, std::size_t bytes, DAT_MEM_PRIV_FLAGS privileges, std::string& error);
  bool CreateEp(DAT_EP_HANDLE& ep, std::string& error);
  RoundReport Run(DAT_EP_HANDLE ep, const void* peer_data, std::size_t peer_data_size, bool active);
  bool PostSrqBuffer(std::uint32_t slot);
  void RefillSrq();
  void ChurnSrq(RoundReport& report);
  std::string Status(const Connection& c) const;
  void FillPrivateData(std::vector<std::uint8_t>& out) const;

  PeerOptions options_;
  DtoLedger ledger_;
  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE dto_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE connect_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE cr_evd_ = DAT_HANDLE_NULL;
  DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
  DAT_SRQ_HANDLE srq_ = DAT_HANDLE_NULL;
  std::vector<Region*> regions_;
  Region* recv_ = nullptr;        // SRQ buffers
  Region* send_ = nullptr;        // Send sources, window slots
  Region* write_src_ = nullptr;   // Write sources, window slots
  Region* read_sink_ = nullptr;   // where our Reads land
  Region* exposed_read_ = nullptr;   // the peer Reads these (fixed messages)
  Region* exposed_write_ = nullptr;  // the peer Writes these
  std::vector<bool> srq_slot_posted_;
  std::uint32_t srq_capacity_ = 0;  // the SRQ's max_recv_dtos now (resized by churn)
  std::uint32_t low_watermark_ = 0;
  std::uint64_t connections_ = 0;
  std::uint64_t churns_ = 0;
};

// The stream id of the fixed messages a node with `id` exposes for Reads.
inline std::uint32_t ReadStream(std::uint32_t id) { return id | 0x40000000u; }
// The stream id of the messages a node with `id` writes into its peer.
inline std::uint32_t WriteStream(std::uint32_t id) { return id | 0x20000000u; }

}  // namespace softdat::testing::faults
