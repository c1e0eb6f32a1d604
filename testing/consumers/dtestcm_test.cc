// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The stock `dtestcm` from dapl2-utils, unchanged, over softdat-tcp with its defaults: 1000 RC
// connections set up and torn down as fast as the provider goes, the connection-manager test of
// the suite. It hands the server's address over TCP port 15828 after its PSP listens, so the
// client may start as soon as that port listens.
#include <gtest/gtest.h>

#include "testing/consumers/consumer_pair.h"
#include "testing/consumers/handoff_relay.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

class StockDtestcm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { EnterPrivateLoopback(); }
};

TEST_F(StockDtestcm, DefaultsPassWithNoFlagButTheIa) {
  ConsumerPairSpec spec;
  spec.server = {"dtestcm", "-s", "-P", "softdat-tcp"};
  spec.clients = {{"dtestcm", "-P", "softdat-tcp", "-h", "127.0.0.1"}};
  spec.ready_port = kDtestHandoffPort;
  spec.server_bound = 90s;
  spec.client_bound = 80s;
  const ConsumerPairResult run = RunConsumerPair(spec, SoftdatTcpEnvironment());
  SCOPED_TRACE(run.Describe());
  ASSERT_TRUE(run.port_was_free);
  ASSERT_TRUE(run.server_listened);
  ASSERT_EQ(run.clients.size(), 1u);
  const SubprocessResult& client = run.clients[0];
  EXPECT_NE(client.exit_code, 127) << "dtestcm not found: install dapl2-utils (tools/dev does)";
  EXPECT_TRUE(ExitedCleanly(run.server));
  EXPECT_TRUE(ExitedCleanly(client));
  EXPECT_NE(run.server.output.find("ALL 1000 CONNECTED on Server!"), std::string::npos);
  EXPECT_NE(client.output.find("ALL 1000 CONNECTED on Client!"), std::string::npos);
  EXPECT_NE(run.server.output.find("DAPL Connection Test Complete."), std::string::npos);
  EXPECT_NE(client.output.find("DAPL Connection Test Complete."), std::string::npos);
  for (const std::string* output : {&run.server.output, &client.output}) {
    EXPECT_EQ(output->find("ERR"), std::string::npos);
    EXPECT_EQ(output->find("softdat: error"), std::string::npos);
  }
}

}  // namespace
}  // namespace softdat::testing
