// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Opens, queries and closes softdat IAs through the stock libdat2 registry (DAT_OVERRIDE), as an
// unmodified DAT consumer would, including dat.conf lines with malformed IA params.
#include <arpa/inet.h>
#include <dat2/udat.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>

#include "testing/dat_conf.h"

namespace softdat::testing {
namespace {

class RegistryIaTest : public ::testing::Test {
 protected:
  static DAT_RETURN Open(const char* name, DAT_IA_HANDLE* ia, DAT_EVD_HANDLE* async_evd) {
    *async_evd = DAT_HANDLE_NULL;
    return dat_ia_open(const_cast<char*>(name), 8, async_evd, ia);
  }
};

TEST_F(RegistryIaTest, OpenQueryCloseThroughStockRegistry) {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  ASSERT_EQ(Open("softdat-tcp", &ia, &async_evd), DAT_SUCCESS);
  EXPECT_NE(async_evd, DAT_HANDLE_NULL) << "dat_ia_open must create the async EVD when asked";

  DAT_EVD_HANDLE queried_evd = DAT_HANDLE_NULL;
  DAT_IA_ATTR ia_attr;
  DAT_PROVIDER_ATTR provider_attr{};
  ASSERT_EQ(dat_ia_query(ia, &queried_evd, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL,
                         &provider_attr),
            DAT_SUCCESS);
  EXPECT_EQ(queried_evd, async_evd);
  EXPECT_STREQ(ia_attr.adapter_name, "softdat-tcp");
  EXPECT_STREQ(provider_attr.provider_name, "softdat");
  EXPECT_EQ(provider_attr.dapl_version_major, 2u);
  ASSERT_NE(ia_attr.ia_address_ptr, nullptr);
  ASSERT_EQ(ia_attr.ia_address_ptr->sa_family, AF_INET);
  const auto* address = reinterpret_cast<const sockaddr_in*>(ia_attr.ia_address_ptr);
  EXPECT_EQ(ntohl(address->sin_addr.s_addr), INADDR_LOOPBACK);

  DAT_HANDLE_TYPE type;
  ASSERT_EQ(dat_get_handle_type(async_evd, &type), DAT_SUCCESS);
  EXPECT_EQ(type, DAT_HANDLE_TYPE_EVD);

  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
}

TEST_F(RegistryIaTest, InterfaceNameResolvesToItsIpv4Address) {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd;
  ASSERT_EQ(Open("softdat-lo", &ia, &async_evd), DAT_SUCCESS);
  DAT_IA_ATTR ia_attr;
  ASSERT_EQ(dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &ia_attr, 0, nullptr), DAT_SUCCESS);
  const auto* address = reinterpret_cast<const sockaddr_in*>(ia_attr.ia_address_ptr);
  EXPECT_EQ(ntohl(address->sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

// The provider-specific attributes name the transport and every option in force, as the dat.conf
// line set them (what datinfo -v shows), beside what the device can do.
TEST_F(RegistryIaTest, ProviderSpecificAttributesNameTheTransportAndItsOptions) {
  const auto attributes = [](const char* ia_name) {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd;
    std::map<std::string, std::string> found;
    EXPECT_EQ(Open(ia_name, &ia, &async_evd), DAT_SUCCESS);
    if (ia == DAT_HANDLE_NULL) return found;
    DAT_PROVIDER_ATTR provider_attr{};
    EXPECT_EQ(dat_ia_query(ia, nullptr, 0, nullptr, DAT_PROVIDER_FIELD_ALL, &provider_attr), DAT_SUCCESS);
    for (DAT_COUNT i = 0; i < provider_attr.num_provider_specific_attr; ++i)
      found[provider_attr.provider_specific_attr[i].name] = provider_attr.provider_specific_attr[i].value;
    EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    return found;
  };
  const std::map<std::string, std::string> options = attributes("softdat-options");
  EXPECT_EQ(options.at("SOFTDAT_TRANSPORT"), "tcp");
  EXPECT_EQ(options.at("SOFTDAT_DEVICE"), "lo");
  EXPECT_EQ(options.at("SOFTDAT_PROGRESS"), "poll");
  EXPECT_EQ(options.at("SOFTDAT_MPA_CRC"), "off");
  EXPECT_EQ(options.at("SOFTDAT_RNR_TIMEOUT_MS"), "250");
  EXPECT_EQ(options.at("SOFTDAT_SPIN_US"), "7");
  EXPECT_EQ(options.at("SOFTDAT_SRQ_RESIZE"), "TRUE");
  EXPECT_EQ(options.at("SOFTDAT_RNR_WAITS"), "TRUE");
  EXPECT_EQ(options.at("SOFTDAT_TIMEOUT_MS"), "900");
  EXPECT_EQ(options.at("SOFTDAT_TCP_CONGESTION"), "reno");
  EXPECT_EQ(options.at("DAT_IB_RDMA_READ"), "TRUE");
  // What stock dtestsrq sizes its buffers from: one FPDU's payload.
  EXPECT_EQ(options.at("DAT_IB_TRANSPORT_MTU"), "65440");
  // Another IA of the same library keeps its own values (the defaults here).
  const std::map<std::string, std::string> defaults = attributes("softdat-tcp");
  EXPECT_EQ(defaults.at("SOFTDAT_DEVICE"), "127.0.0.1");
  EXPECT_EQ(defaults.at("SOFTDAT_MPA_CRC"), "on");
  EXPECT_EQ(defaults.at("SOFTDAT_RNR_TIMEOUT_MS"), "0");
  EXPECT_EQ(defaults.at("SOFTDAT_COALESCE_US"), "16");
  EXPECT_EQ(defaults.at("SOFTDAT_SHM"), "auto");
}

TEST_F(RegistryIaTest, MalformedParamsGiveInvalidParameterNotACrash) {
  for (const char* name : {"softdat-noword", "softdat-nosuchif", "softdat-badkind", "softdat-badport", "softdat-elsewhere"}) {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async_evd;
    EXPECT_EQ(DAT_GET_TYPE(Open(name, &ia, &async_evd)), DAT_INVALID_PARAMETER) << name;
  }
}

// "verbs rxe0 1" names a device this host does not have (no RDMA kernel; the VM suite has one):
// a clear invalid-parameter status, not a crash and not "not implemented".
TEST_F(RegistryIaTest, VerbsIaOnAMissingDeviceIsInvalidParameter) {
  if (access("/sys/class/infiniband/rxe0", F_OK) == 0) GTEST_SKIP() << "this host has rxe0";
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd;
  EXPECT_EQ(DAT_GET_TYPE(Open("softdat-verbs", &ia, &async_evd)), DAT_INVALID_PARAMETER);
}

// Every slot is built now: an RSP without an EP (a provider-created EP, which softdat does not
// offer: ep_creator is DAT_PSP_CREATES_EP_NEVER) is an unsupported model, not "not implemented".
TEST_F(RegistryIaTest, RspCreateWithoutEpIsModelNotSupported) {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd;
  ASSERT_EQ(Open("softdat-tcp", &ia, &async_evd), DAT_SUCCESS);
  DAT_RSP_HANDLE rsp = DAT_HANDLE_NULL;
  EXPECT_EQ(dat_rsp_create(ia, 1, DAT_HANDLE_NULL, async_evd, &rsp), DAT_MODEL_NOT_SUPPORTED);
  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

TEST_F(RegistryIaTest, ConsumerContextRoundTripsOnEvd) {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd;
  ASSERT_EQ(Open("softdat-tcp", &ia, &async_evd), DAT_SUCCESS);
  DAT_CONTEXT in;
  in.as_64 = 0x1234567890abcdefULL;
  ASSERT_EQ(dat_set_consumer_context(async_evd, in), DAT_SUCCESS);
  DAT_CONTEXT out;
  out.as_64 = 0;
  ASSERT_EQ(dat_get_consumer_context(async_evd, &out), DAT_SUCCESS);
  EXPECT_EQ(out.as_64, in.as_64);
  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::testing
