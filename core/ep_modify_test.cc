// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_ep_modify and dat_ep_reset when the transport refuses the new endpoint: nothing changes and
// the EP keeps a working transport endpoint (a refused modify once left it with none, and the
// next connect dereferenced null).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "testing/fake_device/device_test_fixture.h"

namespace softdat::core::device_testing {
namespace {

class EpModifyTest : public DeviceTest {};

DAT_EP_ATTR AttributesOf(Ep* ep) {
  DAT_EP_PARAM param{};
  ep->Query(DAT_EP_FIELD_EP_ATTR_ALL, param);
  return param.ep_attr;
}

TEST_F(EpModifyTest, ARefusedModifyChangesNothingAndTheEpStillConnects) {
  Ep* client = MakeEp();
  Ep* server = MakeEp();
  const DAT_EP_ATTR before = AttributesOf(client);
  DAT_EP_PARAM param{};
  param.ep_attr = before;
  param.ep_attr.max_request_dtos = before.max_request_dtos + 8;
  fake().behaviour().refuse_endpoints = true;
  EXPECT_EQ(client->Modify(DAT_EP_FIELD_EP_ATTR_ALL, param), Status(Code::kInsufficientResources, Detail::kTep));
  fake().behaviour().refuse_endpoints = false;
  EXPECT_EQ(AttributesOf(client).max_request_dtos, before.max_request_dtos);

  ASSERT_TRUE(PostRecv(server, 0, 7).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 1, "after a refused modify").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(Dto(event).user_cookie.as_64, 7u);
  EXPECT_EQ(Dto(event).status, DAT_DTO_SUCCESS);
  EXPECT_STREQ(SlotData(0), "after a refused modify");
}

TEST_F(EpModifyTest, AnAcceptedModifyGetsANewEndpointThatConnects) {
  Ep* client = MakeEp();
  Ep* server = MakeEp();
  DAT_EP_PARAM param{};
  param.ep_attr = AttributesOf(client);
  param.ep_attr.max_request_dtos += 8;
  ASSERT_TRUE(client->Modify(DAT_EP_FIELD_EP_ATTR_ALL, param).ok());
  EXPECT_EQ(AttributesOf(client).max_request_dtos, param.ep_attr.max_request_dtos);
  ASSERT_TRUE(PostRecv(server, 0, 9).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 1, "modified").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(Dto(event).user_cookie.as_64, 9u);
}

TEST_F(EpModifyTest, ARefusedResetLeavesTheEpDisconnectedAndAResetLaterWorks) {
  Ep* client = MakeEp();
  Ep* server = MakeEp();
  Connect(client, server);
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  Settle();
  ASSERT_EQ(client->state(), DAT_EP_STATE_DISCONNECTED);
  fake().behaviour().refuse_endpoints = true;
  EXPECT_EQ(client->Reset().code(), Code::kInsufficientResources);
  EXPECT_EQ(client->state(), DAT_EP_STATE_DISCONNECTED);
  fake().behaviour().refuse_endpoints = false;
  ASSERT_TRUE(client->Reset().ok());
  EXPECT_EQ(client->state(), DAT_EP_STATE_UNCONNECTED);
}

// Regression: dat_ep_modify checked the state without the EP's locks and swapped the transport
// endpoint and the receive source under the post lock only, while dat_ep_connect and
// dat_ep_post_recv used them with none: racing calls could use a freed object (ThreadSanitizer
// reports the race on the first round; ASan, the use after free when it happens). One owner now
// (the EP's resources lock): a modify waits for the calls in progress and they for it. Bounded
// in rounds and time.
TEST_F(EpModifyTest, ModifyRacingConnectPostRecvAndQueriesIsSafe) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int round = 0; round < 100 && std::chrono::steady_clock::now() < deadline; ++round) {
    Ep* ep = MakeEp();
    const DAT_EP_ATTR attr = AttributesOf(ep);
    std::atomic<int> ready{0};
    auto start = [&] {
      ready.fetch_add(1);
      while (ready.load() < 3) std::this_thread::yield();
    };
    std::thread modify([&] {
      start();
      for (int i = 0; i < 20; ++i) {
        DAT_EP_PARAM param{};
        param.ep_attr = attr;
        param.ep_attr.max_request_dtos = attr.max_request_dtos + 1 + i % 2;
        (void)ep->Modify(DAT_EP_FIELD_EP_ATTR_ALL, param);  // refused once the EP connects
      }
    });
    std::thread post([&] {
      start();
      for (int i = 0; i < 50; ++i) {
        // Refused after the receive source looked at it: never queued, so modify stays possible.
        EXPECT_EQ(ep->PostRecv(-1, nullptr, Cookie(0), DAT_COMPLETION_DEFAULT_FLAG).code(), Code::kInvalidParameter);
        DAT_EP_STATE state;
        DAT_BOOLEAN recv_idle, request_idle;
        ep->GetStatus(state, &recv_idle, &request_idle);
        DAT_COUNT allocated = 0, span = 0;
        (void)ep->RecvQuery(&allocated, &span);
      }
    });
    std::thread connect([&] {
      start();
      std::this_thread::yield();
      sockaddr_in address = ia_->address();
      // Nobody listens on port 1: the attempt stays pending (the fake device moves only in Settle).
      EXPECT_TRUE(ep->Connect(reinterpret_cast<sockaddr*>(&address), 1, DAT_TIMEOUT_INFINITE, 0, nullptr).ok());
    });
    modify.join();
    post.join();
    connect.join();
    ASSERT_TRUE(Ep::Free(ep).ok());
    Settle();
  }
}

}  // namespace
}  // namespace softdat::core::device_testing
