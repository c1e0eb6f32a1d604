// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_srq_resize(3DAT): no buffer is ever lost; shrinking below the outstanding buffers (on the
// SRQ, held by EPs, or completed but not reaped) or below the low watermark is DAT_INVALID_STATE
// and changes nothing; growing works.
#include <unistd.h>

#include <algorithm>
#include <set>

#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

class SrqResize : public ConformanceTest {
 protected:
  void PostBuffers(DAT_SRQ_HANDLE srq, int first, int count) {
    if (slots_.region.bytes.empty()) {
      slots_.slot_size = 64;
      ASSERT_EQ(Register(slots_.region, 64 * 32, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
    }
    for (int i = first; i < first + count; ++i) {
      DAT_LMR_TRIPLET iov = slots_.Slot(i);
      DAT_DTO_COOKIE cookie;
      cookie.as_64 = i;
      ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
    }
  }
  SlotBuffers slots_;
};

TEST_F(SrqResize, NeverLosesABuffer) {
  if (!ProviderSays("SOFTDAT_SRQ_RESIZE")) GTEST_SKIP() << "SOFTDAT_SRQ_RESIZE is not TRUE: this device cannot grow an SRQ";
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 0, 6));
  ASSERT_EQ(dat_srq_resize(srq, 24), DAT_SUCCESS);
  ASSERT_EQ(dat_srq_resize(srq, 6), DAT_SUCCESS);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 6);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  for (int i = 0; i < 6; ++i) ASSERT_NO_FATAL_FAILURE(Send(pair, 8, static_cast<char>('a' + i)));
  std::set<std::uint64_t> cookies;
  for (int i = 0; i < 6; ++i) {
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
    cookies.insert(dto.user_cookie.as_64);
  }
  EXPECT_EQ(cookies, (std::set<std::uint64_t>{0, 1, 2, 3, 4, 5}));
}

TEST_F(SrqResize, BelowOutstandingCountIsInvalidState) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 0, 5));
  DAT_RETURN result = dat_srq_resize(srq, 4);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_STATE) << DatReturnName(result);
  // Two buffers taken and completed but not reaped still count as outstanding.
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 'a'));
  ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 'b'));
  ASSERT_NO_FATAL_FAILURE(WaitSends(pair, 2));
  for (int i = 0; i < 10000 && QuerySrq(srq).available_dto_count != 3; ++i) usleep(1000);
  ASSERT_EQ(QuerySrq(srq).available_dto_count, 3);
  EXPECT_EQ(QuerySrq(srq).outstanding_dto_count, 5);
  result = dat_srq_resize(srq, 4);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_STATE) << DatReturnName(result);
  EXPECT_GE(QuerySrq(srq).max_recv_dtos, 5) << "a refused resize changes nothing";
  // Once reaped they no longer count.
  for (int i = 0; i < 2; ++i) {
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
  }
  EXPECT_EQ(dat_srq_resize(srq, 3), DAT_SUCCESS);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 3);
}

TEST_F(SrqResize, BuffersHeldByAnEpCountAsOutstanding) {
  // Seeing the buffer held needs dat_ep_recv_query's count of an SRQ EP.
  if (!SrqEpCountsKnown())
    GTEST_SKIP() << "ep_recv_info_supported: this provider cannot see a buffer an SRQ EP holds";
  // A 32 MiB message is caught while it arrives (its buffer held by the EP, not on the SRQ):
  // shrinking below the two posted buffers is refused whether or not it has completed since.
  const std::size_t size = std::min<std::size_t>(32u << 20, ia_attr_.max_message_size);
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Region big;
  ASSERT_EQ(Register(big, size, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = big.Triplet(0, size);
  DAT_DTO_COOKIE cookie{};
  ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 0, 1));
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair, {.sender_ia_name = SuiteIaName()}));
  ASSERT_NO_FATAL_FAILURE(Send(pair, size, 'b'));
  DAT_COUNT n = 0;
  for (long i = 0; i < 50'000'000 && n == 0; ++i) {
    Pump(pair.sender_request_evd);  // progress=poll: the sender writes what the socket takes
    ASSERT_EQ(dat_ep_recv_query(pair.receiver, &n, nullptr), DAT_SUCCESS);
    if (n == 0 && QuerySrq(srq).available_dto_count < 2) break;  // taken and completed already
    // Drives progress when the consumer does (progress=poll) without reaping: fewer than two
    // events are ever queued here, so a zero-timeout wait for two takes none.
    DAT_EVENT event{};
    DAT_COUNT more = 0;
    (void)dat_evd_wait(pair.receiver_recv_evd, 0, 2, &event, &more);
  }
  const DAT_SRQ_PARAM param = QuerySrq(srq);
  EXPECT_EQ(param.available_dto_count, 1);
  EXPECT_EQ(param.outstanding_dto_count, 2);
  const DAT_RETURN result = dat_srq_resize(srq, 1);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_STATE) << DatReturnName(result);
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto, pair.sender_request_evd));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(dto.transfered_length, size);
  EXPECT_EQ(dat_srq_resize(srq, 1), DAT_SUCCESS) << "one buffer is outstanding once the completion is reaped";
}

TEST_F(SrqResize, BelowLowWatermarkIsInvalidState) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 0, 6));
  ASSERT_EQ(dat_srq_set_lw(srq, 5), DAT_SUCCESS);
  const DAT_RETURN result = dat_srq_resize(srq, 4);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_STATE) << DatReturnName(result);
  EXPECT_EQ(QuerySrq(srq).low_watermark, 5);
  EXPECT_GE(QuerySrq(srq).max_recv_dtos, 6);
}

TEST_F(SrqResize, GrowingWorks) {
  if (!ProviderSays("SOFTDAT_SRQ_RESIZE")) GTEST_SKIP() << "SOFTDAT_SRQ_RESIZE is not TRUE: this device cannot grow an SRQ";
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  const DAT_COUNT before = QuerySrq(srq).max_recv_dtos;
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 0, before));
  ASSERT_EQ(dat_srq_resize(srq, before + 16), DAT_SUCCESS);
  EXPECT_GE(QuerySrq(srq).max_recv_dtos, before + 16);
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, before, 16));
  EXPECT_EQ(QuerySrq(srq).available_dto_count, before + 16);
}

}  // namespace
}  // namespace softdat::conformance
