// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_srq_set_lw(3DAT): the low-watermark event is one-shot per arming, fires the first time the
// number of buffers on the SRQ is below the watermark (at once if it already is), names the SRQ
// with reason DAT_SRQ_LOW_WATERMARK_EVENT, and a watermark above max_recv_dtos is refused.
#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

class SrqSetLw : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (provider_attr_.srq_watermarks_supported == 0)
      GTEST_SKIP() << "provider attribute srq_watermarks_supported is 0";
  }
  void PostBuffers(DAT_SRQ_HANDLE srq, int count) {
    if (slots_.region.bytes.empty()) {
      slots_.slot_size = 64;
      ASSERT_EQ(Register(slots_.region, 64 * 16, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
    }
    for (int i = 0; i < count; ++i) {
      DAT_LMR_TRIPLET iov = slots_.Slot(i % 16);
      DAT_DTO_COOKIE cookie;
      cookie.as_64 = i;
      ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
    }
  }
  // Sends one message and reaps its receive completion: by then its buffer was taken.
  void Deliver(Pair& pair) {
    ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 'm'));
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
  }
  bool AsyncQueueEmpty() {
    DAT_EVENT event{};
    return DAT_GET_TYPE(Wait(async_evd_, event, kQuietUs)) == DAT_TIMEOUT_EXPIRED;  // waits the quiet interval
  }
  SlotBuffers slots_;
};

TEST_F(SrqSetLw, EventTheFirstTimeBuffersDropBelowTheWatermarkThenNoMore) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(16, 1, &srq), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 4));
  ASSERT_EQ(dat_srq_set_lw(srq, 3), DAT_SUCCESS);
  EXPECT_EQ(QuerySrq(srq).low_watermark, 3);
  EXPECT_TRUE(AsyncQueueEmpty()) << "4 buffers are not below 3";
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));  // 3 left: not below 3
  EXPECT_TRUE(AsyncQueueEmpty()) << "3 buffers are not below 3";
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));  // 2 left: below
  DAT_EVENT event{};
  ASSERT_EQ(Wait(async_evd_, event), DAT_SUCCESS) << "no low-watermark event";
  EXPECT_EQ(event.event_data.asynch_error_event_data.dat_handle, srq);
  EXPECT_EQ(event.event_data.asynch_error_event_data.reason, DAT_SRQ_LOW_WATERMARK_EVENT);
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));  // 1 left: still below, but the event was used
  EXPECT_TRUE(AsyncQueueEmpty()) << "one event per arming";
}

TEST_F(SrqSetLw, EventAtOnceIfAlreadyBelow) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(16, 1, &srq), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 1));
  ASSERT_EQ(dat_srq_set_lw(srq, 2), DAT_SUCCESS);
  EXPECT_TRUE(WaitWatermarkEvent(srq, DAT_SRQ_LOW_WATERMARK_EVENT));
}

TEST_F(SrqSetLw, OneEventPerArming) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(16, 1, &srq), DAT_SUCCESS);
  ASSERT_EQ(dat_srq_set_lw(srq, 1), DAT_SUCCESS);  // empty: below at once
  EXPECT_TRUE(WaitWatermarkEvent(srq, DAT_SRQ_LOW_WATERMARK_EVENT));
  // Still below, not re-armed: posting and taking buffers raises nothing.
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 2));
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));
  EXPECT_TRUE(AsyncQueueEmpty());
  // Armed again: one more event (empty SRQ, below 1 at once), and one only.
  ASSERT_EQ(dat_srq_set_lw(srq, 1), DAT_SUCCESS);
  EXPECT_TRUE(WaitWatermarkEvent(srq, DAT_SRQ_LOW_WATERMARK_EVENT));
  EXPECT_TRUE(AsyncQueueEmpty());
}

TEST_F(SrqSetLw, NewWatermarkReplacesTheOld) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(16, 1, &srq), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostBuffers(srq, 4));
  ASSERT_EQ(dat_srq_set_lw(srq, 3), DAT_SUCCESS);
  ASSERT_EQ(dat_srq_set_lw(srq, 1), DAT_SUCCESS);  // replaces 3: nothing fires at 2 left
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));  // 1 left: not below 1
  EXPECT_TRUE(AsyncQueueEmpty()) << "the replaced watermark of 3 must not fire";
  ASSERT_NO_FATAL_FAILURE(Deliver(pair));  // 0 left: below 1
  EXPECT_TRUE(WaitWatermarkEvent(srq, DAT_SRQ_LOW_WATERMARK_EVENT));
  // DAT_SRQ_LW_DEFAULT (0) asks for no event: nothing is below it.
  ASSERT_EQ(dat_srq_set_lw(srq, DAT_SRQ_LW_DEFAULT), DAT_SUCCESS);
  EXPECT_TRUE(AsyncQueueEmpty());
}

TEST_F(SrqSetLw, AboveMaxRecvDtosIsInvalidParameter) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  const DAT_COUNT size = QuerySrq(srq).max_recv_dtos;
  const DAT_RETURN result = dat_srq_set_lw(srq, size + 1);
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << DatReturnName(result);
  EXPECT_EQ(QuerySrq(srq).low_watermark, DAT_SRQ_LW_DEFAULT) << "a refused call changes nothing";
  EXPECT_TRUE(AsyncQueueEmpty());
  EXPECT_EQ(dat_srq_set_lw(srq, size), DAT_SUCCESS) << "max_recv_dtos itself is allowed";
}

}  // namespace
}  // namespace softdat::conformance
