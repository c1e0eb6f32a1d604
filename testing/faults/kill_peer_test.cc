// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A peer process killed with SIGKILL in the middle of a transfer, on either side of the
// connection, with RDMA Reads, Writes and Sends of the survivor outstanding at the kill: the
// survivor sees the connection break, every DTO it posted completes or is flushed exactly once,
// its SRQ counts add up, no corrupt byte is delivered, and after several such rounds (a new
// victim process each) it holds the same descriptors and about the same memory.
//
// Deterministic: the victim is stopped (SIGSTOP) once traffic flows, and killed only when the
// survivor reports Reads outstanding — a stopped peer answers none of them.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "testing/faults/peer_process.h"

namespace softdat::testing::faults {
namespace {

using namespace std::chrono_literals;

constexpr int kRounds = 3;
// Unbounded for the duration of a round: the victim dies long before.
const std::vector<std::string> kEndless = {"--messages=1000000", "--progress-every=50"};

// The survivor is stuck on the stopped victim: every Read it may have outstanding (4) and every
// Send of its window (16) posted and not completed, the same twice in a row 100 ms apart. Read
// Responses already in its socket would have been read by then.
bool SurvivorStuck(PeerProcess& survivor) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    survivor.Send("status");
    const std::optional<std::string> line = survivor.WaitLine("status ", 10s);
    if (!line) return false;
    const bool saturated = Field(*line, "reads_outstanding") == 4 && Field(*line, "sends_outstanding") == 16;
    if (saturated && *line == last) return true;
    last = saturated ? *line : "";
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

// A count from the ledger summary of a round line ("flushed_reads 4").
std::uint64_t LedgerCount(const Round& round, const std::string& name) {
  const std::size_t at = round.ledger.find(name + " ");
  return at == std::string::npos ? 0 : std::strtoull(round.ledger.c_str() + at + name.size() + 1, nullptr, 10);
}

// Runs kRounds rounds of: victim connects or listens, traffic flows, victim stopped, survivor
// has Reads outstanding, victim killed, survivor reports.
void KillRounds(bool survivor_listens) {
  PeerProcess survivor;
  std::vector<std::string> args = kEndless;
  args.push_back("--id=1");
  ASSERT_TRUE(survivor.Start(args)) << survivor.transcript();
  const std::uint16_t port = survivor_listens ? survivor.Listen() : 0;
  if (survivor_listens) {
    ASSERT_NE(port, 0) << survivor.transcript();
  }
  std::vector<Round> rounds;
  for (int round = 1; round <= kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    PeerProcess victim;
    std::vector<std::string> victim_args = kEndless;
    victim_args.push_back("--id=" + std::to_string(100 + round));
    ASSERT_TRUE(victim.Start(victim_args)) << victim.transcript();
    if (survivor_listens) {
      survivor.Send("accept 30");
      victim.Send("connect 127.0.0.1 " + std::to_string(port));
    } else {
      const std::uint16_t victim_port = victim.Listen();
      ASSERT_NE(victim_port, 0) << victim.transcript();
      victim.Send("accept 30");
      survivor.Send("connect 127.0.0.1 " + std::to_string(victim_port));
    }
    ASSERT_TRUE(survivor.WaitLine("progress", 60s)) << "no traffic:\n" << survivor.transcript() << victim.transcript();
    victim.Signal(SIGSTOP);
    ASSERT_TRUE(SurvivorStuck(survivor)) << "the survivor never had its Reads outstanding:\n"
                                         << survivor.transcript();
    victim.Signal(SIGKILL);
    EXPECT_EQ(victim.Finish(30s), 128 + SIGKILL);
    const Round report = survivor.WaitRound(90s);
    ASSERT_TRUE(report.parsed) << survivor.transcript();
    SCOPED_TRACE(report.line);
    EXPECT_TRUE(report.established);
    EXPECT_FALSE(report.clean);
    EXPECT_EQ(report.violations, 0u);
    // The 4 Reads it had outstanding were flushed, not completed. (Its Sends were handed to TCP
    // before the kill, which is a Send's completion: they may complete either way.)
    const std::uint64_t reads_before = rounds.empty() ? 0 : LedgerCount(rounds.back(), "flushed_reads");
    EXPECT_EQ(LedgerCount(report, "flushed_reads") - reads_before, 4u);
    EXPECT_EQ(LedgerCount(report, "corrupt"), 0u);
    EXPECT_GT(report.received, 0u);
    rounds.push_back(report);
    std::printf("figure kill %s %s\n", survivor_listens ? "active-victim" : "passive-victim", report.line.c_str());
  }
  // The first round warms up what lives as long as the IA; later rounds add nothing.
  for (const Round& r : rounds) EXPECT_EQ(r.fds, rounds.front().fds) << r.line;
  if (kResidentMemoryIsMeaningful) {
    EXPECT_LT(rounds.back().rss, rounds[0].rss + (4u << 20)) << rounds.back().line;
  }
  const std::optional<std::string> bye = [&] {
    survivor.Send("quit");
    return survivor.WaitLine("bye", 60s);
  }();
  ASSERT_TRUE(bye.has_value()) << survivor.transcript();
  EXPECT_EQ(Field(*bye, "violations"), 0u) << survivor.transcript();
  EXPECT_EQ(survivor.Finish(), 0) << survivor.transcript();
}

TEST(KillPeer, ActiveSideKilledMidTransferWithReadsOutstanding) { KillRounds(true); }

// The victim started a helper program while connected (a launcher, a shell-out) that outlives
// it. The helper must not hold the victim's sockets: killing the victim breaks the connection at
// once. (softdat's sockets were once inherited across exec: the survivor then waited, with its
// Reads outstanding, for a peer that no longer existed.)
TEST(KillPeer, AHelperProcessOfTheVictimDoesNotKeepTheConnectionAlive) {
  PeerProcess survivor;
  std::vector<std::string> args = kEndless;
  args.push_back("--id=1");
  ASSERT_TRUE(survivor.Start(args)) << survivor.transcript();
  const std::uint16_t port = survivor.Listen();
  ASSERT_NE(port, 0) << survivor.transcript();
  PeerProcess victim;
  args.back() = "--id=2";
  ASSERT_TRUE(victim.Start(args)) << victim.transcript();
  survivor.Send("accept 30");
  victim.Send("connect 127.0.0.1 " + std::to_string(port));
  ASSERT_TRUE(survivor.WaitLine("progress", 60s)) << survivor.transcript() << victim.transcript();
  victim.Send("spawn");
  const std::optional<std::string> spawned = victim.WaitLine("spawned ", 20s);
  ASSERT_TRUE(spawned) << victim.transcript();
  const pid_t helper = static_cast<pid_t>(std::strtol(spawned->c_str() + 8, nullptr, 10));
  ASSERT_GT(helper, 0);
  victim.Signal(SIGKILL);
  EXPECT_EQ(victim.Finish(30s), 128 + SIGKILL);
  const Round report = survivor.WaitRound(30s);
  kill(helper, SIGKILL);
  ASSERT_TRUE(report.parsed) << "the connection outlived its killed owner:\n" << survivor.transcript();
  EXPECT_FALSE(report.clean) << report.line;
  EXPECT_EQ(report.violations, 0u) << report.line;
  EXPECT_EQ(survivor.Finish(), 0) << survivor.transcript();
}

TEST(KillPeer, PassiveSideKilledMidTransferWithReadsOutstanding) { KillRounds(false); }

}  // namespace
}  // namespace softdat::testing::faults
