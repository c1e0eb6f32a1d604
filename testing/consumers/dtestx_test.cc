// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The stock `dtestx` from dapl2-utils, unchanged, as server and client over softdat-tcp: the DAT
// IB extensions (issue 37). Its RC form does an RDMA Write with immediate data each way, a
// Compare and Swap and two Fetch and Adds each way and checks every value; with -p it queries and
// prints the IA, EP and EVD counters. Its UD form (-u) resolves four UD connections each way on
// one EP, checks the UD connection events and address handles, sends a datagram over each and
// checks what arrives behind the GRH. Both sides must print "PASSED".
#include <gtest/gtest.h>

#include "testing/consumers/consumer_pair.h"
#include "testing/consumers/handoff_relay.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

// dtestx's server writes its address to the first connection on port 15828, reads the client's,
// and only then creates its PSP: the harness answers for the client and serves the address once
// the PSP listens (handoff_relay.h).
ConsumerPairSpec DtestxPair(const std::vector<std::string>& server_flags, const std::vector<std::string>& client_flags) {
  ConsumerPairSpec spec;
  spec.server = {"dtestx", "-P", "softdat-tcp", "-s"};
  spec.server.insert(spec.server.end(), server_flags.begin(), server_flags.end());
  std::vector<std::string> client = {"dtestx", "-P", "softdat-tcp", "-c", "-h", "127.0.0.1"};
  client.insert(client.end(), client_flags.begin(), client_flags.end());
  spec.clients = {client};
  spec.ready_port = kDtestHandoffPort;
  spec.handoff_bytes = kDtestHandoffBytes;
  spec.handoff_then_port = kDtestxServerPsp;
  spec.handoff_reply = DtestxReply(LoopbackAddress(0), "softdat-tcp");
  spec.server_bound = 60s;
  spec.client_bound = 50s;
  return spec;
}

// Both exit 0 by themselves, print `passed`, and log no softdat error.
void ExpectBothPass(const ConsumerPairResult& run, const std::string& passed) {
  SCOPED_TRACE(run.Describe());
  EXPECT_TRUE(run.port_was_free);
  EXPECT_TRUE(run.server_listened);
  EXPECT_EQ(run.handoff_error, "");
  EXPECT_TRUE(ExitedCleanly(run.server));
  EXPECT_NE(run.server.output.find(passed), std::string::npos);
  EXPECT_EQ(run.server.output.find("softdat: error"), std::string::npos);
  ASSERT_EQ(run.clients.size(), 1u);
  EXPECT_NE(run.clients[0].exit_code, 127) << "dtestx not found: install dapl2-utils (tools/dev does)";
  EXPECT_TRUE(ExitedCleanly(run.clients[0]));
  EXPECT_NE(run.clients[0].output.find(passed), std::string::npos);
  EXPECT_EQ(run.clients[0].output.find("softdat: error"), std::string::npos);
}

class StockDtestx : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { EnterPrivateLoopback(); }
};

TEST_F(StockDtestx, ImmediateDataAndAtomicsPassBothWaysWithCounters) {
  const ConsumerPairResult run = RunConsumerPair(DtestxPair({"-p"}, {"-p"}), SoftdatTcpEnvironment());
  ExpectBothPass(run, "IB extension test - immed/atomic test PASSED");
  SCOPED_TRACE(run.Describe());
  for (const std::string& output : {run.server.output, run.clients.empty() ? "" : run.clients[0].output}) {
    EXPECT_NE(output.find("RDMA_WRITE_WITH_IMMEDIATE_DATA test - PASSED"), std::string::npos);
    EXPECT_NE(output.find("CMP_SWAP test - PASSED"), std::string::npos);
    EXPECT_NE(output.find("FETCH_ADD test - PASSED"), std::string::npos);
    EXPECT_EQ(output.find("Skipping"), std::string::npos) << "softdat-tcp offers both atomics";
    EXPECT_NE(output.find(" IA Cntrs:"), std::string::npos) << "-p queries the counters";
    EXPECT_NE(output.find(" EP[0] Cntrs:"), std::string::npos);
  }
}

TEST_F(StockDtestx, UnreliableDatagramsPassBothWays) {
  const ConsumerPairResult run = RunConsumerPair(DtestxPair({"-u"}, {"-u"}), SoftdatTcpEnvironment());
  ExpectBothPass(run, "IB extension test - UD test PASSED");
}

}  // namespace
}  // namespace softdat::testing
