// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The congestion= choice: which connections auto gives Reno, and that the kernel takes what is
// asked on a real loopback socket and refuses what it does not know.
#include "transport/tcp/congestion.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace softdat::transport::tcp {
namespace {

sockaddr_in Address(const char* dotted) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, dotted, &a.sin_addr);
  return a;
}

TEST(Congestion, AutoGivesRenoOnlyBetweenTwoAddressesOfThisHost) {
  const std::string mode = "auto";
  EXPECT_STREQ(CongestionFor(mode, Address("127.0.0.1"), Address("127.0.0.1")), "reno");
  EXPECT_STREQ(CongestionFor(mode, Address("127.0.0.1"), Address("127.0.0.77")), "reno") << "fan-in over 127.0.0.x";
  EXPECT_STREQ(CongestionFor(mode, Address("10.1.2.3"), Address("10.1.2.3")), "reno") << "our own address";
  EXPECT_EQ(CongestionFor(mode, Address("10.1.2.3"), Address("10.1.2.4")), nullptr) << "another host";
  EXPECT_EQ(CongestionFor(mode, Address("127.0.0.1"), Address("128.0.0.1")), nullptr);
}

TEST(Congestion, SystemNamesNothingAndANameIsItselfEverywhere) {
  EXPECT_EQ(CongestionFor("system", Address("127.0.0.1"), Address("127.0.0.1")), nullptr);
  EXPECT_EQ(CongestionFor("system", Address("10.1.2.3"), Address("10.1.2.4")), nullptr);
  const std::string cubic = "cubic";
  EXPECT_EQ(CongestionFor(cubic, Address("127.0.0.1"), Address("127.0.0.1")), cubic.c_str());
  EXPECT_EQ(CongestionFor(cubic, Address("10.1.2.3"), Address("10.1.2.4")), cubic.c_str());
}

// A connected pair on 127.0.0.1; each test closes what it opened.
struct Pair {
  int client = -1, server = -1;
  Pair() {
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in at = Address("127.0.0.1");
    socklen_t size = sizeof at;
    if (bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 || listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&at), &size) != 0) {
      close(listener);
      return;
    }
    client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(client, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0) server = accept(listener, nullptr, nullptr);
    close(listener);
  }
  ~Pair() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

TEST(Congestion, TheKernelTakesRenoAndRefusesAnUnknownName) {
  Pair pair;
  ASSERT_GE(pair.server, 0) << std::strerror(errno);
  ASSERT_TRUE(SetCongestion(pair.client, kLoopbackCongestion)) << std::strerror(errno);
  EXPECT_EQ(CongestionOf(pair.client), "reno");
  const std::string before = CongestionOf(pair.server);
  errno = 0;
  EXPECT_FALSE(SetCongestion(pair.server, "no_such_cc"));
  EXPECT_NE(errno, 0);
  EXPECT_EQ(CongestionOf(pair.server), before) << "a refusal leaves what ran";
}

}  // namespace
}  // namespace softdat::transport::tcp
