// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// SRQs on a device transport: buffers posted down to the device SRQ, completions that name the EP
// whose connection consumed them, the device's limit event as the low watermark, resize through
// the device, what dat_ep_recv_query and dat_srq_query can know, and the flush of an SRQ EP.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/async_events.h"
#include "testing/fake_device/device_test_fixture.h"

namespace softdat::core::device_testing {
namespace {

class DeviceSrqTest : public DeviceTest {
 protected:
  // Low watermark events of `srq` on the async EVD once the device is idle (drains it).
  int LowWatermarkEvents(Srq* srq) {
    int count = 0;
    for (const DAT_EVENT& event : Drain(async_)) {
      if (event.event_number == kWatermarkEventNumber &&
          event.event_data.asynch_error_event_data.reason == DAT_SRQ_LOW_WATERMARK_EVENT &&
          event.event_data.asynch_error_event_data.dat_handle == srq)
        ++count;
    }
    return count;
  }
};

TEST_F(DeviceSrqTest, DeviceSrqCompletionNamesTheConsumingEp) {
  Srq* srq = MakeSrq(8);
  Ep* server_a = MakeEp(srq);
  Ep* server_b = MakeEp(srq);
  Ep* client_a = MakeEp();
  Ep* client_b = MakeEp();
  Connect(client_a, server_a);
  Connect(client_b, server_b);
  ASSERT_TRUE(PostRecv(srq, 0, 1).ok());
  ASSERT_TRUE(PostRecv(srq, 1, 2).ok());
  // B's message arrives first, so the device gives it the oldest buffer.
  ASSERT_TRUE(Send(client_b, 8, "from b").ok());
  Settle();
  ASSERT_TRUE(Send(client_a, 9, "from a").ok());
  const std::vector<DAT_EVENT> events = Drain(recv_evd_);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(Dto(events[0]).ep_handle, server_b);
  EXPECT_EQ(Dto(events[0]).user_cookie.as_64, 1u);
  EXPECT_EQ(Dto(events[1]).ep_handle, server_a);
  EXPECT_EQ(Dto(events[1]).user_cookie.as_64, 2u);
  EXPECT_STREQ(SlotData(0), "from b");
  EXPECT_STREQ(SlotData(1), "from a");
}

// The NIC hands SRQ buffers to an EP unseen, so an EP high watermark could never fire: a finite
// one is refused (srq_watermarks_supported says the same), an infinite one is accepted.
TEST_F(DeviceSrqTest, DeviceSrqEpRefusesAFiniteHighWatermark) {
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  EXPECT_EQ(server->SetWatermark(4, DAT_WATERMARK_INFINITE).code(), Code::kModelNotSupported);
  EXPECT_EQ(server->SetWatermark(DAT_WATERMARK_INFINITE, 4).code(), Code::kModelNotSupported);
  EXPECT_TRUE(server->SetWatermark(DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE).ok());
  EXPECT_EQ(server->SetWatermark(-5, DAT_WATERMARK_INFINITE).code(), Code::kInvalidParameter);
}

TEST_F(DeviceSrqTest, DeviceSrqQueryCountsPostedMinusCompleted) {
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  Connect(client, server);
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(srq, i, i).ok());
  ASSERT_TRUE(Send(client, 8, "x").ok());
  Settle();
  DAT_SRQ_PARAM param{};
  srq->Query(static_cast<DAT_SRQ_PARAM_MASK>(DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT | DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT), param);
  // With completion queues the query polls the SRQ EPs' receive CQs first: the device took one.
  EXPECT_EQ(param.available_dto_count, 2);
  EXPECT_EQ(param.outstanding_dto_count, 3);  // the completion is not reaped yet
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  srq->Query(static_cast<DAT_SRQ_PARAM_MASK>(DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT | DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT), param);
  EXPECT_EQ(param.available_dto_count, 2);
  EXPECT_EQ(param.outstanding_dto_count, 2);
  EXPECT_EQ(fake().device_srq_depth(), 2u);
}

TEST_F(DeviceSrqTest, DeviceSrqRefusesMoreThanItsSizeBeforeTheDevice) {
  Srq* srq = MakeSrq(2);
  ASSERT_TRUE(PostRecv(srq, 0, 0).ok());
  ASSERT_TRUE(PostRecv(srq, 1, 1).ok());
  EXPECT_EQ(PostRecv(srq, 2, 2).code(), Code::kInsufficientResources);
  EXPECT_EQ(fake().device_srq_depth(), 2u);
}

TEST_F(DeviceSrqTest, DeviceSrqLowWatermarkEventFiresOncePerArming) {
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  Connect(client, server);
  for (std::uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(PostRecv(srq, i, i).ok());
  ASSERT_TRUE(srq->SetLowWatermark(4).ok());
  EXPECT_EQ(LowWatermarkEvents(srq), 0);
  ASSERT_TRUE(Send(client, 8, "1").ok());  // 4 left: not below 4
  EXPECT_EQ(LowWatermarkEvents(srq), 0);
  ASSERT_TRUE(Send(client, 8, "2").ok());  // 3 left: below
  EXPECT_EQ(LowWatermarkEvents(srq), 1);
  ASSERT_TRUE(Send(client, 8, "3").ok());  // still below, but the arming is spent
  EXPECT_EQ(LowWatermarkEvents(srq), 0);
  // Armed again above what is left: the next consumption below it fires once more.
  ASSERT_TRUE(PostRecv(srq, 5, 5).ok());
  ASSERT_TRUE(PostRecv(srq, 6, 6).ok());
  ASSERT_TRUE(srq->SetLowWatermark(4).ok());  // 4 on the SRQ
  EXPECT_EQ(LowWatermarkEvents(srq), 0);
  ASSERT_TRUE(Send(client, 8, "4").ok());
  EXPECT_EQ(LowWatermarkEvents(srq), 1);
}

TEST_F(DeviceSrqTest, DeviceSrqLowWatermarkAlreadyCrossedFiresAtOnce) {
  Srq* srq = MakeSrq(8);
  ASSERT_TRUE(PostRecv(srq, 0, 0).ok());
  ASSERT_TRUE(srq->SetLowWatermark(2).ok());
  EXPECT_EQ(LowWatermarkEvents(srq), 1);
  DAT_SRQ_PARAM param{};
  srq->Query(DAT_SRQ_FIELD_LOW_WATERMARK, param);
  EXPECT_EQ(param.low_watermark, 2);
}

TEST_F(DeviceSrqTest, DeviceSrqResizeRefusedByTheDeviceIsModelNotSupported) {
  fake().behaviour().refuse_srq_resize = true;
  Srq* srq = MakeSrq(4);
  EXPECT_EQ(srq->Resize(16).code(), Code::kModelNotSupported);
  DAT_SRQ_PARAM param{};
  srq->Query(DAT_SRQ_FIELD_MAX_RECV_DTO, param);
  EXPECT_EQ(param.max_recv_dtos, 4);  // unchanged
  // Shrinking needs nothing of the device.
  EXPECT_TRUE(srq->Resize(2).ok());
}

TEST_F(DeviceSrqTest, DeviceSrqResizeAppliesTheSrqRulesBeforeAskingTheDevice) {
  fake().behaviour().refuse_srq_resize = true;
  Srq* srq = MakeSrq(4);
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(srq, i, i).ok());
  EXPECT_EQ(srq->Resize(2), Status(Code::kInvalidState, Detail::kSrqInUse));
}

TEST_F(DeviceSrqTest, DeviceSrqResizeGrowsTheDeviceQueue) {
  Srq* srq = MakeSrq(2);
  ASSERT_TRUE(srq->Resize(8).ok());
  for (std::uint32_t i = 0; i < 8; ++i) ASSERT_TRUE(PostRecv(srq, i, i).ok()) << i;
  EXPECT_EQ(fake().device_srq_depth(), 8u);
}

TEST_F(DeviceSrqTest, SrqEpRecvQueryIsUnknownWhileTheDeviceMayHoldBuffers) {
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  Connect(client, server);
  DAT_COUNT allocated = 0;
  DAT_COUNT span = 0;
  ASSERT_TRUE(server->RecvQuery(&allocated, &span).ok());
  EXPECT_EQ(allocated, DAT_VALUE_UNKNOWN);
  EXPECT_EQ(span, DAT_VALUE_UNKNOWN);
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  Settle();
  ASSERT_TRUE(server->RecvQuery(&allocated, &span).ok());
  EXPECT_EQ(allocated, 0);
  EXPECT_EQ(span, 0);
}

TEST_F(DeviceSrqTest, SrqBuffersNotCompletedStayOnTheSrqAndTheEpIsBrokenOnce) {
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  Connect(client, server);
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(srq, i, 1 + i).ok());
  ASSERT_TRUE(Send(client, 8, "before").ok());
  Settle();
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  const std::vector<DAT_EVENT> received = Drain(recv_evd_);
  ASSERT_EQ(received.size(), 1u);  // the one it consumed; nothing flushed from the SRQ
  EXPECT_EQ(Dto(received[0]).status, DAT_DTO_SUCCESS);
  int broken = 0;
  for (const DAT_EVENT& event : Drain(async_)) {
    if (event.event_number == DAT_ASYNC_ERROR_EP_BROKEN &&
        event.event_data.asynch_error_event_data.dat_handle == server)
      ++broken;
  }
  EXPECT_EQ(broken, 1);
  DAT_SRQ_PARAM param{};
  srq->Query(DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT, param);
  EXPECT_EQ(param.available_dto_count, 2);
  EXPECT_EQ(fake().device_srq_depth(), 2u);
  Drain(connect_evd_);
  // Another EP on the SRQ gets them, oldest first.
  Ep* other = MakeEp(srq);
  Ep* other_client = MakeEp();
  Connect(other_client, other);
  ASSERT_TRUE(Send(other_client, 9, "after").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(Dto(event).ep_handle, other);
  EXPECT_EQ(Dto(event).user_cookie.as_64, 2u);
}

TEST_F(DeviceSrqTest, DeviceSrqLimitRefusedAsAlreadyBelowFiresAtOnce) {
  // rxe refuses to arm a limit above what its SRQ holds; softdat's count can be higher (it hears
  // of a consumed buffer only at its completion), so the refusal means "below already".
  fake().behaviour().refuse_limit_below_depth = true;
  fake().behaviour().hold_receive_completions = true;
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  Connect(client, server);
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(srq, i, i).ok());
  ASSERT_TRUE(Send(client, 8, "1").ok());
  ASSERT_TRUE(Send(client, 9, "2").ok());
  Settle();
  ASSERT_EQ(fake().device_srq_depth(), 1u);
  ASSERT_TRUE(srq->SetLowWatermark(2).ok());
  EXPECT_EQ(LowWatermarkEvents(srq), 1);
  fake().ReleaseHeldReceives();
  EXPECT_EQ(Drain(recv_evd_).size(), 2u);
  EXPECT_EQ(LowWatermarkEvents(srq), 0);
}

TEST_F(DeviceSrqTest, SrqBufferTheDeviceTookButDidNotCompleteIsFlushedToThatEp) {
  fake().behaviour().hold_receive_completions = true;
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  Connect(client, server);
  ASSERT_TRUE(PostRecv(srq, 0, 1).ok());
  ASSERT_TRUE(PostRecv(srq, 1, 2).ok());
  ASSERT_TRUE(Send(client, 8, "in flight").ok());
  Settle();
  EXPECT_EQ(Drain(recv_evd_).size(), 0u);  // the device holds it
  DAT_COUNT allocated = 0;
  ASSERT_TRUE(server->RecvQuery(&allocated, nullptr).ok());
  EXPECT_EQ(allocated, DAT_VALUE_UNKNOWN);
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  const std::vector<DAT_EVENT> events = Drain(recv_evd_);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(Dto(events[0]).ep_handle, server);
  EXPECT_EQ(Dto(events[0]).user_cookie.as_64, 1u);
  EXPECT_EQ(Dto(events[0]).status, DAT_DTO_ERR_FLUSHED);
  DAT_SRQ_PARAM param{};
  srq->Query(DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT, param);
  EXPECT_EQ(param.available_dto_count, 1);  // the other one is still on the SRQ
  int broken = 0;
  for (const DAT_EVENT& event : Drain(async_))
    broken += event.event_number == DAT_ASYNC_ERROR_EP_BROKEN ? 1 : 0;
  EXPECT_EQ(broken, 1);
}

TEST_F(DeviceSrqTest, StrayDeviceCompletionDoesNotHoldBackLaterOnes) {
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  Connect(client, server);
  fake().InjectStrayReceive(999);  // names no buffer: logged and ignored
  Settle();
  ASSERT_TRUE(PostRecv(srq, 0, 5).ok());
  ASSERT_TRUE(Send(client, 8, "real").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(Dto(event).ep_handle, server);
  EXPECT_EQ(Dto(event).user_cookie.as_64, 5u);
}

TEST_F(DeviceSrqTest, DeviceSrqOfTheDevicesLargestSizeIsMadeThoughThePoolRoundsUp) {
  fake().mutable_capabilities().max_srq_work = 1000;  // not a power of two, as on some devices
  Srq* srq = MakeSrq(1000);
  ASSERT_NE(srq, nullptr);
  EXPECT_TRUE(srq->Resize(1000).ok());
}

TEST_F(DeviceSrqTest, DeviceSrqPostsRacingCompletionsLoseNothingAndKeepOrder) {
  // One thread keeps a small SRQ stocked while this one sends, drives the device and reaps: the
  // consumer's posts race the device's completions (as with the verbs progress thread).
  constexpr std::uint64_t kMessages = 300;
  Srq* srq = MakeSrq(8);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  Connect(client, server);
  std::atomic<bool> poster_failed{false};
  std::thread poster([&] {
    for (std::uint64_t i = 0; i < kMessages; ++i) {
      long attempts = 0;
      while (!PostRecv(srq, static_cast<std::uint32_t>(i % 8), i).ok()) {
        if (++attempts > 50'000'000) {
          poster_failed = true;
          return;
        }
        std::this_thread::yield();
      }
    }
  });
  std::uint64_t sent = 0;
  std::uint64_t sends_done = 0;
  std::uint64_t received = 0;
  for (long round = 0; round < 50'000'000 && received < kMessages && !poster_failed; ++round) {
    if (sent < kMessages && sent - sends_done < 16 && Send(client, 20, "m", sent).ok()) ++sent;
    fake().Progress();
    DAT_EVENT event;
    while (request_evd_->Dequeue(event).ok()) ++sends_done;
    while (recv_evd_->Dequeue(event).ok()) {
      EXPECT_EQ(Dto(event).status, DAT_DTO_SUCCESS);
      EXPECT_EQ(Dto(event).user_cookie.as_64, received) << "buffers are consumed in posting order";
      ++received;
    }
  }
  poster.join();
  EXPECT_FALSE(poster_failed);
  EXPECT_EQ(received, kMessages);
}

}  // namespace
}  // namespace softdat::core::device_testing
