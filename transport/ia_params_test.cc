// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// IA params parsing: what dat.conf may say, and the clear refusal of everything else.
#include "transport/ia_params.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace softdat {
namespace {

TEST(IaParams, TcpWithAddress) {
  IaParams params;
  std::string why;
  ASSERT_TRUE(ParseIaParams("tcp 127.0.0.1", params, why).ok()) << why;
  EXPECT_EQ(params.kind, TransportKind::kTcp);
  EXPECT_EQ(params.address, "127.0.0.1");
}

TEST(IaParams, ExtraBlanksAreIgnored) {
  IaParams params;
  std::string why;
  ASSERT_TRUE(ParseIaParams("  verbs\trxe0   1 ", params, why).ok()) << why;
  EXPECT_EQ(params.kind, TransportKind::kVerbs);
  EXPECT_EQ(params.device, "rxe0");
  EXPECT_EQ(params.port, 1);
}

TEST(IaParams, MalformedIsInvalidParameterWithReasonAndLeavesOutputAlone) {
  for (const char* text : {"", "   ", "tcp", "tcp a b", "verbs rxe0", "verbs rxe0 0", "verbs rxe0 256",
                           "verbs rxe0 1x", "verbs rxe0 -1", "udp 1.2.3.4", "fake",
                           "fake 1.2.3.4", "tcp \x01\x02", "tcp lo progress=fast",
                           "tcp lo rnr_timeout_ms=-1", "tcp lo crc=maybe", "tcp lo color=red",
                           "tcp lo timeout_ms=soon", "tcp lo timeout_ms=86400001",
                           "tcp lo coalesce_us=1000001", "tcp lo coalesce_us=x",
                           "tcp lo congestion=", "tcp lo congestion=BBR", "tcp lo congestion=a/b",
                           "tcp lo congestion=sixteen_letters_", "tcp lo =x"}) {
    IaParams params;
    params.address = "untouched";
    std::string why;
    Status status = ParseIaParams(text, params, why);
    EXPECT_EQ(status.code(), Code::kInvalidParameter) << '"' << text << '"';
    EXPECT_FALSE(why.empty()) << '"' << text << '"';
    EXPECT_EQ(params.address, "untouched");
  }
}

TEST(IaParams, OptionsFollowThePositionalWords) {
  IaParams params;
  std::string why;
  ASSERT_TRUE(ParseIaParams("tcp 127.0.0.1 progress=poll rnr_timeout_ms=250 crc=off timeout_ms=3000 coalesce_us=0", params, why)
                  .ok())
      << why;
  EXPECT_EQ(params.options.timeout_ms, 3000u);
  EXPECT_EQ(params.options.coalesce_us, 0u);
  EXPECT_EQ(params.address, "127.0.0.1");
  EXPECT_EQ(params.options.progress, ProgressMode::kPoll);
  EXPECT_EQ(params.options.rnr_timeout_ms, 250u);
  EXPECT_FALSE(params.options.mpa_crc);
}

TEST(IaParams, DefaultsAreThreadInfiniteRnrAndCrc) {
  IaParams params;
  std::string why;
  ASSERT_TRUE(ParseIaParams("tcp 127.0.0.1", params, why).ok()) << why;
  EXPECT_EQ(params.kind, TransportKind::kTcp);
  EXPECT_EQ(params.options.progress, ProgressMode::kThread);
  EXPECT_EQ(params.options.rnr_timeout_ms, 0u);
  EXPECT_TRUE(params.options.mpa_crc);
  EXPECT_EQ(params.options.coalesce_us, 16u);
  EXPECT_EQ(params.options.congestion, "auto");
}

TEST(IaParams, CongestionTakesAutoSystemOrAnAlgorithmsName) {
  for (const char* value : {"auto", "system", "reno", "cubic", "bbr", "dctcp", "fifteen_letters"}) {
    IaParams params;
    std::string why;
    ASSERT_TRUE(ParseIaParams(std::string("tcp lo congestion=") + value, params, why).ok()) << value << ": " << why;
    EXPECT_EQ(params.options.congestion, value);
  }
  setenv("SOFTDAT_TCP_CONGESTION", "system", 1);
  IaParams params;
  std::string why;
  ASSERT_TRUE(ParseIaParams("tcp lo", params, why).ok()) << why;
  EXPECT_EQ(params.options.congestion, "system");
  ASSERT_TRUE(ParseIaParams("tcp lo congestion=cubic", params, why).ok()) << why;
  EXPECT_EQ(params.options.congestion, "cubic") << "dat.conf wins over the environment";
  setenv("SOFTDAT_TCP_CONGESTION", "Reno!", 1);
  EXPECT_EQ(ParseIaParams("tcp lo", params, why).code(), Code::kInvalidParameter);
  EXPECT_NE(why.find("SOFTDAT_TCP_CONGESTION"), std::string::npos) << why;
  unsetenv("SOFTDAT_TCP_CONGESTION");
}

TEST(IaParams, EnvironmentSetsDefaultsAndDatConfWins) {
  setenv("SOFTDAT_PROGRESS", "poll", 1);
  setenv("SOFTDAT_RNR_TIMEOUT_MS", "40", 1);
  IaParams params;
  std::string why;
  ASSERT_TRUE(ParseIaParams("tcp lo rnr_timeout_ms=7", params, why).ok()) << why;
  EXPECT_EQ(params.options.progress, ProgressMode::kPoll);
  EXPECT_EQ(params.options.rnr_timeout_ms, 7u);
  setenv("SOFTDAT_PROGRESS", "sometimes", 1);
  EXPECT_EQ(ParseIaParams("tcp lo", params, why).code(), Code::kInvalidParameter);
  EXPECT_NE(why.find("SOFTDAT_PROGRESS"), std::string::npos) << why;
  unsetenv("SOFTDAT_PROGRESS");
  unsetenv("SOFTDAT_RNR_TIMEOUT_MS");
}

TEST(IaParams, OverlongWordsAreRefused) {
  IaParams params;
  std::string why;
  EXPECT_FALSE(ParseIaParams("tcp " + std::string(500, 'a'), params, why).ok());
  EXPECT_FALSE(ParseIaParams("verbs " + std::string(500, 'a') + " 1", params, why).ok());
}

TEST(ResolveIpv4, LiteralAndLoopbackInterface) {
  sockaddr_in address{};
  std::string why;
  ASSERT_TRUE(ResolveIpv4("127.0.0.2", address, why).ok()) << why;
  EXPECT_EQ(ntohl(address.sin_addr.s_addr), 0x7f000002u);
  ASSERT_TRUE(ResolveIpv4("lo", address, why).ok()) << why;
  EXPECT_EQ(ntohl(address.sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_EQ(address.sin_family, AF_INET);
}

TEST(ResolveIpv4, UnknownInterfaceIsInvalidParameter) {
  sockaddr_in address{};
  std::string why;
  EXPECT_EQ(ResolveIpv4("nosuchif0", address, why).code(), Code::kInvalidParameter);
  EXPECT_NE(why.find("nosuchif0"), std::string::npos);
  EXPECT_EQ(ResolveIpv4("999.1.1.1", address, why).code(), Code::kInvalidParameter);
}

}  // namespace
}  // namespace softdat
