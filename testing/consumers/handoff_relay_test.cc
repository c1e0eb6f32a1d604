// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// HandoffRelay against a fake dtest server: the client gets the server's bytes only once the
// server's next port listens, and a server that never gets ready makes Start fail in its bound.
// The same for the handoff_relay command, which says it is ready with a file.
#include "testing/consumers/handoff_relay.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>

#include "testing/consumers/consumer_pair.h"
#include "testing/dat_conf.h"
#include "testing/subprocess.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

// A socket bound to a free loopback port, listening only if `listening`; its port in `port`. A
// bound socket keeps the port: no other bind and no connect's choice of a local port takes it.
int BindFreePort(std::uint16_t& port, bool listening) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = LoopbackAddress(0);
  socklen_t length = sizeof address;
  if (fd < 0) return -1;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 || (listening && listen(fd, 4) != 0) ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(fd);
    return -1;
  }
  port = ntohs(address.sin_port);
  return fd;
}

// dtest's server in miniature: accepts one connection on its hand-off listener, closes the
// listener, writes `handoff` (dtestx's: then reads `answer_bytes`), and listens on its second
// port only when `ready` is set.
class FakeServer {
 public:
  explicit FakeServer(std::string handoff, std::size_t answer_bytes = 0)
      : handoff_(std::move(handoff)), answer_(answer_bytes, '\0') {
    handoff_listener_ = BindFreePort(handoff_port_, true);
    // Bound from the start and listening only once ready. Closed and bound again at the ready, the
    // port was free in between, and a test running beside this one (the scale test opens 10,000
    // loopback connections) could take it as a connection's local port: the server then never
    // listened, and the relay waited out its bound (1 run in 6 under tsan with two CPU hogs).
    second_listener_ = BindFreePort(second_port_, false);
    thread_ = std::thread([this] {
      const int fd = accept4(handoff_listener_, nullptr, nullptr, SOCK_CLOEXEC);
      close(handoff_listener_);
      if (fd >= 0) {
        (void)send(fd, handoff_.data(), handoff_.size(), MSG_NOSIGNAL);
        if (!answer_.empty() && recv(fd, answer_.data(), answer_.size(), MSG_WAITALL) != ssize_t(answer_.size()))
          answer_.clear();
        handed_off_ = true;
      }
      while (!ready_ && !stop_) std::this_thread::sleep_for(1ms);
      if (ready_) (void)listen(second_listener_, 4);
      if (fd >= 0) close(fd);
    });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    close(second_listener_);
  }
  std::uint16_t handoff_port() const { return handoff_port_; }
  std::uint16_t second_port() const { return second_port_; }
  bool handed_off() const { return handed_off_; }
  // What the server read after its hand-off (once handed_off()).
  const std::string& answer() const { return answer_; }
  void SetReady() { ready_ = true; }

 private:
  std::string handoff_;
  std::string answer_;
  std::uint16_t handoff_port_ = 0, second_port_ = 0;
  int handoff_listener_ = -1, second_listener_ = -1;
  std::atomic<bool> ready_{false}, stop_{false}, handed_off_{false};
  std::thread thread_;
};

// What a client reading `bytes` from the hand-off port gets.
std::string ReadHandoff(std::uint16_t port, std::size_t bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in address = LoopbackAddress(port);
  std::string got(bytes, '\0');
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      recv(fd, got.data(), bytes, MSG_WAITALL) != static_cast<ssize_t>(bytes))
    got.clear();
  close(fd);
  return got;
}

// The fake's own promise, which the tests below lean on: until it is ready, its next port is
// bound to nothing else (another socket's bind fails) and does not listen.
TEST(FakeServer, KeepsItsNextPortFromOtherSocketsUntilItListens) {
  FakeServer server(std::string(128, 'e'));
  const int other = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(other, 0);
  const sockaddr_in at = LoopbackAddress(server.second_port());
  const int bound = bind(other, reinterpret_cast<const sockaddr*>(&at), sizeof at);
  const int error = errno;
  close(other);
  EXPECT_NE(bound, 0) << "port " << server.second_port() << " was free before the server listened on it";
  EXPECT_EQ(error, EADDRINUSE);
  EXPECT_FALSE(Listening(server.second_port()));
  // Its thread waits in accept for a client: one takes the hand-off, so that it can end.
  EXPECT_EQ(ReadHandoff(server.handoff_port(), 128), std::string(128, 'e'));
}

TEST(HandoffRelay, TheClientGetsTheServersBytesOnlyOnceItsNextPortListens) {
  const std::string handoff(128, 'a');
  FakeServer server(handoff);
  HandoffRelay relay;
  std::string error;
  auto started = std::async(std::launch::async, [&] {
    return relay.Start(server.handoff_port(), handoff.size(), server.second_port(), 10s, error);
  });
  // The relay took the hand-off, but waits for the server's second port: it serves nothing yet.
  while (!server.handed_off()) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(started.wait_for(100ms), std::future_status::timeout);
  EXPECT_FALSE(Listening(server.handoff_port()));
  server.SetReady();
  ASSERT_TRUE(started.get()) << error;
  EXPECT_TRUE(Listening(server.second_port()));
  EXPECT_EQ(ReadHandoff(server.handoff_port(), handoff.size()), handoff);
}

// dtestx: the server reads the client's address before it creates its PSP, so the relay answers
// for the client; the client's own answer is read and dropped.
TEST(HandoffRelay, ADtestxHandOffIsAnsweredForTheClientAndTheClientsAnswerDropped) {
  const std::string handoff(128, 'x');
  FakeServer server(handoff, kDtestHandoffBytes);
  HandoffRelay relay;
  std::string error;
  const std::string reply = DtestxReply(LoopbackAddress(0), "softdat-tcp");
  ASSERT_EQ(reply.size(), kDtestHandoffBytes);
  auto started = std::async(std::launch::async, [&] {
    return relay.Start(server.handoff_port(), handoff.size(), server.second_port(), 10s, error, reply);
  });
  while (!server.handed_off()) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(server.answer(), reply);
  unsigned short lid = 1;
  unsigned qpn = 1, scope = 1, address = 0;
  char provider[64] = {};
  ASSERT_EQ(std::sscanf(server.answer().c_str(), "%04hx:%08x:%08x:%08x:%63s", &lid, &qpn, &scope, &address, provider), 5);
  EXPECT_EQ(lid, 0);
  EXPECT_EQ(address, htonl(INADDR_LOOPBACK)) << "the 32 bits of sin_addr, as dtestx prints them";
  EXPECT_STREQ(provider, "softdat-tcp");
  server.SetReady();
  ASSERT_TRUE(started.get()) << error;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in to = LoopbackAddress(server.handoff_port());
  std::string got(handoff.size(), '\0');
  ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
  ASSERT_EQ(recv(fd, got.data(), got.size(), MSG_WAITALL), ssize_t(got.size()));
  EXPECT_EQ(got, handoff);
  EXPECT_EQ(send(fd, reply.data(), reply.size(), MSG_NOSIGNAL), ssize_t(reply.size()));
  close(fd);
}

TEST(HandoffRelay, AServerThatNeverGetsReadyFailsWithinTheBound) {
  const std::string handoff(128, 'b');
  FakeServer server(handoff);
  HandoffRelay relay;
  std::string error;
  EXPECT_FALSE(relay.Start(server.handoff_port(), handoff.size(), server.second_port(), 1s, error));
  EXPECT_NE(error.find(std::to_string(server.second_port())), std::string::npos) << error;
  EXPECT_FALSE(Listening(server.handoff_port()));
}

// The handoff_relay command in this test's runfiles.
std::string RelayCommand() { return RunfilePath("testing/consumers/handoff_relay"); }

// A ready file's path in this test's own temporary directory.
std::string ReadyFile(const char* name) {
  const std::string path = TestTmpPath(name);
  std::filesystem::remove(path);
  return path;
}

TEST(HandoffRelayCommand, SaysReadyAndServesTheBytesOnlyOnceTheServersNextPortListens) {
  const std::string handoff(128, 'c');
  FakeServer server(handoff);
  const std::string ready = ReadyFile("relay-ready");
  auto relay = std::async(std::launch::async, [&] {
    return RunSubprocess({RelayCommand(), std::to_string(server.handoff_port()), "128",
                          std::to_string(server.second_port()), "10", ready},
                         {}, 15s);
  });
  while (!server.handed_off()) std::this_thread::sleep_for(1ms);
  // The server's next port does not listen: no ready file, and nothing on the hand-off port.
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(std::filesystem::exists(ready));
  EXPECT_FALSE(Listening(server.handoff_port()));
  server.SetReady();
  for (int i = 0; i < 1000 && !std::filesystem::exists(ready); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(std::filesystem::exists(ready));
  EXPECT_TRUE(Listening(server.second_port()));
  EXPECT_EQ(ReadHandoff(server.handoff_port(), handoff.size()), handoff);
  const SubprocessResult result = relay.get();
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(HandoffRelayCommand, FailsWithTheReasonWhenTheServerNeverGetsReady) {
  const std::string handoff(128, 'd');
  FakeServer server(handoff);
  const std::string ready = ReadyFile("relay-never-ready");
  const SubprocessResult result = RunSubprocess(
      {RelayCommand(), std::to_string(server.handoff_port()), "128", std::to_string(server.second_port()), "1", ready},
      {}, 15s);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find(std::to_string(server.second_port())), std::string::npos) << result.output;
  EXPECT_FALSE(std::filesystem::exists(ready));
}

TEST(HandoffRelayCommand, RefusesBadArguments) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, {"15828", "128", "45248", "10"}, {"0", "128", "45248", "10", "f"},
        {"15828", "x", "45248", "10", "f"}, {"70000", "128", "45248", "10", "f"}}) {
    std::vector<std::string> argv{RelayCommand()};
    argv.insert(argv.end(), args.begin(), args.end());
    const SubprocessResult result = RunSubprocess(argv, {}, 5s);
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_NE(result.output.find("usage:"), std::string::npos) << result.output;
  }
}

}  // namespace
}  // namespace softdat::testing
