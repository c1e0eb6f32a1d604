// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Two softdat-tcp peer processes with the fault proxy (fault_proxy.h) between them. What the path
// does to the bytes decides the outcome, and the ledger of each side checks it:
//  - delay and multi-second stalls: the transfer slows down and completes, every byte verified;
//  - a flipped bit inside an FPDU's payload: the MPA CRC catches it, the connection breaks on
//    both sides, and the corrupt message is never delivered (without the CRC, the ledger itself
//    catches the corruption: the check can fail);
//  - the connection closed in the middle of an FPDU, or one direction cut (FIN) mid-stream: both
//    sides break, every DTO completes or is flushed exactly once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "testing/faults/fault_proxy.h"
#include "testing/faults/peer_process.h"

namespace softdat::testing::faults {
namespace {

using namespace std::chrono_literals;

struct PairRun {
  Round server;
  Round client;
  ProxyCounts proxy;
  int server_exit = -1;
  int client_exit = -1;
  int server_ready_fds = -1;  // once its IA was open
  int client_ready_fds = -1;
  std::string server_log;
  std::string client_log;
  double seconds = 0;
  std::string Describe() const {
    return "server: " + server.line + "\nclient: " + client.line + "\n--- server output\n" + server_log +
           "--- client output\n" + client_log;
  }
};

// One connection between a passive peer (id 1) and an active peer (id 2) through a proxy with
// these faults; both report, then quit.
PairRun RunThroughProxy(const DirectionFaults& up, const DirectionFaults& down, const std::string& ia = "softdat-tcp",
                        std::uint32_t messages = 300) {
  PairRun run;
  const std::vector<std::string> common = {"--ia=" + ia, "--messages=" + std::to_string(messages), "--drain-ms=20000"};
  PeerProcess server, client;
  std::vector<std::string> args = common;
  args.push_back("--id=1");
  EXPECT_TRUE(server.Start(args)) << server.transcript();
  args.back() = "--id=2";
  EXPECT_TRUE(client.Start(args)) << client.transcript();
  const std::uint16_t port = server.Listen();
  EXPECT_NE(port, 0) << server.transcript();
  if (port == 0) return run;
  FaultProxy proxy(port, up, down);
  const auto start = std::chrono::steady_clock::now();
  server.Send("accept 60");
  client.Send("connect 127.0.0.1 " + std::to_string(proxy.port()));
  run.client = client.WaitRound(180s);
  run.server = server.WaitRound(180s);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  proxy.Stop();
  run.proxy = proxy.counts();
  run.server_ready_fds = server.ready_fds();
  run.client_ready_fds = client.ready_fds();
  run.server_exit = server.Finish();
  run.client_exit = client.Finish();
  run.server_log = server.transcript();
  run.client_log = client.transcript();
  std::printf("figure proxy %s: %.2f s, up %llu bytes %llu fpdus, down %llu bytes %llu fpdus, delays %llu stalls %llu "
              "cuts %llu flips %llu truncations %llu\n  server %s\n  client %s\n",
              ::testing::UnitTest::GetInstance()->current_test_info()->name(), run.seconds,
              static_cast<unsigned long long>(run.proxy.bytes_up), static_cast<unsigned long long>(run.proxy.fpdus_up),
              static_cast<unsigned long long>(run.proxy.bytes_down),
              static_cast<unsigned long long>(run.proxy.fpdus_down), static_cast<unsigned long long>(run.proxy.delays),
              static_cast<unsigned long long>(run.proxy.stalls), static_cast<unsigned long long>(run.proxy.cuts),
              static_cast<unsigned long long>(run.proxy.flips),
              static_cast<unsigned long long>(run.proxy.truncations), run.server.line.c_str(), run.client.line.c_str());
  return run;
}

// After the connection, each side holds what it held before it: its IA's descriptors, and the
// passive side its listening socket.
void ExpectNoDescriptorLeft(const PairRun& run) {
  EXPECT_EQ(run.server.fds, run.server_ready_fds + 1) << run.server.line;
  EXPECT_EQ(run.client.fds, run.client_ready_fds) << run.client.line;
}

void ExpectCompletedAndVerified(const PairRun& run, std::uint32_t messages = 300) {
  for (const Round* r : {&run.server, &run.client}) {
    ASSERT_TRUE(r->parsed);
    EXPECT_TRUE(r->clean) << r->line;
    EXPECT_EQ(r->received, messages) << r->line;
    EXPECT_EQ(r->violations, 0u) << r->line;
    EXPECT_GT(r->reads, 0u) << r->line;
    EXPECT_GT(r->writes, 0u) << r->line;
  }
  EXPECT_EQ(run.server_exit, 0);
  EXPECT_EQ(run.client_exit, 0);
  ExpectNoDescriptorLeft(run);
}

void ExpectBrokenWithoutViolations(const PairRun& run) {
  for (const Round* r : {&run.server, &run.client}) {
    ASSERT_TRUE(r->parsed);
    EXPECT_TRUE(r->established) << r->line;
    EXPECT_FALSE(r->clean) << r->line;
    EXPECT_EQ(r->violations, 0u) << r->line;
  }
  EXPECT_EQ(run.server_exit, 0);
  EXPECT_EQ(run.client_exit, 0);
  ExpectNoDescriptorLeft(run);
}

TEST(ProxyFaults, PassThroughCompletes) {
  const PairRun run = RunThroughProxy({}, {});
  SCOPED_TRACE(run.Describe());
  ExpectCompletedAndVerified(run);
  EXPECT_EQ(run.proxy.connections, 1u);
}

TEST(ProxyFaults, DelayedChunksSlowTheTransferButItCompletes) {
  DirectionFaults delayed;
  delayed.delay = 5ms;
  const PairRun run = RunThroughProxy(delayed, delayed);
  SCOPED_TRACE(run.Describe());
  ExpectCompletedAndVerified(run);
  EXPECT_GT(run.proxy.delays, 0u);
}

// The stream cut into pieces of 1 to 1500 bytes arriving apart, as a path with a small MSS, loss
// or reordering below TCP delivers it: every FPDU boundary falls somewhere inside a read.
TEST(ProxyFaults, ResegmentedIntoSmallPiecesTheTransferCompletes) {
  DirectionFaults pieces;
  pieces.max_piece = 1500;
  pieces.piece_gap = std::chrono::microseconds(50);
  const PairRun run = RunThroughProxy(pieces, pieces, "softdat-tcp", 100);
  SCOPED_TRACE(run.Describe());
  ExpectCompletedAndVerified(run, 100);
  EXPECT_GT(run.proxy.pieces, 1000u);
}

TEST(ProxyFaults, StallsOfSecondsInBothDirectionsAndTheTransferCompletes) {
  DirectionFaults up, down;
  up.stall_at = 256 << 10;
  up.stall_for = 2s;
  down.stall_at = 384 << 10;
  down.stall_for = 3s;
  const PairRun run = RunThroughProxy(up, down);
  SCOPED_TRACE(run.Describe());
  ExpectCompletedAndVerified(run);
  EXPECT_EQ(run.proxy.stalls, 2u);
}

TEST(ProxyFaults, AFlippedPayloadBitActiveToPassiveBreaksTheConnectionAndIsNeverDelivered) {
  DirectionFaults up;
  up.flip_fpdu = 40;
  up.flip_offset = 100;
  const PairRun run = RunThroughProxy(up, {});
  SCOPED_TRACE(run.Describe());
  ExpectBrokenWithoutViolations(run);
  EXPECT_EQ(run.proxy.flips, 1u);
  EXPECT_NE(run.server_log.find("CRC"), std::string::npos) << "the receiver says why";
}

TEST(ProxyFaults, AFlippedPayloadBitPassiveToActiveBreaksTheConnectionAndIsNeverDelivered) {
  DirectionFaults down;
  down.flip_fpdu = 40;
  down.flip_offset = 100;
  const PairRun run = RunThroughProxy({}, down);
  SCOPED_TRACE(run.Describe());
  ExpectBrokenWithoutViolations(run);
  EXPECT_EQ(run.proxy.flips, 1u);
  EXPECT_NE(run.client_log.find("CRC"), std::string::npos) << "the receiver says why";
}

// The same flip without the MPA CRC reaches the consumer: the ledger must see it, or the tests
// above could not fail. The flip lands in a Send or a Write, both checked by the server. Counting
// every FPDU, the 40th was now and then a Read Request: the flip then moved the address the server
// read from, and the client's ledger, not the server's, found the bytes wrong (CI, stop 54).
TEST(ProxyFaults, WithoutTheCrcTheLedgerCatchesTheFlippedBit) {
  DirectionFaults up;
  up.flip_fpdu = 40;
  up.flip_offset = 100;
  up.flip_data_only = true;
  const PairRun run = RunThroughProxy(up, {}, "softdat-tcp-nocrc");
  SCOPED_TRACE(run.Describe());
  EXPECT_EQ(run.proxy.flips, 1u);
  EXPECT_GE(run.server.violations, 1u);
  EXPECT_NE(run.server.line.find("corrupt payload delivered"), std::string::npos);
  EXPECT_EQ(run.server_exit, 3) << "fault_peer exits 3 when its ledger found something";
}

TEST(ProxyFaults, ClosedInTheMiddleOfAnFpduBothSidesBreak) {
  DirectionFaults up;
  up.truncate_fpdu = 60;
  const PairRun run = RunThroughProxy(up, {});
  SCOPED_TRACE(run.Describe());
  ExpectBrokenWithoutViolations(run);
  EXPECT_EQ(run.proxy.truncations, 1u);
}

TEST(ProxyFaults, OneDirectionCutMidStreamBothSidesBreak) {
  DirectionFaults down;
  down.cut_at = 300 << 10;
  const PairRun run = RunThroughProxy({}, down);
  SCOPED_TRACE(run.Describe());
  ExpectBrokenWithoutViolations(run);
  EXPECT_EQ(run.proxy.cuts, 1u);
}

}  // namespace
}  // namespace softdat::testing::faults
