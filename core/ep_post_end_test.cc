// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A post racing the connection's end: the transport has ended the connection and its OnEnded is
// on its way, while the EP still reads CONNECTED. The request must be accepted and flushed by the
// end (core/ep_post.cc promises that or "the request sees the end"), never refused with
// DAT_INVALID_STATE on an EP that reads CONNECTED. The fake device leaves exactly that window
// between ending a connection and reporting it; verbs leaves it between its teardown and OnEnded.
#include <gtest/gtest.h>

#include "testing/fake_device/device_test_fixture.h"

namespace softdat::core::device_testing {
namespace {

using EpPostEndTest = DeviceTest;

TEST_F(EpPostEndTest, ASendPostedWhileTheEndIsOnItsWayIsFlushedBeforeTheEnd) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  ASSERT_TRUE(server->Disconnect(DAT_CLOSE_ABRUPT_FLAG).ok());
  ASSERT_TRUE(fake().Step());  // the device ends both sides; their OnEnded are queued, not run
  ASSERT_EQ(client->state(), DAT_EP_STATE_CONNECTED);
  ASSERT_TRUE(Send(client, 1, "late", 77).ok()) << "refused on an EP that reads CONNECTED";
  DAT_EVENT event;
  ASSERT_TRUE(Next(request_evd_, event));
  EXPECT_EQ(Dto(event).user_cookie.as_64, 77u);
  EXPECT_EQ(Dto(event).status, DAT_DTO_ERR_FLUSHED);
  ASSERT_TRUE(Next(connect_evd_, event));  // the server's own end (it disconnected)
  ASSERT_TRUE(Next(connect_evd_, event));  // the client's, after its flush
  EXPECT_EQ(event.event_data.connect_event_data.ep_handle, client);
  EXPECT_EQ(client->state(), DAT_EP_STATE_DISCONNECTED);
}

}  // namespace
}  // namespace softdat::core::device_testing
