// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_srq_free(3DAT): refused with DAT_INVALID_STATE while an EP uses the SRQ (connected or not);
// succeeds once its EPs are freed.
#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

using SrqFree = ConformanceTest;

TEST_F(SrqFree, InvalidStateWhileAnEpUsesItSucceedsOnceItsEpsAreFreed) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  const DAT_EVD_HANDLE evd = MakeEvd(DAT_EVD_DTO_FLAG);
  DAT_EP_HANDLE idle_ep;
  ASSERT_EQ(dat_ep_create_with_srq(ia_, pz_, evd, DAT_HANDLE_NULL, DAT_HANDLE_NULL, srq, nullptr, &idle_ep),
            DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  DAT_RETURN result = dat_srq_free(srq);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_STATE) << DatReturnName(result);
  // No DAT_INVALID_STATE_SRQ_IN_USE: libdat2's dat_strerror cannot name it (dat/status_map.cc).
  EXPECT_EQ(DAT_GET_SUBTYPE(result), DAT_NO_SUBTYPE) << DatReturnName(result);
  ASSERT_EQ(dat_ep_free(idle_ep), DAT_SUCCESS);
  result = dat_srq_free(srq);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_STATE) << "the connected EP still uses it";
  ASSERT_NO_FATAL_FAILURE(Disconnect(pair));
  result = dat_srq_free(srq);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_STATE) << "a disconnected EP still uses it";
  ASSERT_EQ(dat_ep_free(pair.receiver), DAT_SUCCESS);
  EXPECT_EQ(dat_srq_free(srq), DAT_SUCCESS);
  DAT_SRQ_PARAM param;
  EXPECT_EQ(DAT_GET_TYPE(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &param)), DAT_INVALID_HANDLE);
}

}  // namespace
}  // namespace softdat::conformance
