// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A link going down and up under a live connection: two peer processes in two network namespaces
// joined by a veth pair (testing/netns/veth_pair.h), the link taken down in the middle of a
// transfer. softdat-tcp's IA option timeout_ms is its retry timeout (an RNIC's breaks a QP whose
// peer stops answering): an outage shorter than it is ridden out and the transfer completes with
// every byte verified; a longer one breaks the connection on both sides, every DTO completed or
// flushed exactly once. Without the option the kernel's own limits (minutes) apply, so a long
// outage is ridden out too. Needs root (ip netns); skipped, and counted, where it is not.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "testing/faults/fault_ias.h"
#include "testing/faults/peer_process.h"
#include "testing/netns/veth_pair.h"

namespace softdat::testing::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct FlapRun {
  Round passive, active;
  double passive_seconds = 0, active_seconds = 0;  // from the link going down to the report
  int passive_exit = -1, active_exit = -1;
  int passive_ready_fds = -1, active_ready_fds = -1;
  std::string log;
};

// Passive peer in namespace 0, active in 1; after `progress` lines, the link is down for
// `outage`, then up again.
void Flap(std::uint32_t timeout_ms, std::chrono::milliseconds outage, std::uint32_t messages, FlapRun& run) {
  VethPair hosts;
  SOFTDAT_VETH_PAIR_OR_SKIP(hosts);
  const std::string option = timeout_ms != 0 ? " timeout_ms=" + std::to_string(timeout_ms) : "";
  const std::string conf[2] = {SideDatConf("a.conf", "tcp " + hosts.address(0) + option),
                               SideDatConf("b.conf", "tcp " + hosts.address(1) + option)};
  const std::vector<std::string> common = {"--ia=softdat-ns", "--messages=" + std::to_string(messages),
                                           "--progress-every=50", "--drain-ms=30000", "--idle-ms=120000"};
  PeerProcess passive, active;
  std::vector<std::string> args = common;
  args.push_back("--id=1");
  ASSERT_TRUE(passive.Start(args, {{"DAT_OVERRIDE", conf[0]}}, hosts.ns(0))) << passive.transcript();
  args.back() = "--id=2";
  ASSERT_TRUE(active.Start(args, {{"DAT_OVERRIDE", conf[1]}}, hosts.ns(1))) << active.transcript();
  const std::uint16_t port = passive.Listen();
  ASSERT_NE(port, 0) << passive.transcript();
  passive.Send("accept 30");
  active.Send("connect " + hosts.address(0) + " " + std::to_string(port));
  ASSERT_TRUE(passive.WaitLine("progress", 60s)) << passive.transcript() << active.transcript();
  ASSERT_EQ(hosts.SetLink(0, false), "");
  const auto down = Clock::now();
  const auto up_at = down + outage;
  // Reports that come while the link is down (a break), then the rest once it is up again.
  auto wait_round = [&](PeerProcess& peer, Round& round, double& seconds, Clock::time_point until) {
    if (round.parsed) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() > 0) round = peer.WaitRound(left);
    if (round.parsed) seconds = std::chrono::duration<double>(Clock::now() - down).count();
  };
  wait_round(active, run.active, run.active_seconds, up_at);
  wait_round(passive, run.passive, run.passive_seconds, up_at);
  std::this_thread::sleep_until(up_at);
  ASSERT_EQ(hosts.SetLink(0, true), "");
  std::printf("figure link %u ms timeout, %lld ms outage\n", timeout_ms, static_cast<long long>(outage.count()));
  wait_round(active, run.active, run.active_seconds, Clock::now() + 180s);
  wait_round(passive, run.passive, run.passive_seconds, Clock::now() + 60s);
  run.passive_ready_fds = passive.ready_fds();
  run.active_ready_fds = active.ready_fds();
  run.passive_exit = passive.Finish();
  run.active_exit = active.Finish();
  run.log = "--- passive\n" + passive.transcript() + "--- active\n" + active.transcript();
  std::printf("  passive reported %.1f s after the link went down: %s\n  active reported %.1f s after: %s\n",
              run.passive_seconds, run.passive.line.c_str(), run.active_seconds, run.active.line.c_str());
}

// A break must come from the timeout, while the link is still down, not from anything else.
TEST(LinkFlap, AnOutageLongerThanTheTimeoutBreaksBothSidesWithinIt) {
  FlapRun run;
  Flap(2000, 12s, 1000000, run);
  if (::testing::Test::IsSkipped() || HasFatalFailure()) return;
  SCOPED_TRACE(run.log);
  for (const Round* r : {&run.passive, &run.active}) {
    ASSERT_TRUE(r->parsed);
    EXPECT_TRUE(r->established) << r->line;
    EXPECT_FALSE(r->clean) << r->line;
    EXPECT_EQ(r->violations, 0u) << r->line;
  }
  // Reported before the link came back (the outage is 12 s; the timeout 2 s, plus the probes).
  EXPECT_LT(run.active_seconds, 12.0);
  EXPECT_LT(run.passive_seconds, 12.0);
  EXPECT_EQ(run.passive_exit, 0);
  EXPECT_EQ(run.active_exit, 0);
  // Nothing left behind: the passive side keeps its listening socket only.
  EXPECT_EQ(run.passive.fds, run.passive_ready_fds + 1) << run.passive.line;
  EXPECT_EQ(run.active.fds, run.active_ready_fds) << run.active.line;
}

// The outage passes, the transfer resumes and completes, every byte verified.
void ExpectRiddenOut(std::uint32_t timeout_ms, std::chrono::milliseconds outage) {
  FlapRun run;
  Flap(timeout_ms, outage, 1500, run);
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  SCOPED_TRACE(run.log);
  for (const Round* r : {&run.passive, &run.active}) {
    ASSERT_TRUE(r->parsed);
    EXPECT_TRUE(r->clean) << r->line;
    EXPECT_EQ(r->received, 1500u) << r->line;
    EXPECT_EQ(r->violations, 0u) << r->line;
  }
  EXPECT_EQ(run.passive_exit, 0);
  EXPECT_EQ(run.active_exit, 0);
  // Nothing left behind: the passive side keeps its listening socket only.
  EXPECT_EQ(run.passive.fds, run.passive_ready_fds + 1) << run.passive.line;
  EXPECT_EQ(run.active.fds, run.active_ready_fds) << run.active.line;
}

TEST(LinkFlap, AnOutageShorterThanTheTimeoutIsRiddenOut) { ExpectRiddenOut(6000, 1500ms); }

TEST(LinkFlap, WithoutATimeoutALongOutageIsRiddenOut) { ExpectRiddenOut(0, 8s); }

}  // namespace
}  // namespace softdat::testing::faults
