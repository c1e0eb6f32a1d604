// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A connect to a port where a PSP listens is never DAT_CONNECTION_EVENT_UNREACHABLE: softdat-tcp
// answers UNREACHABLE only when connect() itself fails (nobody listens, no route, no local port).
// A PSP listens from the moment dat_psp_create returns, whether or not its progress has taken the
// request yet (the kernel's backlog holds it), and a port the last PSP used, its connections in
// TIME_WAIT, can be listened on and reached again at once. (The listener pausing at its bound of
// requests in setup is pinned in tcp_transport_test, ConnectsBeyondTheRequestsInSetupWait...)
//
// Stock dtest's own race is what ends its client UNREACHABLE now and then: its server hands its
// address to the client on a plain TCP port before it creates its PSP (testing/consumers/
// handoff_relay.h), so a fast client connects where nothing listens yet.
#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

class PspReachability : public ConformanceTest {
 protected:
  // Connects a new client EP to `port` and returns the first connection event it gets; a new
  // server EP accepts once the request arrives at `cr_evd`.
  DAT_EVENT_NUMBER ConnectOnce(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, const DAT_IA_ADDRESS_PTR address,
                               DAT_CONN_QUAL port, DAT_EVD_HANDLE cr_evd, DAT_EVD_HANDLE client_connect_evd,
                               DAT_EVD_HANDLE server_connect_evd, DAT_EVD_HANDLE dto_evd, DAT_EP_HANDLE& client,
                               DAT_EP_HANDLE& server) {
    EXPECT_EQ(dat_ep_create(ia, pz, dto_evd, dto_evd, client_connect_evd, nullptr, &client), DAT_SUCCESS);
    EXPECT_EQ(dat_ep_create(ia, pz, dto_evd, dto_evd, server_connect_evd, nullptr, &server), DAT_SUCCESS);
    EXPECT_EQ(dat_ep_connect(client, address, port, kEventTimeoutUs, 0, nullptr, DAT_QOS_BEST_EFFORT,
                             DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT event{};
    // A refused connect is reported on the client's EVD before any request arrives: look there.
    // Both ends are on one IA, so any wait moves both; no pump (a pump's events are discarded).
    if (Wait(cr_evd, event, kEventTimeoutUs) != DAT_SUCCESS) {
      DAT_EVENT early{};
      return Wait(client_connect_evd, early, 0) == DAT_SUCCESS ? early.event_number : DAT_CONNECTION_EVENT_TIMED_OUT;
    }
    EXPECT_EQ(dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, server, 0, nullptr), DAT_SUCCESS);
    EXPECT_EQ(Wait(client_connect_evd, event, kEventTimeoutUs), DAT_SUCCESS);
    const DAT_EVENT_NUMBER client_event = event.event_number;
    EXPECT_TRUE(WaitConnectionEvent(server_connect_evd, DAT_CONNECTION_EVENT_ESTABLISHED));
    return client_event;
  }
};

TEST_F(PspReachability, APortTheLastPspUsedIsReachableAgainAtOnce) {
  const DAT_EVD_HANDLE cr_evd = MakeEvd(DAT_EVD_CR_FLAG);
  const DAT_EVD_HANDLE client_connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  const DAT_EVD_HANDLE server_connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  const DAT_EVD_HANDLE dto_evd = MakeEvd(DAT_EVD_DTO_FLAG);
  DAT_CONN_QUAL port = 0;
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    DAT_PSP_HANDLE psp;
    if (round == 0) {
      ASSERT_EQ(dat_psp_create_any(ia_, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
    } else {
      ASSERT_EQ(dat_psp_create(ia_, port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
    }
    DAT_EP_HANDLE client = DAT_HANDLE_NULL, server = DAT_HANDLE_NULL;
    EXPECT_EQ(ConnectOnce(ia_, pz_, ia_attr_.ia_address_ptr, port, cr_evd, client_connect_evd, server_connect_evd,
                          dto_evd, client, server),
              DAT_CONNECTION_EVENT_ESTABLISHED);
    // The client closes first and gracefully: its port stays in TIME_WAIT, as after a run of dtest.
    ASSERT_EQ(dat_ep_disconnect(client, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
    EXPECT_TRUE(WaitConnectionEvent(client_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
    EXPECT_TRUE(WaitConnectionEvent(server_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
    ASSERT_EQ(dat_ep_free(client), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_free(server), DAT_SUCCESS);
    ASSERT_EQ(dat_psp_free(psp), DAT_SUCCESS);
  }
}

// The server's IA takes the request only when its progress runs: under progress=poll that is
// when the server's consumer calls in, and it does not for a while. The client's connect waits
// meanwhile (the kernel's backlog holds the connection); it is not refused.
TEST_F(PspReachability, APspWhoseProgressHasNotTakenTheRequestYetIsNotUnreachable) {
  DAT_IA_HANDLE client_ia;
  DAT_EVD_HANDLE client_async = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_open(const_cast<char*>(SuiteIaName()), 8, &client_async, &client_ia), DAT_SUCCESS);
  sender_ias_.push_back(client_ia);
  DAT_PZ_HANDLE client_pz;
  ASSERT_EQ(dat_pz_create(client_ia, &client_pz), DAT_SUCCESS);
  const DAT_EVD_HANDLE cr_evd = MakeEvd(DAT_EVD_CR_FLAG);
  const DAT_EVD_HANDLE server_connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  const DAT_EVD_HANDLE server_dto_evd = MakeEvd(DAT_EVD_DTO_FLAG);
  const DAT_EVD_HANDLE client_connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG, 8, client_ia);
  const DAT_EVD_HANDLE client_dto_evd = MakeEvd(DAT_EVD_DTO_FLAG, 8, client_ia);
  DAT_CONN_QUAL port = 0;
  DAT_PSP_HANDLE psp;
  ASSERT_EQ(dat_psp_create_any(ia_, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  DAT_EP_HANDLE client, server;
  ASSERT_EQ(dat_ep_create(client_ia, client_pz, client_dto_evd, client_dto_evd, client_connect_evd, nullptr, &client),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ep_create(ia_, pz_, server_dto_evd, server_dto_evd, server_connect_evd, nullptr, &server), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_connect(client, ia_attr_.ia_address_ptr, port, kEventTimeoutUs, 0, nullptr, DAT_QOS_BEST_EFFORT,
                           DAT_CONNECT_DEFAULT_FLAG),
            DAT_SUCCESS);
  // Only the client moves (its own waits drive its IA).
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(Wait(client_connect_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED)
      << "the client got event " << std::hex << event.event_number << " before the server took its request";
  ASSERT_EQ(Wait(cr_evd, event, kEventTimeoutUs, client_dto_evd), DAT_SUCCESS);
  ASSERT_EQ(dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, server, 0, nullptr), DAT_SUCCESS);
  // The pumps are the DTO EVDs, whose events nobody needs here: a pump's events are discarded.
  EXPECT_TRUE(WaitConnectionEvent(client_connect_evd, DAT_CONNECTION_EVENT_ESTABLISHED, kEventTimeoutUs,
                                  server_dto_evd));
  EXPECT_TRUE(WaitConnectionEvent(server_connect_evd, DAT_CONNECTION_EVENT_ESTABLISHED, kEventTimeoutUs,
                                  client_dto_evd));
  EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::conformance
