// dat_ep_set_watermark(3DAT) on an SRQ EP: the soft high watermark raises one async event
// (DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT naming the EP) per setting when the EP holds more receive
// buffers than it; the hard high watermark breaks the connection.
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
  ASSERT_NO_FATAL_FAILURE(SetUpPair());
  ASSERT_EQ(dat_ep_set_watermark(pair_.receiver, 0, DAT_WATERMARK_INFINITE), DAT_SUCCESS);
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(async_evd_, &event)), DAT_QUEUE_EMPTY) << "holds 0: not above 0";
  ASSERT_NO_FATAL_FAILURE(Deliver());  // held 1 buffer while receiving
  ASSERT_EQ(Wait(async_evd_, event), DAT_SUCCESS) << "no soft high watermark event";
  EXPECT_EQ(event.event_data.asynch_error_event_data.dat_handle, pair_.receiver);
  EXPECT_EQ(event.event_data.asynch_error_event_data.reason, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT);
  ASSERT_NO_FATAL_FAILURE(Deliver());
  EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(async_evd_, &event)), DAT_QUEUE_EMPTY) << "one event per setting";
  ASSERT_EQ(dat_ep_set_watermark(pair_.receiver, 0, DAT_WATERMARK_INFINITE), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(Deliver());
  EXPECT_TRUE(WaitWatermarkEvent(pair_.receiver, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT)) << "re-armed";
  // The connection is unaffected by the soft watermark.
  ASSERT_NO_FATAL_FAILURE(Deliver());
}

TEST_F(EpSetWatermark, HardHighWatermarkBreaksTheConnection) {
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

TEST_F(EpSetWatermark, NegativeWatermarkIsInvalidParameter) {
  ASSERT_NO_FATAL_FAILURE(SetUpPair());
  EXPECT_EQ(DAT_GET_TYPE(dat_ep_set_watermark(pair_.receiver, -5, DAT_WATERMARK_INFINITE)), DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(dat_ep_set_watermark(pair_.receiver, DAT_WATERMARK_INFINITE, -5)), DAT_INVALID_PARAMETER);
  ASSERT_NO_FATAL_FAILURE(Deliver());
}

}  // namespace
}  // namespace softdat::conformance
