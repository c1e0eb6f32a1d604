// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Takes a server's one-shot hand-off in the client's place and serves it again once the server is
// really ready. Stock dtest's server writes its DAT address to the first connection on a plain
// TCP port and only then creates its PSP: a client that reads the address fast enough connects
// before the PSP listens and gets DAT_CONNECTION_EVENT_UNREACHABLE (seen on a loaded 2-core run).
// With the relay in between, the client reads the address only after the PSP listens. Stock
// dtestx's hand-off goes both ways (the server then reads the client's address, and only then
// creates its PSP): the relay answers for the client (DtestxReply) and drops the client's answer.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

namespace softdat::testing {

// Stock dtest's hand-off: its server listens on this plain TCP port, writes its DAT address
// (this many bytes) to the first connection, and only then creates its PSP.
inline constexpr std::uint16_t kDtestHandoffPort = 15828;
inline constexpr std::size_t kDtestHandoffBytes = 128;
inline constexpr std::uint16_t kDtestPsp = 45248;
// When the server's next listener is one the kernel's socket table does not show (rdma_cm's on
// RoCE), Start is given port 0 and waits this long instead (a pause, not a bound: the guest's
// suites only).
inline constexpr std::chrono::seconds kUnseenListenerPause{2};
// Stock dtestx: the same port and size both ways; its server's PSP, and its UD client's.
inline constexpr std::uint16_t kDtestxServerPsp = 31112;
inline constexpr std::uint16_t kDtestxClientPsp = 31111;

// What a dtestx client at IPv4 `client` answers the server's hand-off with: its address in
// dtestx's format ("%04hx:%08x:%08x:%08x:%s": no LID, QPN or scope, the address as the 32 bits
// of sin_addr, the provider name), zero-padded to kDtestHandoffBytes.
std::string DtestxReply(const sockaddr_in& client, const std::string& provider);

// 127.0.0.1:`port`, where the relay takes the hand-off.
sockaddr_in LoopbackAddress(std::uint16_t port);

class HandoffRelay {
 public:
  HandoffRelay() = default;
  HandoffRelay(const HandoffRelay&) = delete;
  HandoffRelay& operator=(const HandoffRelay&) = delete;
  // Waits for the serving thread (bounded by Start's `bound`).
  ~HandoffRelay();

  // Connects to 127.0.0.1:`port`, reads exactly `bytes` from the server, waits until `then_port`
  // listens (in this thread's network namespace; 0: kUnseenListenerPause), then listens on `port` itself, on every
  // address as dtest's server does, and hands the same bytes to the first connection, in a
  // thread. Every wait is bounded by `bound`. False, with `error` saying why, if any step
  // failed; nothing then listens on `port`. With a `reply` (dtestx), the relay writes it to the
  // server right after reading the server's bytes, and reads as many from the client after
  // serving it, dropping them.
  bool Start(std::uint16_t port, std::size_t bytes, std::uint16_t then_port, std::chrono::seconds bound,
             std::string& error, const std::string& reply = {});

 private:
  std::thread serving_;
};

}  // namespace softdat::testing
