// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The soak: two consumer processes (testing/faults/fault_peer) through the stock registry, one
// passive and one active, connecting and disconnecting over and over for a bounded time, each
// connection a mixed workload in both directions — Sends into the peer's SRQ, RDMA Writes, RDMA
// Reads — while each side resizes its SRQ and re-arms its low watermark under the traffic. Every
// connection must end clean with zero ledger findings, and memory must stay flat: after the
// warm-up, neither process's resident set grows by more than kFlatBytes (in plain builds: see
// kResidentMemoryIsMeaningful), and its descriptors do not change.
//
// SOFTDAT_SOAK_SECONDS sets the length (default 60: the CI form); testing/soak/soak.sh runs the
// 10-minute form on demand.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "testing/faults/peer_process.h"

namespace softdat::testing::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kFlatBytes = 2u << 20;
constexpr int kWarmupRounds = 5;

std::chrono::seconds SoakLength() {
  const char* text = std::getenv("SOFTDAT_SOAK_SECONDS");
  const long seconds = text != nullptr ? std::strtol(text, nullptr, 10) : 60;
  return std::chrono::seconds(std::clamp<long>(seconds, 5, 3600));
}

// The end of a peer's transcript: its last log lines say why a round went wrong.
std::string Tail(const std::string& text) { return text.size() > 4000 ? text.substr(text.size() - 4000) : text; }

std::uint64_t LedgerCount(const Round& round, const std::string& name) {
  const std::size_t at = round.ledger.find(name + " ");
  return at == std::string::npos ? 0 : std::strtoull(round.ledger.c_str() + at + name.size() + 1, nullptr, 10);
}

TEST(Soak, ChurnSendsWritesReadsAndSrqResizeWithZeroErrorsAndFlatMemory) {
  const auto length = SoakLength();
  const std::vector<std::string> common = {"--messages=200", "--srq-churn=1", "--max-size=16384",
                                           "--read-size=32768"};
  PeerProcess passive, active;
  std::vector<std::string> args = common;
  args.push_back("--id=1");
  ASSERT_TRUE(passive.Start(args)) << passive.transcript();
  args.back() = "--id=2";
  ASSERT_TRUE(active.Start(args)) << active.transcript();
  const std::uint16_t port = passive.Listen();
  ASSERT_NE(port, 0) << passive.transcript();

  const auto start = Clock::now();
  int rounds = 0;
  std::uint64_t messages = 0, writes = 0, reads = 0, low_watermarks = 0;
  Round warm[2], last[2];
  std::uint64_t peak_rss[2] = {0, 0};
  while (Clock::now() - start < length) {
    passive.Send("accept 30");
    active.Send("connect 127.0.0.1 " + std::to_string(port));
    const Round a = active.WaitRound(120s);
    const Round p = passive.WaitRound(60s);
    ASSERT_TRUE(a.parsed && p.parsed) << "round " << rounds << "\n" << active.transcript().substr(0, 4000)
                                      << passive.transcript().substr(0, 4000);
    ++rounds;
    for (const Round* r : {&p, &a}) {
      const PeerProcess& peer = r == &p ? passive : active;
      ASSERT_TRUE(r->clean) << "round " << rounds << ": " << r->line << "\nits log's end:\n" << Tail(peer.transcript());
      ASSERT_EQ(r->violations, 0u) << "round " << rounds << ": " << r->line;
      messages += r->received;
      writes += r->writes;
      reads += r->reads;
      low_watermarks += r->low_watermarks;
    }
    last[0] = p;
    last[1] = a;
    if (rounds == kWarmupRounds) {
      warm[0] = p;
      warm[1] = a;
    }
    for (int side = 0; side < 2; ++side) peak_rss[side] = std::max(peak_rss[side], last[side].rss);
    if (rounds % 200 == 0)
      std::printf("figure soak at %d connections, %.0f s: passive rss %.2f MiB fds %d, active rss %.2f MiB fds %d\n",
                  rounds, std::chrono::duration<double>(Clock::now() - start).count(), p.rss / 1048576.0, p.fds,
                  a.rss / 1048576.0, a.fds);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_GT(rounds, kWarmupRounds) << "too few connections in " << length.count() << " s to judge memory";
  const char* names[2] = {"passive", "active"};
  for (int side = 0; side < 2; ++side) {
    SCOPED_TRACE(names[side]);
    EXPECT_EQ(last[side].fds, warm[side].fds) << warm[side].line << "\n" << last[side].line;
    if (kResidentMemoryIsMeaningful) {
      EXPECT_LT(peak_rss[side], warm[side].rss + kFlatBytes) << warm[side].line << "\n" << last[side].line;
    }
  }
  EXPECT_GT(low_watermarks, 0u) << "the low watermark was never crossed";
  std::printf("figure soak %.0f s: %d connections, %llu messages, %llu writes and %llu reads verified, %llu low "
              "watermark events\n",
              seconds, rounds, static_cast<unsigned long long>(messages), static_cast<unsigned long long>(writes),
              static_cast<unsigned long long>(reads), static_cast<unsigned long long>(low_watermarks));
  for (int side = 0; side < 2; ++side)
    std::printf("figure soak %s: DTOs posted %llu, completed ok %llu; rss after warm-up %.1f MiB, at the end %.1f "
                "MiB, peak %.1f MiB; fds %d\n",
                names[side], static_cast<unsigned long long>(LedgerCount(last[side], "posted")),
                static_cast<unsigned long long>(LedgerCount(last[side], "succeeded")), warm[side].rss / 1048576.0,
                last[side].rss / 1048576.0, peak_rss[side] / 1048576.0, last[side].fds);
  for (PeerProcess* peer : {&passive, &active}) {
    peer->Send("quit");
    const std::optional<std::string> bye = peer->WaitLine("bye", 60s);
    ASSERT_TRUE(bye) << peer->transcript().substr(0, 4000);
    EXPECT_EQ(Field(*bye, "violations"), 0u);
    EXPECT_EQ(peer->Finish(), 0);
  }
}

}  // namespace
}  // namespace softdat::testing::faults
