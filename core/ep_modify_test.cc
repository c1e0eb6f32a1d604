// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_ep_modify and dat_ep_reset when the transport refuses the new endpoint: nothing changes and
// the EP keeps a working transport endpoint (a refused modify once left it with none, and the
// next connect dereferenced null).
#include <gtest/gtest.h>

#include <cstring>

#include "core/device_test_fixture.h"

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

}  // namespace
}  // namespace softdat::core::device_testing
