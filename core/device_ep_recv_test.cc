// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Receives of an EP without SRQ on a device transport: posted down (also before the connection),
// completed as exactly the buffer the device names, in posting order, with the software path's
// events, and flushed exactly once when the connection ends.
#include <gtest/gtest.h>

#include "core/cno.h"
#include "testing/fake_device/device_test_fixture.h"

namespace softdat::core::device_testing {
namespace {

TEST_F(DeviceTest, DeviceReceivePostedBeforeTheConnectionCompletesNamingTheEp) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 42).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 1, "hello").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  const DAT_DTO_COMPLETION_EVENT_DATA dto = Dto(event);
  EXPECT_EQ(dto.ep_handle, server);
  EXPECT_EQ(dto.user_cookie.as_64, 42u);
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(dto.transfered_length, 6u);
  EXPECT_EQ(dto.operation, DAT_DTO_RECEIVE);
  EXPECT_STREQ(SlotData(0), "hello");
  ASSERT_TRUE(Next(request_evd_, event));
  EXPECT_EQ(Dto(event).ep_handle, client);
  EXPECT_EQ(Dto(event).status, DAT_DTO_SUCCESS);
}

TEST_F(DeviceTest, DeviceReceivesCompleteInPostingOrder) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(server, i, 10 + i).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 8, "one").ok());
  ASSERT_TRUE(Send(client, 9, "two").ok());
  ASSERT_TRUE(Send(client, 10, "three").ok());
  const std::vector<DAT_EVENT> events = Drain(recv_evd_);
  ASSERT_EQ(events.size(), 3u);
  for (std::uint32_t i = 0; i < 3; ++i) EXPECT_EQ(Dto(events[i]).user_cookie.as_64, 10u + i);
  EXPECT_STREQ(SlotData(0), "one");
  EXPECT_STREQ(SlotData(2), "three");
}

TEST_F(DeviceTest, DeviceRecvQueryOfAnEpWithoutSrqCountsWhatWasPosted) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(server, i, i).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 8, "x").ok());
  ASSERT_EQ(Drain(recv_evd_).size(), 1u);
  DAT_COUNT allocated = -1;
  DAT_COUNT span = -1;
  ASSERT_TRUE(server->RecvQuery(&allocated, &span).ok());
  EXPECT_EQ(allocated, 2);
  EXPECT_EQ(span, 2);
}

TEST_F(DeviceTest, DeviceReceiveOfAMessageTooLongIsLocalLength) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  const DAT_LMR_TRIPLET small = Slot(0, 2);
  ASSERT_TRUE(server->PostRecv(1, &small, Cookie(5), DAT_COMPLETION_DEFAULT_FLAG).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 1, "too long").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(Dto(event).status, DAT_DTO_ERR_LOCAL_LENGTH);
  EXPECT_EQ(Dto(event).user_cookie.as_64, 5u);
}

TEST_F(DeviceTest, DeviceReceivePostedToADisconnectedEpIsFlushedWithoutTheDevice) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  ASSERT_TRUE(server->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  Settle();
  ASSERT_EQ(server->state(), DAT_EP_STATE_DISCONNECTED);
  ASSERT_TRUE(PostRecv(server, 0, 9).ok());
  const std::vector<DAT_EVENT> events = Drain(recv_evd_);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(Dto(events[0]).status, DAT_DTO_ERR_FLUSHED);
  EXPECT_EQ(Dto(events[0]).user_cookie.as_64, 9u);
}

// Both ways a device may end a connection: reporting each posted receive as flushed before
// OnEnded (verbs), or reporting only OnEnded. Either way each buffer completes once, FLUSHED.
class DeviceFlushTest : public DeviceTest, public ::testing::WithParamInterface<bool> {};

TEST_P(DeviceFlushTest, NonSrqDeviceReceivesAreFlushedOnceOnDisconnect) {
  fake().behaviour().flush_receives_before_end = GetParam();
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  for (std::uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(PostRecv(server, i, 100 + i).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 8, "kept").ok());
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  const std::vector<DAT_EVENT> events = Drain(recv_evd_);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(Dto(events[0]).status, DAT_DTO_SUCCESS);
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(Dto(events[i]).user_cookie.as_64, 100u + i);
    EXPECT_EQ(Dto(events[i]).ep_handle, server);
    if (i > 0) {
      EXPECT_EQ(Dto(events[i]).status, DAT_DTO_ERR_FLUSHED);
    }
  }
  // The end event follows the flush, and nothing comes after it.
  bool disconnected = false;
  for (const DAT_EVENT& event : Drain(connect_evd_))
    disconnected |= event.event_number == DAT_CONNECTION_EVENT_DISCONNECTED;
  EXPECT_TRUE(disconnected);
  DAT_EVENT late;
  EXPECT_FALSE(Next(recv_evd_, late));
  EXPECT_EQ(server->state(), DAT_EP_STATE_DISCONNECTED);
}

INSTANTIATE_TEST_SUITE_P(FlushReporting, DeviceFlushTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "DeviceReportsFlushes" : "OnlyOnEnded";
                         });

TEST_F(DeviceTest, DeviceEpReconnectsAfterResetAndCompletesTheNewConnectionsBuffers) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 1).ok());
  Connect(client, server);
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  ASSERT_EQ(Drain(recv_evd_).size(), 1u);  // flushed
  Drain(connect_evd_);
  ASSERT_TRUE(server->Reset().ok());
  ASSERT_TRUE(client->Reset().ok());
  ASSERT_TRUE(PostRecv(server, 1, 2).ok());
  ASSERT_TRUE(PostRecv(server, 2, 3).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 8, "again").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(Dto(event).status, DAT_DTO_SUCCESS);
  EXPECT_EQ(Dto(event).user_cookie.as_64, 2u);
  EXPECT_STREQ(SlotData(1), "again");
}

TEST_F(DeviceTest, DeviceReceiveHeldByTheDeviceAtTheEndIsFlushedOnce) {
  fake().behaviour().hold_receive_completions = true;
  fake().behaviour().flush_receives_before_end = false;
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 1).ok());
  ASSERT_TRUE(PostRecv(server, 1, 2).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 8, "taken").ok());
  Settle();
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  // Buffer 1 is flushed by the device's report, buffer 2 by core at OnEnded: once each.
  const std::vector<DAT_EVENT> events = Drain(recv_evd_);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(Dto(events[0]).user_cookie.as_64, 1u);
  EXPECT_EQ(Dto(events[1]).user_cookie.as_64, 2u);
  EXPECT_EQ(Dto(events[0]).status, DAT_DTO_ERR_FLUSHED);
  EXPECT_EQ(Dto(events[1]).status, DAT_DTO_ERR_FLUSHED);
}

TEST_F(DeviceTest, DeviceReceiveFlagsAreThoseOfTheSoftwarePath) {
  // SOLICITED_WAIT on the EP: only a solicited Send's completion signals (triggers the CNO of the
  // recv EVD); an unsolicited one is queued quietly.
  Cno* cno = nullptr;
  ASSERT_TRUE(Cno::Create(ia_, DAT_OS_WAIT_PROXY_AGENT{}, &cno).ok());
  Evd* recv_evd = nullptr;
  ASSERT_TRUE(Evd::Create(ia_, 16, cno, DAT_EVD_DTO_FLAG, &recv_evd).ok());
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.recv_completion_flags = DAT_COMPLETION_SOLICITED_WAIT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_recv_dtos = 8;
  attr.max_request_dtos = 8;
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  Ep* server = nullptr;
  ASSERT_TRUE(Ep::Create(ia_, pz_, recv_evd, request_evd_, connect_evd_, nullptr, &attr, &server).ok());
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 1).ok());
  ASSERT_TRUE(PostRecv(server, 1, 2).ok());
  Connect(client, server);
  evd::EventQueue* triggered = nullptr;
  ASSERT_TRUE(Send(client, 8, "plain").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd, event));
  EXPECT_EQ(Dto(event).user_cookie.as_64, 1u);
  EXPECT_EQ(cno->cno().Wait(0, &triggered).code(), Code::kTimeout) << "an unsolicited Send completes quietly";
  std::strcpy(SlotData(9), "urgent");
  const DAT_LMR_TRIPLET triplet = Slot(9, 7);
  ASSERT_TRUE(client->PostSend(1, &triplet, Cookie(0), DAT_COMPLETION_SOLICITED_WAIT_FLAG, false, 0).ok());
  ASSERT_TRUE(Next(recv_evd, event));
  EXPECT_EQ(Dto(event).user_cookie.as_64, 2u);
  EXPECT_TRUE(cno->cno().Wait(0, &triggered).ok()) << "a solicited Send completes with signal";
}

TEST_F(DeviceTest, DeviceReceivePostedWhileTheEndpointEndsIsFlushedNotRefused) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  ASSERT_TRUE(fake().Step());  // the device ended both sides; core has not heard yet
  ASSERT_EQ(server->state(), DAT_EP_STATE_CONNECTED);
  EXPECT_TRUE(PostRecv(server, 0, 77).ok());
  const std::vector<DAT_EVENT> events = Drain(recv_evd_);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(Dto(events[0]).user_cookie.as_64, 77u);
  EXPECT_EQ(Dto(events[0]).status, DAT_DTO_ERR_FLUSHED);
}

}  // namespace
}  // namespace softdat::core::device_testing
