// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The stock `dtestsrq` from dapl2-utils, unchanged, over softdat-tcp: N connections whose server
// EPs share one SRQ, bursts of Sends each way, every message checked for its EP and sequence
// number. dtestsrq exits 0 whatever happens, so the verdict is its text: every EP connected,
// "Test Complete" (printed only after a clean teardown) and no error line.
#include <gtest/gtest.h>

#include <sstream>

#include "testing/consumers/consumer_pair.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

// dtestsrq's PSP, fixed like dtest's.
constexpr std::uint16_t kDtestsrqPort = 45248;

// The lines of `output` that report an error, in any of dtestsrq's spellings.
std::string ErrorLines(const std::string& output) {
  std::istringstream lines(WithoutSanitizerReports(output));
  std::string line, found;
  while (std::getline(lines, line))
    if (line.find("ERR") != std::string::npos || line.find("Err") != std::string::npos ||
        line.find("softdat: error") != std::string::npos)
      found += line + "\n";
  return found;
}

class StockDtestsrq : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { EnterPrivateLoopback(); }

  // Runs server and client with `-c connections -B burst -b 4096`: 4 KiB buffers keep the
  // hundred-connection runs' memory small (without -b each buffer is DAT_IB_TRANSPORT_MTU long).
  static void RunBothPass(int connections, int burst = 16) {
    RunBothPassWith({"-c", std::to_string(connections), "-B", std::to_string(burst), "-b", "4096"}, connections);
  }

  // Runs `dtestsrq -s -P softdat-tcp FLAGS` and `dtestsrq -h 127.0.0.1 -P softdat-tcp FLAGS`.
  static void RunBothPassWith(const std::vector<std::string>& extra, int connections) {
    std::vector<std::string> flags = {"-P", "softdat-tcp"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    ConsumerPairSpec spec;
    spec.server = {"dtestsrq", "-s"};
    spec.server.insert(spec.server.end(), flags.begin(), flags.end());
    std::vector<std::string> client = {"dtestsrq", "-h", "127.0.0.1"};
    client.insert(client.end(), flags.begin(), flags.end());
    spec.clients = {client};
    spec.ready_port = kDtestsrqPort;
    spec.server_bound = 60s;
    spec.client_bound = 50s;
    const ConsumerPairResult run = RunConsumerPair(spec, SoftdatTcpEnvironment());
    SCOPED_TRACE(run.Describe());
    ASSERT_TRUE(run.port_was_free);
    ASSERT_TRUE(run.server_listened);
    ASSERT_EQ(run.clients.size(), 1u);
    const SubprocessResult& client_run = run.clients[0];
    EXPECT_NE(client_run.exit_code, 127) << "dtestsrq not found: install dapl2-utils (tools/dev does)";
    EXPECT_TRUE(ExitedCleanly(run.server));
    EXPECT_TRUE(ExitedCleanly(client_run));
    const std::string all = "ALL " + std::to_string(connections) + " CONNECTED on ";
    EXPECT_NE(run.server.output.find(all + "server!"), std::string::npos);
    EXPECT_NE(client_run.output.find(all + "client!"), std::string::npos);
    EXPECT_NE(run.server.output.find("DAPL RC SRQ Test Complete."), std::string::npos);
    EXPECT_NE(client_run.output.find("DAPL RC SRQ Test Complete."), std::string::npos);
    EXPECT_EQ(ErrorLines(run.server.output), "");
    EXPECT_EQ(ErrorLines(client_run.output), "");
    EXPECT_EQ(client_run.output.find("softdat: warn"), std::string::npos);
  }
};

// A user's first run: no option but the IA. dtestsrq then sizes its buffers from the provider
// attribute DAT_IB_TRANSPORT_MTU and stops with "IB_MTU was not found in provider attr" when the
// provider does not report it.
TEST_F(StockDtestsrq, DefaultsPassWithNoFlagButTheIa) { RunBothPassWith({}, 1); }

TEST_F(StockDtestsrq, OneConnectionPasses) { RunBothPass(1); }

TEST_F(StockDtestsrq, FourConnectionsShareTheServersSrq) { RunBothPass(4); }

TEST_F(StockDtestsrq, SixteenConnectionsShareTheServersSrq) { RunBothPass(16); }

TEST_F(StockDtestsrq, HundredConnectionsShareTheServersSrq) { RunBothPass(100); }

// dtestsrq's largest run: every client EP asks for c x B = 10000 request and receive DTOs. It
// once failed at dat_ep_create (DAT_INVALID_ARG6) when queue depths were capped at 4096; they now
// come from memory, as an RNIC's do (rxe: about a million work requests per QP).
TEST_F(StockDtestsrq, HundredConnectionsOfHundredMessagesEach) { RunBothPass(100, 100); }

}  // namespace
}  // namespace softdat::testing
