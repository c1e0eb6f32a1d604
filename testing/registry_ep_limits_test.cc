// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EP queue depths through the stock registry: softdat-tcp sizes them by memory (an RNIC reports
// what its queue memory holds; rxe about a million work requests per QP), an EP preallocates
// what it asks for and not the maximum, and a depth beyond the limit is the consumer's error,
// said at the default log level. Regression test of stock `dtestsrq -c 100 -B 100 -b 4096`
// failing at dat_ep_create with DAT_INVALID_ARG6 while queue depths were capped at 4096 and the
// reason was logged only at SOFTDAT_LOG=info.
#include <arpa/inet.h>
#include <dat2/udat.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "testing/ledger/process_resources.h"

namespace softdat::testing {
namespace {

// What `call` writes to stderr (fd 2), through GoogleTest's own capture.
std::string StderrOf(const std::function<void()>& call) {
  ::testing::internal::CaptureStderr();
  call();
  return ::testing::internal::GetCapturedStderr();
}

class RegistryEpLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(std::getenv("SOFTDAT_LOG"), nullptr) << "the test checks the default log level";
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ia_open(const_cast<char*>("softdat-tcp"), 8, &async_evd, &ia_), DAT_SUCCESS);
    ASSERT_EQ(dat_ia_query(ia_, nullptr, DAT_IA_FIELD_ALL, &ia_attr_, 0, nullptr), DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(ia_, &pz_), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(ia_, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd_), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &connect_evd_), DAT_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS); }

  DAT_EP_ATTR Attributes(DAT_COUNT dtos) const {
    DAT_EP_ATTR attr{};
    attr.service_type = DAT_SERVICE_TYPE_RC;
    attr.max_message_size = 4096;
    attr.max_rdma_size = 4096;
    attr.qos = DAT_QOS_BEST_EFFORT;
    attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    attr.max_recv_dtos = dtos;
    attr.max_request_dtos = dtos;
    attr.max_recv_iov = 1;
    attr.max_request_iov = 1;
    attr.srq_soft_hw = DAT_HW_DEFAULT;
    return attr;
  }

  DAT_RETURN CreateEp(DAT_COUNT dtos, DAT_EP_HANDLE* ep) {
    const DAT_EP_ATTR attr = Attributes(dtos);
    return dat_ep_create(ia_, pz_, dto_evd_, dto_evd_, connect_evd_, &attr, ep);
  }

  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_IA_ATTR ia_attr_{};
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE dto_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE connect_evd_ = DAT_HANDLE_NULL;
};

TEST_F(RegistryEpLimits, DepthsComeFromMemoryNotASmallConstant) {
  // One EP may take 1/16 of physical memory at about 1 KiB per DTO: far above dtestsrq's 10000
  // on any machine with 160 MB or more.
  EXPECT_GE(ia_attr_.max_dto_per_ep, 10000);
  EXPECT_LE(ia_attr_.max_dto_per_ep, 1 << 20);
  EXPECT_GE(ia_attr_.max_recv_per_srq, 10000);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  ASSERT_EQ(CreateEp(10000, &ep), DAT_SUCCESS);
  EXPECT_EQ(dat_ep_free(ep), DAT_SUCCESS);
}

TEST_F(RegistryEpLimits, AnEpPreallocatesWhatItAsksForNotTheMaximum) {
  DAT_EP_HANDLE warm = DAT_HANDLE_NULL;  // first-use allocations (progress thread, rings) out of the way
  ASSERT_EQ(CreateEp(16, &warm), DAT_SUCCESS);
  const ProcessResources before = SampleProcessResources();
  DAT_EP_HANDLE eps[8];
  for (DAT_EP_HANDLE& ep : eps) ASSERT_EQ(CreateEp(16, &ep), DAT_SUCCESS);
  const ProcessResources after = SampleProcessResources();
  // Eight EPs at the maximum depth would take hundreds of MiB; sixteen DTOs each take a few KiB
  // (plus each connection's fixed staging buffers).
  if (kResidentMemoryIsMeaningful) {
    EXPECT_LT(after.rss_bytes - before.rss_bytes, 8u << 20) << Describe(before) << " -> " << Describe(after);
  }
  for (DAT_EP_HANDLE ep : eps) EXPECT_EQ(dat_ep_free(ep), DAT_SUCCESS);
  EXPECT_EQ(dat_ep_free(warm), DAT_SUCCESS);
}

TEST_F(RegistryEpLimits, BeyondTheLimitIsInvalidArg6WithAWarningThatSaysWhy) {
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  DAT_RETURN status = DAT_SUCCESS;
  const std::string log = StderrOf([&] { status = CreateEp(ia_attr_.max_dto_per_ep + 1, &ep); });
  EXPECT_EQ(DAT_GET_TYPE(status), DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_SUBTYPE(status), DAT_INVALID_ARG6);
  EXPECT_NE(log.find("softdat: warn:"), std::string::npos) << log;
  EXPECT_NE(log.find("max_request_dtos"), std::string::npos) << log;
  EXPECT_NE(log.find(std::to_string(ia_attr_.max_dto_per_ep + 1)), std::string::npos) << "the value asked: " << log;
}

// Other mistakes a consumer makes are said at the default level too, not only at info.
TEST_F(RegistryEpLimits, ConsumerMistakesAreLoggedAtTheDefaultLevel) {
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  ASSERT_EQ(CreateEp(16, &ep), DAT_SUCCESS);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  DAT_RETURN status = DAT_SUCCESS;
  std::string log = StderrOf([&] {
    status = dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&remote), 70000, 1000000, 0, nullptr,
                            DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
  });
  EXPECT_EQ(DAT_GET_TYPE(status), DAT_INVALID_PARAMETER);
  EXPECT_NE(log.find("softdat: warn:"), std::string::npos) << log;
  EXPECT_NE(log.find("70000"), std::string::npos) << log;

  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE cr_evd = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), DAT_SUCCESS);
  log = StderrOf([&] { status = dat_psp_create(ia_, 0, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp); });
  EXPECT_EQ(DAT_GET_TYPE(status), DAT_INVALID_PARAMETER);
  EXPECT_NE(log.find("softdat: warn:"), std::string::npos) << log;
  EXPECT_EQ(dat_ep_free(ep), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::testing
