// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The connection event of an EP whose consumer's dat_ep_disconnect meets a reset (or Terminate)
// from the peer that came in before the close took effect: DISCONNECTED after an abrupt
// disconnect, since the consumer cannot tell that race from its own close (both sides of stock
// dapltest close abruptly at once, and it counts anything but DISCONNECTED as "bad disconnect
// event"); BROKEN after a graceful one, whose queued work may not have arrived, and on the side
// that did not ask. Before, the abrupt case was BROKEN too.
#include <gtest/gtest.h>

#include "testing/fake_device/device_test_fixture.h"

namespace softdat::core::device_testing {
namespace {

struct Ends {
  DAT_EVENT_NUMBER client = DAT_EVENT_NUMBER{};
  DAT_EVENT_NUMBER server = DAT_EVENT_NUMBER{};
};

class DisconnectMeetsPeerResetTest : public DeviceTest {
 protected:
  // Connects two EPs, lets the client disconnect with `flags` into the peer's reset, and returns
  // the end event each reported.
  Ends DisconnectIntoReset(DAT_CLOSE_FLAGS flags) {
    fake().behaviour().peer_resets_at_disconnect = true;
    Ep* server = MakeEp();
    Ep* client = MakeEp();
    Ends ends;
    Connect(client, server);
    EXPECT_TRUE(client->Disconnect(flags).ok());
    Settle();
    for (const DAT_EVENT& event : Drain(connect_evd_)) {
      const DAT_EP_HANDLE ep = event.event_data.connect_event_data.ep_handle;
      if (ep == client) ends.client = event.event_number;
      if (ep == server) ends.server = event.event_number;
    }
    EXPECT_EQ(client->state(), DAT_EP_STATE_DISCONNECTED);
    EXPECT_EQ(server->state(), DAT_EP_STATE_DISCONNECTED);
    return ends;
  }
};

TEST_F(DisconnectMeetsPeerResetTest, AnAbruptDisconnectIsDisconnected) {
  const Ends ends = DisconnectIntoReset(DAT_CLOSE_ABRUPT_FLAG);
  EXPECT_EQ(ends.client, DAT_CONNECTION_EVENT_DISCONNECTED);
  EXPECT_EQ(ends.server, DAT_CONNECTION_EVENT_BROKEN) << "the side that did not ask for the end";
}

TEST_F(DisconnectMeetsPeerResetTest, AGracefulDisconnectIsBroken) {
  const Ends ends = DisconnectIntoReset(DAT_CLOSE_GRACEFUL_FLAG);
  EXPECT_EQ(ends.client, DAT_CONNECTION_EVENT_BROKEN);
  EXPECT_EQ(ends.server, DAT_CONNECTION_EVENT_BROKEN);
}

}  // namespace
}  // namespace softdat::core::device_testing
