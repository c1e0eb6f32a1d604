// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The setup the demo uses: one IA opened through the stock libdat2 registry, a
// server EP on an SRQ and a client EP with its own receive queue, connected to each other over a
// PSP on the IA's own address. One IA on purpose: with progress=poll a single consumer thread
// waiting on either side's EVDs then drives both ends of the connection.
#pragma once

#include <dat2/udat.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/dat_connect.h"

namespace softdat::tools {

// A page-aligned buffer registered as one LMR with every privilege.
struct Region {
  char* data = nullptr;
  std::size_t size = 0;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lmr_context = 0;
  DAT_RMR_CONTEXT rmr_context = 0;

  DAT_LMR_TRIPLET Local(std::size_t offset, std::size_t length) const;
  DAT_RMR_TRIPLET Remote(std::size_t offset, std::size_t length) const;
};

struct PairConfig {
  std::string ia_name = "softdat-tcp";
  int srq_buffers = 32;       // receive buffers the SRQ can hold
  int client_recv_dtos = 32;  // the client EP's own receive queue (replies in ping-pong)
  int request_dtos = 64;      // each EP's request queue
  int rdma_reads = 16;        // RDMA Reads in flight per EP (both directions)
  int evd_qlen = 256;
  DAT_TIMEOUT wait_us = 5'000'000;  // bound of every single wait
};

class LoopbackPair {
 public:
  LoopbackPair() = default;
  LoopbackPair(const LoopbackPair&) = delete;
  LoopbackPair& operator=(const LoopbackPair&) = delete;
  // Disconnects (bounded) and closes the IA, which frees every object still open on it.
  ~LoopbackPair();

  // Opens the IA, creates both EPs and connects them. On failure returns false with `error` set;
  // the destructor still cleans up whatever was made.
  bool Open(const PairConfig& config, std::string& error);

  // Registers `size` bytes (zeroed). The Region's memory lives until this pair is destroyed.
  bool Register(std::size_t size, Region& out, std::string& error);

  // Waits (bounded by config.wait_us) for one DTO completion on `evd` and checks it succeeded.
  bool WaitDto(DAT_EVD_HANDLE evd, DAT_DTO_COMPLETION_EVENT_DATA& out, std::string& error);
  // Non-blocking: true and `out` set if a DTO completion was queued (it must have succeeded,
  // else false with `error` set and `failed` true).
  bool TryDto(DAT_EVD_HANDLE evd, DAT_DTO_COMPLETION_EVENT_DATA& out, bool& failed, std::string& error);

  const PairConfig& config() const { return config_; }
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  DAT_EP_HANDLE server_ep = DAT_HANDLE_NULL;
  DAT_EP_HANDLE client_ep = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE server_recv_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE server_request_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE client_recv_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE client_request_evd = DAT_HANDLE_NULL;
  DAT_CONN_QUAL port = 0;  // the connection qualifier the server listened on

 private:
  bool CreateEvd(DAT_EVD_FLAGS flags, DAT_EVD_HANDLE& out, std::string& error);
  void Disconnect();

  PairConfig config_;
  DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE cr_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE server_connect_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE client_connect_evd_ = DAT_HANDLE_NULL;
  bool connected_ = false;
  static constexpr int kMaxRegions = 16;
  void* memory_[kMaxRegions] = {};
  int regions_ = 0;
};

}  // namespace softdat::tools
