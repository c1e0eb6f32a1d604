// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// IA params parsing: what dat.conf may say, and the clear refusal of everything else.
#include "transport/ia_params.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

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
                           "tcp lo congestion=sixteen_letters_", "tcp lo =x",
                           "tcp lo shm=on", "tcp lo shm="}) {
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
  EXPECT_EQ(params.options.shm, ShmMode::kAuto);
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

TEST(IaParams, ReasonsSayWhereTheBadValueCameFromOnce) {
  IaParams params;
  std::string why;
  EXPECT_EQ(ParseIaParams("tcp lo progress=bogus", params, why).code(), Code::kInvalidParameter);
  EXPECT_EQ(why, "progress must be thread or poll, got \"bogus\"");
  setenv("SOFTDAT_PROGRESS", "bogus", 1);
  EXPECT_EQ(ParseIaParams("tcp lo", params, why).code(), Code::kInvalidParameter);
  EXPECT_EQ(why, "the environment's SOFTDAT_PROGRESS=bogus: progress must be thread or poll, got \"bogus\"");
  unsetenv("SOFTDAT_PROGRESS");
  EXPECT_EQ(ParseIaParams("tcp lo color=red", params, why).code(), Code::kInvalidParameter);
  EXPECT_EQ(why.rfind("unknown option \"color\"; known: progress=thread|poll, rnr_timeout_ms=N, crc=on|off", 0), 0u)
      << why;
}

// The table is the parser: each option's default is what a bare "tcp lo" gets, its variable sets
// that default, a dat.conf word sets it, and a bad value is refused naming the key.
TEST(IaOptionSpecs, EachOptionParsesShowsAndDefaultsAsItsRowSays) {
  IaParams defaults;
  std::string why;
  ASSERT_TRUE(ParseIaParams("tcp lo", defaults, why).ok()) << why;
  const std::map<std::string, std::pair<std::string, std::string>> samples = {
      {"progress", {"poll", "sometimes"}},  {"rnr_timeout_ms", {"250", "-1"}}, {"crc", {"off", "maybe"}},
      {"timeout_ms", {"3000", "soon"}},     {"spin_us", {"0", "1000001"}},     {"coalesce_us", {"0", "x"}},
      {"congestion", {"cubic", "BBR"}},     {"handoff_us", {"50", "0"}},      {"thread_spin_us", {"0", "1000001"}},
      {"shm", {"auto", "on"}}};
  ASSERT_EQ(IaOptionSpecs().size(), samples.size()) << "a new option needs a sample here";
  for (const IaOptionSpec& spec : IaOptionSpecs()) {
    SCOPED_TRACE(spec.key);
    ASSERT_TRUE(samples.count(spec.key));
    const auto& [good, bad] = samples.at(spec.key);
    EXPECT_EQ(spec.show(defaults.options), spec.default_value);
    EXPECT_EQ(std::string(spec.variable).rfind("SOFTDAT_", 0), 0u);
    IaParams params;
    ASSERT_TRUE(ParseIaParams(std::string("tcp lo ") + spec.key + "=" + good, params, why).ok()) << why;
    EXPECT_EQ(spec.show(params.options), good);
    EXPECT_EQ(ParseIaParams(std::string("tcp lo ") + spec.key + "=" + bad, params, why).code(),
              Code::kInvalidParameter);
    EXPECT_NE(why.find(spec.key), std::string::npos) << why;
    setenv(spec.variable, good.c_str(), 1);
    ASSERT_TRUE(ParseIaParams("tcp lo", params, why).ok()) << why;
    EXPECT_EQ(spec.show(params.options), good) << "the variable sets the default";
    unsetenv(spec.variable);
  }
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

// 203.0.113.0/24 is TEST-NET-3: no host has it (the test skips nothing: a host that did would fail
// here, and softdat would then be right to open it).
TEST(ResolveIpv4, AnAddressThisHostLacksIsRefusedNamingTheOnesItHas) {
  sockaddr_in address{};
  address.sin_port = 0x1234;
  std::string why;
  EXPECT_EQ(ResolveIpv4("203.0.113.254", address, why).code(), Code::kInvalidParameter);
  EXPECT_EQ(address.sin_port, 0x1234) << "output untouched";
  EXPECT_NE(why.find("\"203.0.113.254\" is not an address of this host"), std::string::npos) << why;
  EXPECT_NE(why.find("127.0.0.1 (lo)"), std::string::npos) << why;
  ASSERT_TRUE(ResolveIpv4("0.0.0.0", address, why).ok()) << why;
}

}  // namespace
}  // namespace softdat
