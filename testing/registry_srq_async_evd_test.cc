// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The async EVD that dat_ia_open creates keeps room for one DAT_ASYNC_ERROR_EP_BROKEN per EP
// attached to an SRQ (each raises one when its connection ends), whatever length the consumer
// asked for. Regression: stock dtestsrq opens with 8 entries and runs 100 SRQ connections; when
// its client disconnected them all, the server's async EVD overflowed and the run failed.
#include <dat2/udat.h>
#include <gtest/gtest.h>

#include <vector>

namespace softdat::testing {
namespace {

DAT_COUNT AsyncQlen(DAT_IA_HANDLE ia) {
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  DAT_IA_ATTR ia_attr;
  EXPECT_EQ(dat_ia_query(ia, &async_evd, 0, &ia_attr, 0, nullptr), DAT_SUCCESS);
  DAT_EVD_PARAM param;
  EXPECT_EQ(dat_evd_query(async_evd, DAT_EVD_FIELD_EVD_QLEN, &param), DAT_SUCCESS);
  return param.evd_qlen;
}

TEST(RegistrySrqAsyncEvd, AsyncEvdHasRoomForTheBrokenEventOfEverySrqEndpoint) {
  constexpr int kEndpoints = 100;
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>("softdat-tcp"), 8, &async_evd, &ia), DAT_SUCCESS);
  const DAT_COUNT asked = AsyncQlen(ia);
  EXPECT_GE(asked, 8);
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_pz_create(ia, &pz), DAT_SUCCESS);
  DAT_SRQ_ATTR srq_attr{};
  srq_attr.max_recv_dtos = 16;
  srq_attr.max_recv_iov = 1;
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_srq_create(ia, pz, &srq_attr, &srq), DAT_SUCCESS);
  DAT_EVD_HANDLE dto_evd = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_evd_create(ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd), DAT_SUCCESS);

  std::vector<DAT_EP_HANDLE> eps(kEndpoints, DAT_HANDLE_NULL);
  for (DAT_EP_HANDLE& ep : eps)
    ASSERT_EQ(dat_ep_create_with_srq(ia, pz, dto_evd, dto_evd, DAT_HANDLE_NULL, srq, nullptr, &ep), DAT_SUCCESS);
  EXPECT_GE(AsyncQlen(ia), asked + kEndpoints);

  // Freed EPs give their entries back: creating as many again needs no more room.
  for (DAT_EP_HANDLE ep : eps) ASSERT_EQ(dat_ep_free(ep), DAT_SUCCESS);
  const DAT_COUNT grown = AsyncQlen(ia);
  for (DAT_EP_HANDLE& ep : eps)
    ASSERT_EQ(dat_ep_create_with_srq(ia, pz, dto_evd, dto_evd, DAT_HANDLE_NULL, srq, nullptr, &ep), DAT_SUCCESS);
  EXPECT_EQ(AsyncQlen(ia), grown);

  EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::testing
