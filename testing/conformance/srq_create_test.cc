// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_srq_create(3DAT): sizes at least as requested and reported by query, the initial state,
// the default low watermark, and the refusals.
#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

using SrqCreate = ConformanceTest;

TEST_F(SrqCreate, QueueSizeAndIovAtLeastRequestedAndQueryReportsActualValues) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(5, 2, &srq), DAT_SUCCESS);
  const DAT_SRQ_PARAM param = QuerySrq(srq);
  ASSERT_GE(param.max_recv_dtos, 5);
  ASSERT_GE(param.max_recv_iov, 2);
  ASSERT_LE(param.max_recv_dtos, 4096) << "test posts that many buffers";
  // The reported values are the real limits: exactly that many buffers and segments fit.
  Region region;
  ASSERT_EQ(Register(region, 64 * (param.max_recv_iov + 1), DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  std::vector<DAT_LMR_TRIPLET> iov;
  for (DAT_COUNT i = 0; i <= param.max_recv_iov; ++i) iov.push_back(region.Triplet(64 * i, 64));
  DAT_DTO_COOKIE cookie{};
  EXPECT_EQ(DAT_GET_TYPE(dat_srq_post_recv(srq, param.max_recv_iov + 1, iov.data(), cookie)),
            DAT_INVALID_PARAMETER);
  for (DAT_COUNT i = 0; i < param.max_recv_dtos; ++i)
    ASSERT_EQ(dat_srq_post_recv(srq, param.max_recv_iov, iov.data(), cookie), DAT_SUCCESS) << i;
  EXPECT_EQ(DAT_GET_TYPE(dat_srq_post_recv(srq, 1, iov.data(), cookie)), DAT_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, param.max_recv_dtos);
}

TEST_F(SrqCreate, StartsUnattachedAndOperational) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  const DAT_SRQ_PARAM param = QuerySrq(srq);
  EXPECT_EQ(param.srq_state, DAT_SRQ_STATE_OPERATIONAL);
  EXPECT_EQ(param.ia_handle, ia_);
  EXPECT_EQ(param.pz_handle, pz_);
  EXPECT_EQ(param.available_dto_count, 0);
  EXPECT_EQ(param.outstanding_dto_count, 0);
  // Unattached: no EP holds it, so it can be freed at once.
  EXPECT_EQ(dat_srq_free(srq), DAT_SUCCESS);
}

TEST_F(SrqCreate, LowWatermarkAtCreateIsDefaultAndRaisesNoEvent) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq, DAT_SRQ_LW_DEFAULT), DAT_SUCCESS);
  EXPECT_EQ(QuerySrq(srq).low_watermark, DAT_SRQ_LW_DEFAULT);
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(Wait(async_evd_, event, kQuietUs)), DAT_TIMEOUT_EXPIRED)
      << "an empty SRQ with the default low watermark must not raise an event";
}

TEST_F(SrqCreate, InvalidAttributeOrCombinationIsInvalidParameter) {
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  EXPECT_EQ(DAT_GET_TYPE(CreateSrq(0, 1, &srq)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(CreateSrq(-1, 1, &srq)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(CreateSrq(4, -1, &srq)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(CreateSrq(ia_attr_.max_recv_per_srq + 1, 1, &srq)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(CreateSrq(4, 1 << 20, &srq)), DAT_INVALID_PARAMETER);
  // A combination: a low watermark above the queue size.
  EXPECT_EQ(DAT_GET_TYPE(CreateSrq(4, 1, &srq, 5)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(dat_srq_create(ia_, pz_, nullptr, &srq)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(srq, DAT_HANDLE_NULL);
}

TEST_F(SrqCreate, BadIaOrPzIsInvalidHandle) {
  DAT_SRQ_ATTR attr{4, 1, DAT_SRQ_LW_DEFAULT};
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  // A freed PZ.
  DAT_PZ_HANDLE freed_pz;
  ASSERT_EQ(dat_pz_create(ia_, &freed_pz), DAT_SUCCESS);
  ASSERT_EQ(dat_pz_free(freed_pz), DAT_SUCCESS);
  DAT_RETURN result = dat_srq_create(ia_, freed_pz, &attr, &srq);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_HANDLE) << DatReturnName(result);
  EXPECT_EQ(DAT_GET_SUBTYPE(result), DAT_INVALID_HANDLE_PZ);
  // A handle of another type where the PZ goes.
  const DAT_EVD_HANDLE evd = MakeEvd(DAT_EVD_DTO_FLAG);
  result = dat_srq_create(ia_, reinterpret_cast<DAT_PZ_HANDLE>(evd), &attr, &srq);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_HANDLE) << DatReturnName(result);
  EXPECT_EQ(DAT_GET_SUBTYPE(result), DAT_INVALID_HANDLE_PZ);
  // A PZ of another IA.
  DAT_IA_HANDLE other_ia;
  DAT_EVD_HANDLE other_async = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>(SuiteIaName()), 8, &other_async, &other_ia), DAT_SUCCESS);
  DAT_PZ_HANDLE other_pz;
  ASSERT_EQ(dat_pz_create(other_ia, &other_pz), DAT_SUCCESS);
  result = dat_srq_create(ia_, other_pz, &attr, &srq);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_HANDLE) << DatReturnName(result);
  // A closed IA.
  ASSERT_EQ(dat_pz_free(other_pz), DAT_SUCCESS);
  ASSERT_EQ(dat_ia_close(other_ia, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  result = dat_srq_create(other_ia, pz_, &attr, &srq);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_HANDLE) << DatReturnName(result);
  EXPECT_EQ(srq, DAT_HANDLE_NULL);
}

TEST_F(SrqCreate, EpsOfAnotherPzMayUseTheSrqWhenTheProviderSaysSo) {
  // USAGE: whether EPs sharing an SRQ may have different PZs is srq_ep_pz_difference_supported.
  if (provider_attr_.srq_ep_pz_difference_supported != DAT_TRUE)
    GTEST_SKIP() << "provider attribute srq_ep_pz_difference_supported is FALSE";
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Region region;
  ASSERT_EQ(Register(region, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = region.Triplet(0, 64);
  DAT_DTO_COOKIE cookie;
  cookie.as_64 = 3;
  ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
  DAT_PZ_HANDLE other_pz;
  ASSERT_EQ(dat_pz_create(ia_, &other_pz), DAT_SUCCESS);
  // The receiving EP is of another PZ than the SRQ; the buffer is the SRQ's.
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair, {.receiver_pz = other_pz}));
  ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 'p'));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(dto.user_cookie.as_64, 3u);
  EXPECT_EQ(region.bytes[0], 'p');
}

// The EP attributes are the 7th argument of dat_ep_create_with_srq (the 6th of dat_ep_create):
// an out-of-range one names its own position (it once named the 6th, the SRQ handle, for both).
TEST_F(SrqCreate, EpWithSrqRefusesBadAttributesAsItsSeventhArgument) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  DAT_EVD_HANDLE evd;
  ASSERT_EQ(dat_evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &evd), DAT_SUCCESS);
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.max_request_dtos = 1;
  attr.max_request_iov = -1;  // out of range
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  DAT_RETURN result = dat_ep_create_with_srq(ia_, pz_, DAT_HANDLE_NULL, DAT_HANDLE_NULL, evd, srq, &attr, &ep);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << DatReturnName(result);
  EXPECT_EQ(DAT_GET_SUBTYPE(result), DAT_INVALID_ARG7) << DatReturnName(result);
  result = dat_ep_create(ia_, pz_, DAT_HANDLE_NULL, DAT_HANDLE_NULL, evd, &attr, &ep);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << DatReturnName(result);
  EXPECT_EQ(DAT_GET_SUBTYPE(result), DAT_INVALID_ARG6) << DatReturnName(result);
  EXPECT_EQ(ep, DAT_HANDLE_NULL);
  // A null output handle is the last argument of each.
  attr.max_request_iov = 1;
  result = dat_ep_create_with_srq(ia_, pz_, DAT_HANDLE_NULL, DAT_HANDLE_NULL, evd, srq, &attr, nullptr);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << DatReturnName(result);
  EXPECT_EQ(DAT_GET_SUBTYPE(result), DAT_INVALID_ARG8) << DatReturnName(result);
  ASSERT_EQ(dat_evd_free(evd), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::conformance
