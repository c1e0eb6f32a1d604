// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_ep_set_watermark(3DAT) on an SRQ EP: the soft high watermark raises one async event
// (DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT naming the EP) per setting when the EP holds more receive
// buffers than it; the hard high watermark breaks the connection.
#include <algorithm>
#include <cstdio>

#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

class EpSetWatermark : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (provider_attr_.srq_watermarks_supported == 0)
      GTEST_SKIP() << "provider attribute srq_watermarks_supported is 0";
  }
  // srq_watermarks_supported bit 1: EP soft high watermark; bit 2: EP hard high watermark
  // (core/ia_attributes.h). A device transport cannot see what an SRQ EP holds, so lacks both.
  bool Supports(DAT_COUNT bit) const { return (provider_attr_.srq_watermarks_supported & bit) != 0; }
  static constexpr DAT_COUNT kSoft = 0x2;
  static constexpr DAT_COUNT kHard = 0x4;
  void SetUpPair() {
    ASSERT_EQ(CreateSrq(16, 1, &srq_), DAT_SUCCESS);
    slots_.slot_size = 64;
    ASSERT_EQ(Register(slots_.region, 64 * 16, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
    for (int i = 0; i < 16; ++i) {
      DAT_LMR_TRIPLET iov = slots_.Slot(i);
      DAT_DTO_COOKIE cookie;
      cookie.as_64 = i;
      ASSERT_EQ(dat_srq_post_recv(srq_, 1, &iov, cookie), DAT_SUCCESS);
    }
    ASSERT_NO_FATAL_FAILURE(Connect(srq_, pair_));
  }
  void Deliver() {
    ASSERT_NO_FATAL_FAILURE(Send(pair_, 8, 'm'));
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(pair_.receiver_recv_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
  }
  DAT_SRQ_HANDLE srq_ = DAT_HANDLE_NULL;
  SlotBuffers slots_;
  Pair pair_;
};

TEST_F(EpSetWatermark, SoftHighWatermarkRaisesOneEventPerSetting) {
  if (!Supports(kSoft)) GTEST_SKIP() << "provider attribute srq_watermarks_supported lacks the soft high watermark bit";
  ASSERT_NO_FATAL_FAILURE(SetUpPair());
  ASSERT_EQ(dat_ep_set_watermark(pair_.receiver, 0, DAT_WATERMARK_INFINITE), DAT_SUCCESS);
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(Wait(async_evd_, event, kQuietUs)), DAT_TIMEOUT_EXPIRED) << "holds 0: not above 0";
  ASSERT_NO_FATAL_FAILURE(Deliver());  // held 1 buffer while receiving
  ASSERT_EQ(Wait(async_evd_, event), DAT_SUCCESS) << "no soft high watermark event";
  EXPECT_EQ(event.event_data.asynch_error_event_data.dat_handle, pair_.receiver);
  EXPECT_EQ(event.event_data.asynch_error_event_data.reason, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT);
  ASSERT_NO_FATAL_FAILURE(Deliver());
  EXPECT_EQ(DAT_GET_TYPE(Wait(async_evd_, event, kQuietUs)), DAT_TIMEOUT_EXPIRED) << "one event per setting";
  ASSERT_EQ(dat_ep_set_watermark(pair_.receiver, 0, DAT_WATERMARK_INFINITE), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(Deliver());
  EXPECT_TRUE(WaitWatermarkEvent(pair_.receiver, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT)) << "re-armed";
  // The connection is unaffected by the soft watermark.
  ASSERT_NO_FATAL_FAILURE(Deliver());
}

TEST_F(EpSetWatermark, HardHighWatermarkBreaksTheConnection) {
  if (!Supports(kHard)) GTEST_SKIP() << "provider attribute srq_watermarks_supported lacks the hard high watermark bit";
  ASSERT_NO_FATAL_FAILURE(SetUpPair());
  ASSERT_EQ(dat_ep_set_watermark(pair_.receiver, DAT_WATERMARK_INFINITE, 0), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(Send(pair_, 8, 'm'));
  EXPECT_TRUE(WaitConnectionEvent(pair_.receiver_connect_evd, DAT_CONNECTION_EVENT_BROKEN));
  // The buffer the EP took is not lost: it comes back once, completed or flushed.
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair_.receiver_recv_evd, dto));
  EXPECT_TRUE(dto.status == DAT_DTO_SUCCESS || dto.status == DAT_DTO_ERR_FLUSHED) << dto.status;
  std::printf("hard watermark: taken buffer completed with status %d\n", static_cast<int>(dto.status));
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(pair_.receiver_recv_evd, &event)), DAT_QUEUE_EMPTY);
  EXPECT_EQ(QuerySrq(srq_).available_dto_count, 15);
}

class EpSetWatermarkHeld : public EpSetWatermark {
 protected:
  void SetUpBigMessage() {
    size_ = std::min<std::size_t>(32u << 20, ia_attr_.max_message_size);
    ASSERT_EQ(CreateSrq(4, 1, &srq_), DAT_SUCCESS);
    ASSERT_EQ(Register(big_, size_, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
    DAT_LMR_TRIPLET iov = big_.Triplet(0, size_);
    DAT_DTO_COOKIE cookie{};
    ASSERT_EQ(dat_srq_post_recv(srq_, 1, &iov, cookie), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(Connect(srq_, pair_, {.sender_ia_name = SuiteIaName()}));
    ASSERT_NO_FATAL_FAILURE(Send(pair_, size_, 'b'));
  }
  // Catches the receiver EP holding the buffer of the 32 MiB message while it still arrives. The
  // sender is on an IA of its own and, under progress=poll, each side moves only when pumped: one
  // pump writes no more than the socket buffers hold, so the receiver takes the buffer in one
  // step and cannot complete the message in it. False if the message completed first.
  bool CatchHeldBuffer() {
    DAT_COUNT n = 0;
    DAT_EVENT event{};
    for (long i = 0; i < 50'000'000; ++i) {
      Pump(pair_.sender_request_evd);
      if (dat_ep_recv_query(pair_.receiver, &n, nullptr) != DAT_SUCCESS) return false;
      if (n == 1) return true;
      DAT_COUNT more = 0;
      // Moves the receiver under progress=poll without reaping: at most one event is ever queued.
      if (dat_evd_wait(pair_.receiver_recv_evd, 0, 2, &event, &more) == DAT_SUCCESS) return false;
    }
    return false;
  }
  std::size_t size_ = 0;
  Region big_;
};

TEST_F(EpSetWatermarkHeld, SoftHighWatermarkBelowWhatTheEpHoldsFiresAtOnce) {
  if (!Supports(kSoft)) GTEST_SKIP() << "provider attribute srq_watermarks_supported lacks the soft high watermark bit";
  if (!ProgressIsPolled()) GTEST_SKIP() << "runs in the progress=poll variant, which can stop the receiver mid-message";
  ASSERT_NO_FATAL_FAILURE(SetUpBigMessage());
  ASSERT_TRUE(CatchHeldBuffer()) << "the message completed before its buffer was seen held";
  ASSERT_EQ(dat_ep_set_watermark(pair_.receiver, 0, DAT_WATERMARK_INFINITE), DAT_SUCCESS);
  EXPECT_TRUE(WaitWatermarkEvent(pair_.receiver, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair_.receiver_recv_evd, dto, pair_.sender_request_evd));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS) << "the soft watermark does not disturb the connection";
}

TEST_F(EpSetWatermarkHeld, HardHighWatermarkBelowWhatTheEpHoldsBreaksAtOnce) {
  if (!Supports(kHard)) GTEST_SKIP() << "provider attribute srq_watermarks_supported lacks the hard high watermark bit";
  if (!ProgressIsPolled()) GTEST_SKIP() << "runs in the progress=poll variant, which can stop the receiver mid-message";
  ASSERT_NO_FATAL_FAILURE(SetUpBigMessage());
  ASSERT_TRUE(CatchHeldBuffer()) << "the message completed before its buffer was seen held";
  ASSERT_EQ(dat_ep_set_watermark(pair_.receiver, DAT_WATERMARK_INFINITE, 0), DAT_SUCCESS);
  EXPECT_TRUE(WaitConnectionEvent(pair_.receiver_connect_evd, DAT_CONNECTION_EVENT_BROKEN));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair_.receiver_recv_evd, dto));
  EXPECT_TRUE(dto.status == DAT_DTO_SUCCESS || dto.status == DAT_DTO_ERR_FLUSHED) << dto.status;
}

TEST_F(EpSetWatermark, NegativeWatermarkIsInvalidParameter) {
  ASSERT_NO_FATAL_FAILURE(SetUpPair());
  EXPECT_EQ(DAT_GET_TYPE(dat_ep_set_watermark(pair_.receiver, -5, DAT_WATERMARK_INFINITE)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(dat_ep_set_watermark(pair_.receiver, DAT_WATERMARK_INFINITE, -5)), DAT_INVALID_PARAMETER);
  ASSERT_NO_FATAL_FAILURE(Deliver());
}

}  // namespace
}  // namespace softdat::conformance
