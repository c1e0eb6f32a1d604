// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Two hosts on one machine: two network namespaces made for this run, joined by a veth pair with a
// /30 between them, stock `dtest -s` in one and stock `dtest -h <peer>` in the other, each with a
// dat.conf of its own whose IA params name that namespace's address. Both must print PASSED. So
// softdat-tcp is shown to work between two addresses, not only on loopback. Both ask for the
// same-host path (shm=auto): two softdat IAs of one machine in different network namespaces do not
// meet on the rendezvous, and their connections go over TCP, which their log lines must say.
//
// Where namespaces may not be made (no privilege), the test is skipped (counted); any other
// failure of the setup fails it (testing/netns/veth_pair.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/consumers/handoff_relay.h"
#include "testing/dat_conf.h"
#include "testing/netns/veth_pair.h"
#include "testing/subprocess.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPassed = "DAPL Test Complete. PASSED";
// What a tcp IA logs at info for each connection, by the path it took (connection_setup.cc,
// local_path.cc).
constexpr const char* kOverTcp = ": over TCP";
constexpr const char* kOverSharedMemory = ": shared memory (";

TEST(DtestAcrossNamespaces, ServerAndClientPassOverAVethPair) {
  VethPair hosts;
  SOFTDAT_VETH_PAIR_OR_SKIP(hosts);
  const std::string& ip = hosts.ip();
  const std::string &ns_a = hosts.ns(0), &ns_b = hosts.ns(1);
  const std::string &address_a = hosts.address(0), &address_b = hosts.address(1);

  // 100 bursts of 4 MiB RDMA Writes each way instead of dtest's 2000: the point here is two hosts,
  // and under --config=tsan the default's 16 GB through instrumented copies outlasts the bounds.
  const char* const kBurst = "100";
  // One IA name, a dat.conf per namespace: a dtest client learns the server's IA name from the
  // server and opens that one (its -P is only the first guess), so the name must mean "this
  // namespace's address" on each side.
  const std::string conf_a = InstallDatConf({{"softdat-ns", "tcp " + address_a}}, "dat-a.conf");
  const std::string conf_b = InstallDatConf({{"softdat-ns", "tcp " + address_b}}, "dat-b.conf");
  SubprocessResult server;
  std::atomic<bool> server_done = false;
  std::thread server_thread([&] {
    server = RunSubprocess({ip, "netns", "exec", ns_a, "dtest", "-s", "-P", "softdat-ns", "-B", kBurst},
                           {{"DAT_OVERRIDE", conf_a}, {"SOFTDAT_SHM", "auto"}, {"SOFTDAT_LOG", "warn,tcp:info"}}, 90s);
    server_done = true;
  });
  // Ends whatever still runs in namespace A (and only there), so a failed client does not leave
  // the test waiting out the server's bound.
  const auto end_server = [&] {
    const SubprocessResult pids = RunSubprocess({ip, "netns", "pids", ns_a}, {}, 5s);
    std::istringstream in(pids.output);
    for (long process; in >> process;) kill(static_cast<pid_t>(process), SIGKILL);
  };
  // dtest's client does not retry: start it once the server listens. A dtest server first
  // listens on a plain socket (port 15828), writes its DAT address to the first connection, and
  // only then creates its PSP (45248): a client that reads the address fast connects before the
  // PSP listens. So a relay in the server's namespace takes the address and serves it again once
  // the PSP listens (testing/consumers/handoff_relay_main.cc); the client starts after that.
  // ss looks without connecting.
  bool listening = false;
  for (int i = 0; i < 200 && !listening; ++i) {
    const SubprocessResult ss = RunSubprocess({ip, "netns", "exec", ns_a, "ss", "-Hltn"}, {}, 5s);
    listening = ss.exit_code == 0 && ss.output.find(":" + std::to_string(kDtestHandoffPort) + " ") != std::string::npos;
    if (!listening) std::this_thread::sleep_for(50ms);
  }
  const std::string ready = TestTmpPath("relay-" + ns_a + ".ready");
  std::filesystem::remove(ready);
  SubprocessResult relay;
  std::thread relay_thread;
  if (listening)
    relay_thread = std::thread([&] {
      relay = RunSubprocess({ip, "netns", "exec", ns_a, RunfilePath("testing/consumers/handoff_relay"),
                             std::to_string(kDtestHandoffPort), std::to_string(kDtestHandoffBytes),
                             std::to_string(kDtestPsp), "60", ready},
                            {}, 70s);
    });
  bool relayed = false;
  for (int i = 0; listening && i < 1200 && !relayed && !server_done; ++i) {
    relayed = std::filesystem::exists(ready);
    if (!relayed) std::this_thread::sleep_for(50ms);
  }
  relayed = relayed || std::filesystem::exists(ready);
  SubprocessResult client;
  if (relayed)
    client = RunSubprocess({ip, "netns", "exec", ns_b, "dtest", "-P", "softdat-ns", "-B", kBurst, "-h", address_a},
                           {{"DAT_OVERRIDE", conf_b}, {"SOFTDAT_SHM", "auto"}, {"SOFTDAT_LOG", "warn,tcp:info"}}, 60s);
  for (int i = 0; i < 300 && !server_done; ++i) std::this_thread::sleep_for(50ms);
  if (!server_done) end_server();
  server_thread.join();
  if (relay_thread.joinable()) relay_thread.join();

  SCOPED_TRACE("relay: " + relay.output);
  SCOPED_TRACE("server (" + ns_a + ", " + address_a + "):\n" + server.output);
  SCOPED_TRACE("client (" + ns_b + ", " + address_b + "):\n" + client.output);
  ASSERT_TRUE(listening) << "the dtest server never listened on " << address_a << ":" << kDtestHandoffPort;
  ASSERT_TRUE(relayed) << "the server's hand-off was not relayed; no client ran";
  EXPECT_NE(client.exit_code, 127) << "dtest not found: install dapl2-utils (tools/dev does)";
  EXPECT_FALSE(server.timed_out);
  EXPECT_FALSE(client.timed_out);
  EXPECT_EQ(server.signal, 0);
  EXPECT_EQ(client.signal, 0);
  EXPECT_NE(server.output.find(kPassed), std::string::npos);
  EXPECT_NE(client.output.find(kPassed), std::string::npos);
  for (const SubprocessResult* side : {&server, &client}) {
    EXPECT_NE(side->output.find(kOverTcp), std::string::npos) << "no connection said it went over TCP";
    EXPECT_EQ(side->output.find(kOverSharedMemory), std::string::npos) << "a connection across namespaces took shared memory";
  }
}

}  // namespace
}  // namespace softdat::testing
