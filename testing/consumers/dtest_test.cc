// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The stock `dtest` from dapl2-utils, unchanged, as server and client over softdat-tcp: its
// default run (connection, Sends, bidirectional RDMA Writes, and, because softdat reports
// DAT_IB_RDMA_READ=TRUE, RDMA Reads and a Send ping-pong) and the variants. dtest
// checks what it can and prints "PASSED" or "FAILED"; both sides must pass.
#include <gtest/gtest.h>

#include "testing/consumers/consumer_pair.h"
#include "testing/consumers/handoff_relay.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

// dtest's server first listens on a plain TCP port and writes its address to the first
// connection, and only then creates its PSP: a client that read the address could connect before
// the PSP listens. The harness relays the hand-off once the PSP listens (handoff_relay.h).
constexpr char kPassed[] = "DAPL Test Complete. PASSED";

class StockDtest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { EnterPrivateLoopback(); }

  // Runs `dtest -s <flags>` and `dtest -h 127.0.0.1 <flags>`; both must exit by themselves,
  // say PASSED and log no softdat error.
  static ConsumerPairResult RunBothPass(const std::vector<std::string>& flags) {
    ConsumerPairSpec spec;
    spec.server = {"dtest", "-s", "-P", "softdat-tcp"};
    spec.server.insert(spec.server.end(), flags.begin(), flags.end());
    std::vector<std::string> client = {"dtest", "-P", "softdat-tcp", "-h", "127.0.0.1"};
    client.insert(client.end(), flags.begin(), flags.end());
    spec.clients = {client};
    spec.ready_port = kDtestHandoffPort;
    spec.handoff_bytes = kDtestHandoffBytes;
    spec.handoff_then_port = kDtestPsp;
    spec.server_bound = 90s;
    spec.client_bound = 80s;
    ConsumerPairResult run = RunConsumerPair(spec, SoftdatTcpEnvironment());
    SCOPED_TRACE(run.Describe());
    EXPECT_TRUE(run.port_was_free);
    EXPECT_TRUE(run.server_listened);
    EXPECT_EQ(run.handoff_error, "");
    EXPECT_TRUE(ExitedCleanly(run.server));
    EXPECT_NE(run.server.output.find(kPassed), std::string::npos);
    EXPECT_EQ(run.server.output.find("softdat: error"), std::string::npos);
    EXPECT_EQ(run.clients.size(), 1u);
    if (run.clients.size() == 1) {
      EXPECT_NE(run.clients[0].exit_code, 127) << "dtest not found: install dapl2-utils (tools/dev does)";
      EXPECT_TRUE(ExitedCleanly(run.clients[0]));
      EXPECT_NE(run.clients[0].output.find(kPassed), std::string::npos);
      EXPECT_EQ(run.clients[0].output.find("softdat: error"), std::string::npos);
    }
    return run;
  }

  static std::string ClientOutput(const ConsumerPairResult& run) {
    return run.clients.empty() ? "" : WithoutSanitizerReports(run.clients[0].output);
  }

  // dtest moves gigabytes per run through instrumented copies: minutes under ThreadSanitizer.
  static constexpr char kTooSlowUnderTsan[] = "4 MiB RDMA Writes by the thousand: minutes under ThreadSanitizer";
};

// A source port never lands on dtest's PSP: one that did, on a socket without SO_REUSEADDR that
// closed first, held 45248 in TIME_WAIT for 60 s, and two dtest servers in a row failed
// dat_psp_create with DAT_CONN_QUAL_IN_USE (consumer_pair.cc, ReserveFixedPorts).
TEST_F(StockDtest, TheConsumersFixedPortsAreNeverSourcePortsInTheNamespace) {
  ASSERT_TRUE(EnterPrivateLoopback()) << "the consumer tests run in a network namespace of their own (root)";
  EXPECT_TRUE(ReservedInThisNamespace(kDtestPsp));
  EXPECT_TRUE(ReservedInThisNamespace(46100));  // dapltest's cases
  EXPECT_TRUE(ReservedInThisNamespace(46599));
  EXPECT_FALSE(ReservedInThisNamespace(46600));
}

TEST_F(StockDtest, DefaultRunPassesWithEachSideSeeingThePeersRdmaWrite) {
  if (UnderThreadSanitizer()) GTEST_SKIP() << kTooSlowUnderTsan;
  const ConsumerPairResult run = RunBothPass({});
  SCOPED_TRACE(run.Describe());
  // The text each side RDMA-writes into the other's buffer arrived intact.
  EXPECT_NE(ClientOutput(run).find("RDMA write buffer contains: server RDMA write data"), std::string::npos);
  EXPECT_NE(run.server.output.find("RDMA write buffer contains: client RDMA write data"), std::string::npos);
  // The RDMA Read phase brought back what the server's buffer held: dtest's server writes its
  // read text into that buffer while the client may already be reading it (a consumer race, which
  // a one-sided Read that needs no server CPU shows when the server lags: over shared memory under
  // ASan, the client read the client's own earlier RDMA Write text). Either text is the server's
  // buffer; anything else is not.
  const std::string client = ClientOutput(run);
  EXPECT_TRUE(client.find("RDMA read buffer contains: server RDMA read data") != std::string::npos ||
              client.find("RDMA read buffer contains: client RDMA write data") != std::string::npos)
      << "the client's RDMA Read brought back neither text the server's buffer held";
  EXPECT_NE(ClientOutput(run).find("Message PingPong: (100 x 4194304)"), std::string::npos);
}

TEST_F(StockDtest, RdmaWritePingPongWithDataCheckPasses) {
  if (UnderThreadSanitizer()) GTEST_SKIP() << kTooSlowUnderTsan;
  // -D (data check) implies -W and sets 1000 bursts of 4 MiB; -B after it keeps the run short.
  // The client compares every 4 MiB buffer the server wrote back with the one it wrote, over
  // dtest's five patterns.
  const ConsumerPairResult run = RunBothPass({"-W", "-D", "-B", "100"});
  SCOPED_TRACE(run.Describe());
  EXPECT_NE(ClientOutput(run).find("RDMA WRITE PINGPONG with DATA CHECK"), std::string::npos);
  EXPECT_NE(ClientOutput(run).find("RDMA write PingPong: (100 x 4194304)"), std::string::npos);
  EXPECT_EQ(ClientOutput(run).find("ERR"), std::string::npos);
}

// The RDMA Write ping-pong as latency tests run it (perftest's ib_write_lat does the same): each
// side writes 8 bytes into the other's buffer and spins on its own buffer's last byte, calling
// nothing meanwhile, and reaps every tenth Write's completion with a dat_evd_dequeue loop right
// after posting it; -p makes the rest of the run (connection, the other phases) poll by dequeue
// too. Only the progress thread can place the Writes (softdat(7), PROGRESS): before it took over
// within microseconds of the consumer's last call, a run took 12 ms a round trip in most runs.
TEST_F(StockDtest, EightByteRdmaWritePingPongWithTheTargetSpinningOnMemoryPasses) {
  const ConsumerPairResult run = RunBothPass({"-W", "-b", "8"});
  SCOPED_TRACE(run.Describe());
  EXPECT_NE(ClientOutput(run).find("RDMA write PingPong: (1000 x 8)"), std::string::npos);
}

TEST_F(StockDtest, EightByteRdmaWritePingPongReapedByDequeuePasses) {
  const ConsumerPairResult run = RunBothPass({"-W", "-b", "8", "-p"});
  SCOPED_TRACE(run.Describe());
  EXPECT_NE(ClientOutput(run).find("RDMA write PingPong: (1000 x 8)"), std::string::npos);
}

TEST_F(StockDtest, RdmaWriteStreamingPasses) {
  if (UnderThreadSanitizer()) GTEST_SKIP() << kTooSlowUnderTsan;
  const ConsumerPairResult run = RunBothPass({"-w"});
  SCOPED_TRACE(run.Describe());
  EXPECT_NE(ClientOutput(run).find("RDMA write buffer contains: server RDMA write data"), std::string::npos);
  EXPECT_NE(run.server.output.find("RDMA write buffer contains: client RDMA write data"), std::string::npos);
}

// dtest reaps the completion of every tenth RDMA Write only (-S, default 10): of a burst of 64,
// the last four complete unseen. Its Read phase then rewrites their source buffer without
// waiting for them: a race in dtest, since a buffer belongs to the provider until its DTO
// completes (dat_ep_post_rdma_write). When dtest gets there before the last of them is copied
// (over shared memory under ASan on a loaded machine, one run in 40 to 170: the 64th Write's
// source held the rewritten text as its copy ended, 16 us after the 63rd's), the peer's buffer
// gets "blah, blah, blah", which is also the text it started with, so a lost Write would look the
// same. This run checks that both sides pass and count their Writes; the next one, with the last
// completion reaped, the text.
TEST_F(StockDtest, BurstsOf64FourKibWritesPass) {
  const ConsumerPairResult run = RunBothPass({"-B", "64", "-b", "4096"});
  SCOPED_TRACE(run.Describe());
  // Both directions: 2 x 64 writes of 4096 bytes.
  EXPECT_NE(ClientOutput(run).find("128 x 4096"), std::string::npos);
}

TEST_F(StockDtest, BurstsOf64FourKibWritesWithTheLastCompletionReapedLandIntact) {
  // Every eighth completion reaped: the 64th too, so every Write completes before dtest
  // touches the source again.
  const ConsumerPairResult run = RunBothPass({"-B", "64", "-b", "4096", "-S", "8"});
  SCOPED_TRACE(run.Describe());
  EXPECT_NE(ClientOutput(run).find("128 x 4096"), std::string::npos);
  EXPECT_NE(ClientOutput(run).find("RDMA write buffer contains: server RDMA write data"), std::string::npos);
  EXPECT_NE(run.server.output.find("RDMA write buffer contains: client RDMA write data"), std::string::npos);
}

}  // namespace
}  // namespace softdat::testing
