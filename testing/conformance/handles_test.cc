// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Handles: every SRQ call (and the EP calls that take an SRQ or act on an SRQ EP) given a freed
// handle or a handle of another type returns DAT_INVALID_HANDLE with the subtype of the argument,
// and never crashes.
#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

using Handles = ConformanceTest;

void ExpectInvalidHandle(DAT_RETURN result, DAT_RETURN_SUBTYPE subtype, const char* call) {
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_HANDLE) << call << ": " << DatReturnName(result);
  EXPECT_EQ(DAT_GET_SUBTYPE(result), subtype) << call;
}

TEST_F(Handles, FreedSrqHandleIsInvalidHandleSrq) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  ASSERT_EQ(dat_srq_free(srq), DAT_SUCCESS);
  Region region;
  ASSERT_EQ(Register(region, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = region.Triplet(0, 64);
  DAT_SRQ_PARAM param;
  ExpectInvalidHandle(dat_srq_post_recv(srq, 1, &iov, DAT_DTO_COOKIE{}), DAT_INVALID_HANDLE_SRQ, "post_recv");
  ExpectInvalidHandle(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &param), DAT_INVALID_HANDLE_SRQ, "query");
  ExpectInvalidHandle(dat_srq_resize(srq, 8), DAT_INVALID_HANDLE_SRQ, "resize");
  ExpectInvalidHandle(dat_srq_set_lw(srq, 1), DAT_INVALID_HANDLE_SRQ, "set_lw");
  ExpectInvalidHandle(dat_srq_free(srq), DAT_INVALID_HANDLE_SRQ, "free");
  const DAT_EVD_HANDLE evd = MakeEvd(DAT_EVD_DTO_FLAG);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  ExpectInvalidHandle(dat_ep_create_with_srq(ia_, pz_, evd, DAT_HANDLE_NULL, DAT_HANDLE_NULL, srq, nullptr, &ep),
                      DAT_INVALID_HANDLE_SRQ, "ep_create_with_srq");
  EXPECT_EQ(ep, DAT_HANDLE_NULL);
}

TEST_F(Handles, WrongTypeWhereAnSrqGoesIsInvalidHandleSrq) {
  // Objects of other types, each of them a valid handle.
  const DAT_EVD_HANDLE evd = MakeEvd(DAT_EVD_DTO_FLAG);
  Region region;
  ASSERT_EQ(Register(region, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_EP_HANDLE ep;
  ASSERT_EQ(dat_ep_create(ia_, pz_, evd, evd, DAT_HANDLE_NULL, nullptr, &ep), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = region.Triplet(0, 64);
  for (DAT_HANDLE other : {static_cast<DAT_HANDLE>(pz_), static_cast<DAT_HANDLE>(evd),
                           static_cast<DAT_HANDLE>(region.lmr), static_cast<DAT_HANDLE>(ep)}) {
    const auto srq = reinterpret_cast<DAT_SRQ_HANDLE>(other);
    DAT_SRQ_PARAM param;
    ExpectInvalidHandle(dat_srq_post_recv(srq, 1, &iov, DAT_DTO_COOKIE{}), DAT_INVALID_HANDLE_SRQ, "post_recv");
    ExpectInvalidHandle(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &param), DAT_INVALID_HANDLE_SRQ, "query");
    ExpectInvalidHandle(dat_srq_resize(srq, 8), DAT_INVALID_HANDLE_SRQ, "resize");
    ExpectInvalidHandle(dat_srq_set_lw(srq, 1), DAT_INVALID_HANDLE_SRQ, "set_lw");
    ExpectInvalidHandle(dat_srq_free(srq), DAT_INVALID_HANDLE_SRQ, "free");
    DAT_EP_HANDLE created = DAT_HANDLE_NULL;
    ExpectInvalidHandle(dat_ep_create_with_srq(ia_, pz_, evd, DAT_HANDLE_NULL, DAT_HANDLE_NULL, srq, nullptr, &created),
                        DAT_INVALID_HANDLE_SRQ, "ep_create_with_srq");
  }
  // The objects are intact after all that.
  DAT_EP_PARAM param;
  EXPECT_EQ(dat_ep_query(ep, DAT_EP_FIELD_ALL, &param), DAT_SUCCESS);
  EXPECT_EQ(dat_ep_free(ep), DAT_SUCCESS);
}

TEST_F(Handles, SrqWhereAnotherTypeGoesIsInvalidHandleOfThatType) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  DAT_COUNT n, span;
  ExpectInvalidHandle(dat_ep_recv_query(reinterpret_cast<DAT_EP_HANDLE>(srq), &n, &span), DAT_INVALID_HANDLE_EP,
                      "ep_recv_query");
  ExpectInvalidHandle(dat_ep_set_watermark(reinterpret_cast<DAT_EP_HANDLE>(srq), 1, 1), DAT_INVALID_HANDLE_EP,
                      "ep_set_watermark");
  DAT_SRQ_ATTR attr{4, 1, DAT_SRQ_LW_DEFAULT};
  DAT_SRQ_HANDLE created = DAT_HANDLE_NULL;
  ExpectInvalidHandle(dat_srq_create(ia_, reinterpret_cast<DAT_PZ_HANDLE>(srq), &attr, &created),
                      DAT_INVALID_HANDLE_PZ, "srq_create");
  DAT_EVENT event;
  // DAT has no plain "EVD" subtype (only per role), so only the type is checked here.
  EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(reinterpret_cast<DAT_EVD_HANDLE>(srq), &event)), DAT_INVALID_HANDLE);
  EXPECT_EQ(QuerySrq(srq).srq_state, DAT_SRQ_STATE_OPERATIONAL) << "the SRQ is intact";
}

TEST_F(Handles, FreedEpIsInvalidHandleEp) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  const DAT_EVD_HANDLE evd = MakeEvd(DAT_EVD_DTO_FLAG);
  DAT_EP_HANDLE ep;
  ASSERT_EQ(dat_ep_create_with_srq(ia_, pz_, evd, DAT_HANDLE_NULL, DAT_HANDLE_NULL, srq, nullptr, &ep),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ep_free(ep), DAT_SUCCESS);
  DAT_COUNT n, span;
  ExpectInvalidHandle(dat_ep_recv_query(ep, &n, &span), DAT_INVALID_HANDLE_EP, "ep_recv_query");
  ExpectInvalidHandle(dat_ep_set_watermark(ep, 1, 1), DAT_INVALID_HANDLE_EP, "ep_set_watermark");
  EXPECT_EQ(dat_srq_free(srq), DAT_SUCCESS) << "the freed EP no longer uses the SRQ";
}

TEST_F(Handles, SrqOfAClosedIaIsInvalidHandleSrq) {
  DAT_IA_HANDLE other_ia;
  DAT_EVD_HANDLE other_async = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>(SuiteIaName()), 8, &other_async, &other_ia), DAT_SUCCESS);
  DAT_PZ_HANDLE other_pz;
  ASSERT_EQ(dat_pz_create(other_ia, &other_pz), DAT_SUCCESS);
  DAT_SRQ_ATTR attr{4, 1, DAT_SRQ_LW_DEFAULT};
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(dat_srq_create(other_ia, other_pz, &attr, &srq), DAT_SUCCESS);
  const DAT_EVD_HANDLE evd = MakeEvd(DAT_EVD_DTO_FLAG);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  DAT_RETURN result = dat_ep_create_with_srq(ia_, pz_, evd, DAT_HANDLE_NULL, DAT_HANDLE_NULL, srq, nullptr, &ep);
  EXPECT_NE(result, DAT_SUCCESS) << "an SRQ of another IA";
  // Abrupt close frees the SRQ with the IA.
  ASSERT_EQ(dat_ia_close(other_ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  DAT_SRQ_PARAM param;
  ExpectInvalidHandle(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &param), DAT_INVALID_HANDLE_SRQ, "query");
  ExpectInvalidHandle(dat_srq_set_lw(srq, 1), DAT_INVALID_HANDLE_SRQ, "set_lw");
  ExpectInvalidHandle(dat_srq_free(srq), DAT_INVALID_HANDLE_SRQ, "free");
}

void ExpectInvalidArgument(DAT_RETURN result, DAT_RETURN_SUBTYPE argument, const char* call) {
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << call << ": " << DatReturnName(result);
  EXPECT_EQ(DAT_GET_SUBTYPE(result), argument) << call << ": " << DatReturnName(result);
}

// A null pointer where a call writes its result (or reads a required structure) is refused as
// that argument, whichever call and layer: one convention, checked at the C ABI.
TEST_F(Handles, NullOutputsAreInvalidParameterNamingTheirArgument) {
  const DAT_EVD_HANDLE evd = MakeEvd(DAT_EVD_DTO_FLAG);
  DAT_COUNT nmore = 0;
  ExpectInvalidArgument(dat_pz_create(ia_, nullptr), DAT_INVALID_ARG2, "pz_create");
  ExpectInvalidArgument(dat_pz_query(pz_, DAT_PZ_FIELD_ALL, nullptr), DAT_INVALID_ARG3, "pz_query");
  ExpectInvalidArgument(dat_evd_create(ia_, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, nullptr), DAT_INVALID_ARG5,
                        "evd_create");
  ExpectInvalidArgument(dat_evd_query(evd, DAT_EVD_FIELD_ALL, nullptr), DAT_INVALID_ARG3, "evd_query");
  ExpectInvalidArgument(dat_evd_dequeue(evd, nullptr), DAT_INVALID_ARG2, "evd_dequeue");
  ExpectInvalidArgument(dat_evd_wait(evd, 0, 1, nullptr, &nmore), DAT_INVALID_ARG4, "evd_wait");
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  ExpectInvalidArgument(dat_srq_create(ia_, pz_, nullptr, &srq), DAT_INVALID_ARG3, "srq_create");
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  ExpectInvalidArgument(dat_psp_create_any(ia_, nullptr, MakeEvd(DAT_EVD_CR_FLAG), DAT_PSP_CONSUMER_FLAG, &psp),
                        DAT_INVALID_ARG2, "psp_create_any");
  const DAT_EVD_HANDLE connect = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create(ia_, pz_, evd, evd, connect, nullptr, &ep), DAT_SUCCESS);
  ExpectInvalidArgument(dat_ep_query(ep, DAT_EP_FIELD_ALL, nullptr), DAT_INVALID_ARG3, "ep_query");
  ExpectInvalidArgument(dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_ALL, nullptr), DAT_INVALID_ARG3, "ep_modify");
  ExpectInvalidArgument(dat_ep_get_status(ep, nullptr, nullptr, nullptr), DAT_INVALID_ARG2, "ep_get_status");
  EXPECT_EQ(srq, DAT_HANDLE_NULL);
  EXPECT_EQ(psp, DAT_HANDLE_NULL);
  ASSERT_EQ(dat_ep_free(ep), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::conformance
