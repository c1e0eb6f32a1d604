// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What a consumer hears when an IA cannot reach the address it connects to, through the stock
// registry: an IA bound to loopback asked for another host's address ends
// DAT_CONNECTION_EVENT_UNREACHABLE, and softdat says why at the default level (warn), naming the
// IA and the IA of the interface that does reach the network. Before, only SOFTDAT_LOG=info showed
// "connect failed: Invalid argument".
#include <arpa/inet.h>
#include <dat2/udat.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>

#include <string>

namespace softdat::testing {
namespace {

// The first non-loopback interface with an IPv4 address, or "" when the host has none.
std::string NetworkInterface() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* entry = list; entry != nullptr && found.empty(); entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((ntohl(reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr.s_addr) >> 24) != 127)
      found = entry->ifa_name;
  }
  freeifaddrs(list);
  return found;
}

TEST(RegistryConnect, LoopbackIaAskedForAnotherHostSaysWhichIaReachesIt) {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>("softdat-tcp"), 8, &async_evd, &ia), DAT_SUCCESS);
  DAT_PZ_HANDLE pz;
  ASSERT_EQ(dat_pz_create(ia, &pz), DAT_SUCCESS);
  DAT_EVD_HANDLE dto_evd, conn_evd;
  ASSERT_EQ(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd), DAT_SUCCESS);
  DAT_EP_HANDLE ep;
  ASSERT_EQ(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, nullptr, &ep), DAT_SUCCESS);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  inet_pton(AF_INET, "203.0.113.7", &remote.sin_addr);  // TEST-NET-3: another host, never this one
  ::testing::internal::CaptureStderr();
  const DAT_RETURN connected = dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&remote), 4791, 5'000'000, 0,
                                              nullptr, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
  DAT_EVENT event{};
  DAT_COUNT more = 0;
  const DAT_RETURN waited = connected == DAT_SUCCESS ? dat_evd_wait(conn_evd, 5'000'000, 1, &event, &more) : connected;
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(connected, DAT_SUCCESS);
  ASSERT_EQ(waited, DAT_SUCCESS);
  EXPECT_EQ(event.event_number, DAT_CONNECTION_EVENT_UNREACHABLE);
  EXPECT_NE(log.find("softdat: warn: dat_ep_connect(softdat-tcp): this IA is bound to 127.0.0.1, a loopback address, "
                     "which reaches only this host: it cannot reach 203.0.113.7"),
            std::string::npos)
      << log;
  const std::string interface = NetworkInterface();
  if (!interface.empty())
    EXPECT_NE(log.find("use the IA of a network interface, as an install names it: softdat-tcp-" + interface + " (\"tcp " +
                       interface + "\""),
              std::string::npos)
        << log;
  else
    EXPECT_NE(log.find("this host has no network interface with an IPv4 address"), std::string::npos) << log;
  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// A loopback IA connecting to one of this host's other addresses reaches it: no warning.
TEST(RegistryConnect, LoopbackIaToThisHostsOwnAddressIsNotWarnedAbout) {
  const std::string interface = NetworkInterface();
  if (interface.empty()) GTEST_SKIP() << "this host has only loopback";
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>("softdat-tcp"), 8, &async_evd, &ia), DAT_SUCCESS);
  DAT_PZ_HANDLE pz;
  ASSERT_EQ(dat_pz_create(ia, &pz), DAT_SUCCESS);
  DAT_EVD_HANDLE dto_evd, conn_evd;
  ASSERT_EQ(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd), DAT_SUCCESS);
  DAT_EP_HANDLE ep;
  ASSERT_EQ(dat_ep_create(ia, pz, dto_evd, dto_evd, conn_evd, nullptr, &ep), DAT_SUCCESS);
  ifaddrs* list = nullptr;
  ASSERT_EQ(getifaddrs(&list), 0);
  sockaddr_in remote{};
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next)
    if (entry->ifa_addr != nullptr && entry->ifa_addr->sa_family == AF_INET && interface == entry->ifa_name)
      remote = *reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
  freeifaddrs(list);
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&remote), 9, 2'000'000, 0, nullptr,
                           DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_EVENT event{};
  DAT_COUNT more = 0;
  const DAT_RETURN waited = dat_evd_wait(conn_evd, 5'000'000, 1, &event, &more);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(waited, DAT_SUCCESS);
  EXPECT_EQ(log.find("a loopback address"), std::string::npos) << log;
  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::testing
