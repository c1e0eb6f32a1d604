// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The stock `dapltest` from dapl2-utils, unchanged, over softdat-tcp: a server (-T S) per case,
// one client run (transaction test -T T or performance test -T P), then a quit client (-T Q) that
// stops the server. dapltest exits 0 whatever happens and prints its statistics even after a
// failed thread, so the verdict is its text: the expected statistics and no error line.
#include <gtest/gtest.h>

#include <sstream>

#include "testing/consumers/consumer_pair.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

// The lines of `output` that report a failure, in any of dapltest's spellings ("Test Error",
// "Validation Error", "Client: Test Failed", "bad connection event", "FAIL: ...", warnings).
std::string ErrorLines(const std::string& output) {
  std::istringstream lines(WithoutSanitizerReports(output));
  std::string line, found;
  while (std::getline(lines, line)) {
    for (const char* marker : {"rror", "Fail", "fail", "FAIL", "arning", "bad ", "annot", "ismatch", "softdat: error"}) {
      if (line.find(marker) != std::string::npos) {
        found += line + "\n";
        break;
      }
    }
  }
  return found;
}

std::vector<std::string> Common(std::uint16_t port) { return {"-D", "softdat-tcp", "-n", std::to_string(port)}; }

// `dapltest -T T`: options first, then the operations ("client SR 256 server SR 256 ...").
std::vector<std::string> Transaction(std::uint16_t port, const std::vector<std::string>& options,
                                     const std::vector<std::string>& ops) {
  std::vector<std::string> argv = {"dapltest", "-T", "T", "-s", "127.0.0.1"};
  const std::vector<std::string> common = Common(port);
  for (const auto* part : {&common, &options, &ops}) argv.insert(argv.end(), part->begin(), part->end());
  return argv;
}

// `dapltest -T P`: one operation ("RW 4096 1"), posted 200 times.
std::vector<std::string> Performance(std::uint16_t port, const std::vector<std::string>& op) {
  std::vector<std::string> argv = {"dapltest", "-T", "P", "-s", "127.0.0.1", "-i", "200"};
  const std::vector<std::string> common = Common(port);
  argv.insert(argv.end(), common.begin(), common.end());
  argv.insert(argv.end(), op.begin(), op.end());
  return argv;
}

class StockDapltest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { EnterPrivateLoopback(); }

  // Starts `dapltest -T S` on `port` (a transaction test's threads also listen on the ports just
  // after it, so cases keep 100 ports apart), runs `client`, then `dapltest -T Q`. Checks that
  // every process ran to its end, that the server quit when told, and that nobody reported an
  // error; returns the client's output for the case's own checks.
  static std::string RunClientThenQuit(std::uint16_t port, const std::vector<std::string>& client) {
    ConsumerPairSpec spec;
    spec.server = {"dapltest", "-T", "S"};
    const std::vector<std::string> common = Common(port);
    spec.server.insert(spec.server.end(), common.begin(), common.end());
    std::vector<std::string> quit = {"dapltest", "-T", "Q", "-s", "127.0.0.1"};
    quit.insert(quit.end(), common.begin(), common.end());
    spec.clients = {client, quit};
    spec.ready_port = port;
    spec.server_bound = 60s;
    spec.client_bound = 25s;
    const ConsumerPairResult run = RunConsumerPair(spec, SoftdatTcpEnvironment());
    SCOPED_TRACE(run.Describe());
    EXPECT_TRUE(run.port_was_free);
    EXPECT_TRUE(run.server_listened);
    EXPECT_EQ(run.clients.size(), 2u);
    for (const SubprocessResult& result : run.clients) {
      EXPECT_NE(result.exit_code, 127) << "dapltest not found: install dapl2-utils (tools/dev does)";
      EXPECT_TRUE(ExitedCleanly(result));
      EXPECT_NE(result.output.find("End of Work -- Client Exiting"), std::string::npos);
      EXPECT_EQ(ErrorLines(result.output), "");
    }
    EXPECT_TRUE(ExitedCleanly(run.server));
    EXPECT_NE(run.server.output.find("DT_cs_Server (softdat-tcp):  Exiting."), std::string::npos);  // quit when told
    EXPECT_EQ(ErrorLines(run.server.output), "");
    return run.clients.empty() ? "" : run.clients[0].output;
  }
};

// Whether the transaction test's line for `total` (e.g. "Total RDMA Read  :       0.81 MB - ...")
// is there and counts some data.
bool MovedSomething(const std::string& output, const std::string& total) {
  const std::size_t at = output.find(total);
  if (at == std::string::npos) return false;
  const std::string line = output.substr(at, output.find('\n', at) - at);
  return line.find(":       0.00 MB") == std::string::npos;
}

TEST_F(StockDapltest, TransactionSendRecvPasses) {
  const std::string out = RunClientThenQuit(
      46100, Transaction(46100, {"-i", "200"}, {"client", "SR", "256", "server", "SR", "256"}));
  SCOPED_TRACE(out);
  EXPECT_NE(out.find("----- Stats ---- : 1 threads, 1 EPs"), std::string::npos);
  EXPECT_TRUE(MovedSomething(out, "Total Send"));
  EXPECT_TRUE(MovedSomething(out, "Total Recv"));
}

TEST_F(StockDapltest, TransactionSendRdmaWriteRdmaReadWithValidationPasses) {
  // -V makes both sides check every byte of every buffer each iteration (and adds three SR ops).
  const std::string out = RunClientThenQuit(
      46200, Transaction(46200, {"-i", "100", "-V"},
                         {"client", "SR", "256", "server", "SR", "256", "client", "RW", "4096", "server", "RW",
                          "4096", "client", "RR", "4096", "server", "RR", "4096"}));
  SCOPED_TRACE(out);
  EXPECT_NE(out.find("----- Stats ---- : 1 threads, 1 EPs"), std::string::npos);
  EXPECT_TRUE(MovedSomething(out, "Total RDMA Read"));
  EXPECT_TRUE(MovedSomething(out, "Total RDMA Write"));
}

TEST_F(StockDapltest, TransactionOnTwoThreadsOfFourEndpointsPasses) {
  const std::string out = RunClientThenQuit(
      46300, Transaction(46300, {"-i", "100", "-t", "2", "-w", "4"},
                         {"client", "SR", "256", "server", "SR", "256", "client", "RW", "4096", "server", "RW",
                          "4096"}));
  SCOPED_TRACE(out);
  // dapltest counts EPs per thread.
  EXPECT_NE(out.find("----- Stats ---- : 2 threads, 4 EPs"), std::string::npos);
  EXPECT_TRUE(MovedSomething(out, "Total RDMA Write"));
}

TEST_F(StockDapltest, PerformanceRdmaWritePasses) {
  const std::string out = RunClientThenQuit(46400, Performance(46400, {"RW", "4096", "1"}));
  SCOPED_TRACE(out);
  // "raw: <op>, <operations>, <segment size>, <segments>, ..."
  EXPECT_NE(out.find("raw: RW, 200, 4096, 1,"), std::string::npos);
}

TEST_F(StockDapltest, PerformanceRdmaReadPasses) {
  const std::string out = RunClientThenQuit(46500, Performance(46500, {"RR", "4096", "1"}));
  SCOPED_TRACE(out);
  EXPECT_NE(out.find("raw: RR, 200, 4096, 1,"), std::string::npos);
}

}  // namespace
}  // namespace softdat::testing
