// Runs the stock `dtest` from dapl2-utils, unchanged, as server and client against softdat-tcp
// through DAT_OVERRIDE: connection setup, Sends, bidirectional RDMA Writes and Reads over
// loopback, and both sides must print "PASSED". Bounded in time; dtest's own port (45248) is
// fixed, so the target is tagged exclusive.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "testing/dat_conf.h"
#include "testing/subprocess.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

// dtest's fixed server port.
constexpr std::uint16_t kDtestPort = 45248;

bool SomeoneListens(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  at.sin_port = htons(port);
  const bool listening = ::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0;
  ::close(fd);
  return listening;
}

TEST(StockDtest, ServerAndClientPassOverSoftdatTcp) {
  const std::string conf = InstallDatConf({{"softdat-tcp", "tcp 127.0.0.1"}});
  const std::vector<std::pair<std::string, std::string>> env = {{"DAT_OVERRIDE", conf}};
  ASSERT_FALSE(SomeoneListens(kDtestPort)) << "port 45248 is taken; dtest cannot run";
  SubprocessResult server;
  std::thread server_thread([&] { server = RunSubprocess({"dtest", "-s", "-P", "softdat-tcp"}, env, 120s); });
  // The client does not retry: start it once the server listens. (A probe connection that
  // sends nothing is dropped by our listener after its MPA Request timeout.)
  for (int i = 0; i < 200 && !SomeoneListens(kDtestPort); ++i) std::this_thread::sleep_for(50ms);
  const SubprocessResult client =
      RunSubprocess({"dtest", "-P", "softdat-tcp", "-h", "127.0.0.1"}, env, 120s);
  server_thread.join();
  SCOPED_TRACE("server:\n" + server.output);
  SCOPED_TRACE("client:\n" + client.output);
  EXPECT_NE(client.exit_code, 127) << "dtest not found: install dapl2-utils (tools/dev does)";
  EXPECT_FALSE(server.timed_out);
  EXPECT_FALSE(client.timed_out);
  EXPECT_EQ(server.signal, 0);
  EXPECT_EQ(client.signal, 0);
  EXPECT_NE(server.output.find("DAPL Test Complete. PASSED"), std::string::npos);
  EXPECT_NE(client.output.find("DAPL Test Complete. PASSED"), std::string::npos);
}

}  // namespace
}  // namespace softdat::testing
