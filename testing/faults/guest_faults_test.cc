// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Faults that need a kernel the host does not have, run inside the qemu guest by
// testing/faults/vm_faults_suite.sh (never by `bazel test`: the target is manual):
//  - tc netem (sch_netem) on the veth path between two softdat-tcp peer processes in two network
//    namespaces: loss, delay with jitter, duplication and reordering. TCP hides all of it from
//    softdat but the time: transfers slow down and complete, every byte verified by the ledger.
//  - RLIMIT_MEMLOCK too low for a device registration (softdat-verbs on siw0, which enforces the
//    limit even for root, and on rxe0 with CAP_IPC_LOCK dropped, which rxe otherwise honours):
//    dat_lmr_create answers DAT_INSUFFICIENT_RESOURCES and a line says why; no crash, no hang.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "testing/faults/fault_ias.h"
#include "testing/faults/peer_process.h"
#include "testing/netns/veth_pair.h"
#include "testing/subprocess.h"

namespace softdat::testing::faults {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMessages = 100;

class Netem : public ::testing::TestWithParam<const char*> {};

// One transfer each way over a veth pair whose both ends shape traffic with `netem`.
TEST_P(Netem, TransfersSlowDownButCompleteAndVerify) {
  VethPair hosts;
  SOFTDAT_VETH_PAIR_OR_SKIP(hosts);
  const std::string netem = GetParam();
  for (int side = 0; side < 2; ++side) {
    std::vector<std::string> argv = {hosts.ip(), "netns", "exec", hosts.ns(side), "tc", "qdisc", "add", "dev",
                                     hosts.veth(side), "root", "netem"};
    for (std::size_t at = 0, next; at < netem.size(); at = next + 1) {
      next = netem.find(' ', at);
      if (next == std::string::npos) next = netem.size();
      argv.push_back(netem.substr(at, next - at));
    }
    const SubprocessResult tc = RunSubprocess(argv, {}, 20s);
    ASSERT_EQ(tc.exit_code, 0) << "tc qdisc add ... netem " << netem << ": " << tc.output;
  }
  const std::string conf[2] = {SideDatConf("a.conf", "tcp " + hosts.address(0)),
                               SideDatConf("b.conf", "tcp " + hosts.address(1))};
  // Small sizes: TCG runs every byte's CRC in an emulated CPU.
  const std::vector<std::string> common = {"--ia=softdat-ns", "--messages=" + std::to_string(kMessages),
                                           "--max-size=4096", "--write-size=4096", "--read-size=16384",
                                           "--drain-ms=60000", "--idle-ms=120000"};
  PeerProcess passive, active;
  std::vector<std::string> args = common;
  args.push_back("--id=1");
  ASSERT_TRUE(passive.Start(args, {{"DAT_OVERRIDE", conf[0]}}, hosts.ns(0), 120s)) << passive.transcript();
  args.back() = "--id=2";
  ASSERT_TRUE(active.Start(args, {{"DAT_OVERRIDE", conf[1]}}, hosts.ns(1), 120s)) << active.transcript();
  const std::uint16_t port = passive.Listen();
  ASSERT_NE(port, 0) << passive.transcript();
  const auto start = Clock::now();
  passive.Send("accept 120");
  active.Send("connect " + hosts.address(0) + " " + std::to_string(port));
  const Round a = active.WaitRound(400s);
  const Round p = passive.WaitRound(120s);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("figure netem \"%s\": %.1f s\n  passive %s\n  active %s\n", netem.c_str(), seconds, p.line.c_str(),
              a.line.c_str());
  SCOPED_TRACE("--- passive\n" + passive.transcript() + "--- active\n" + active.transcript());
  for (const Round* r : {&p, &a}) {
    ASSERT_TRUE(r->parsed);
    EXPECT_TRUE(r->clean) << r->line;
    EXPECT_EQ(r->received, kMessages) << r->line;
    EXPECT_EQ(r->violations, 0u) << r->line;
    EXPECT_GT(r->reads, 0u) << r->line;
  }
  EXPECT_EQ(passive.Finish(), 0) << passive.transcript();
  EXPECT_EQ(active.Finish(), 0) << active.transcript();
}

INSTANTIATE_TEST_SUITE_P(Profiles, Netem,
                         ::testing::Values("loss 3%", "delay 20ms 10ms reorder 25% 50%", "duplicate 5%",
                                           "delay 10ms 5ms loss 1% duplicate 2% reorder 10% 50%"));

// A peer whose first registrations exceed a 64 KiB pinned-memory limit.
void ExpectRegistrationRefused(const std::string& device, const std::string& wrapper) {
  if (access(("/sys/class/infiniband/" + device).c_str(), F_OK) != 0) GTEST_SKIP() << "no " << device << " here";
  const std::string conf = SideDatConf("verbs-" + device + ".conf", "verbs " + device + " 1");
  // The outer shell's $0 is fault_peer; the inner one gets it as its own $0.
  const std::string command = wrapper + " bash -c 'ulimit -l 64 && exec \"$0\" --ia=softdat-ns' \"$0\"";
  const SubprocessResult run =
      RunSubprocess({"bash", "-c", "echo quit | " + command, PeerProcess::Binary()}, {{"DAT_OVERRIDE", conf}}, 120s);
  SCOPED_TRACE(run.output);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.signal, 0);
  EXPECT_EQ(run.exit_code, 4) << "fault_peer's 'cannot open' status";
  EXPECT_NE(run.output.find("error dat_lmr_create"), std::string::npos);
  EXPECT_NE(run.output.find("DAT_INSUFFICIENT_RESOURCES"), std::string::npos);
  EXPECT_NE(run.output.find("softdat: warn: verbs: ibv_reg_mr"), std::string::npos) << "a line says why";
  EXPECT_NE(run.output.find("ulimit -l"), std::string::npos) << "and what to do";
  std::printf("figure memlock %s: %s\n", device.c_str(),
              run.output.substr(0, run.output.find('\n')).c_str());
}

TEST(Memlock, AboveTheLimitSiwRefusesTheRegistrationClearly) { ExpectRegistrationRefused("siw0", ""); }

TEST(Memlock, AboveTheLimitWithoutCapIpcLockRxeRefusesTheRegistrationClearly) {
  ExpectRegistrationRefused("rxe0", "setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock");
}

}  // namespace
}  // namespace softdat::testing::faults
