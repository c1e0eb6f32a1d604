// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A DTO EVD on a device with completion queues (the fake device's, as verbs has them): one CQ
// per EVD, shared by every EP that names it (and by the EPs on an SRQ); completions wait there
// until the consumer's dequeue or wait polls them, straight into its event; what a connection's
// end finds in the CQ is reported before the end; an EP whose EVDs change reports to the new
// EVDs' CQs; a waiter sleeps on the CQ and a completion wakes it; a CNO hears of completions
// nobody polls.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/cno.h"
#include "testing/fake_device/device_test_fixture.h"

namespace softdat::core::device_testing {
namespace {

class DeviceCqTest : public DeviceTest {
 protected:
  // The server's ESTABLISHED held back by the device (Behaviour::hold_passive_established), the
  // client connected, and the client's first message in the server's buffer (cookie 3), its
  // completion in the server's receive CQ. Returns the PSP, for the test to free.
  Psp* ConnectAndSendBeforeTheServersEstablished(Ep* client, Ep* server) {
    fake().behaviour().hold_passive_established = true;
    EXPECT_TRUE(PostRecv(server, 0, 3).ok());
    Psp* psp = nullptr;
    EXPECT_TRUE(Psp::Create(ia_, next_port_, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp).ok());
    sockaddr_in address = ia_->address();
    EXPECT_TRUE(client->Connect(reinterpret_cast<sockaddr*>(&address), next_port_, DAT_TIMEOUT_INFINITE, 0, nullptr).ok());
    DAT_EVENT event;
    EXPECT_TRUE(Next(cr_evd_, event));
    EXPECT_TRUE(Cr::Accept(HandleAs<Cr>(event.event_data.cr_arrival_event_data.cr_handle), server, 0, nullptr).ok());
    Settle();
    EXPECT_EQ(client->state(), DAT_EP_STATE_CONNECTED);
    EXPECT_EQ(server->state(), DAT_EP_STATE_PASSIVE_CONNECTION_PENDING);
    EXPECT_TRUE(Send(client, 1, "early").ok());
    Settle();
    return psp;
  }
};

TEST_F(DeviceCqTest, CompletionsWaitInTheCqUntilTheConsumerPollsThem) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 42).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 1, "hello").ok());
  Settle();
  // The device is idle: the receive and the send completion sit in the EVDs' CQs, not their rings.
  EXPECT_EQ(fake().queued_completions(), 2u);
  EXPECT_EQ(recv_evd_->queue().Query().count, 0);
  DAT_EVENT event;
  ASSERT_TRUE(recv_evd_->Dequeue(event).ok());
  EXPECT_EQ(Dto(event).ep_handle, server);
  EXPECT_EQ(Dto(event).user_cookie.as_64, 42u);
  EXPECT_EQ(Dto(event).transfered_length, 6u);
  EXPECT_EQ(fake().queued_completions(), 1u);  // the send's, until its EVD is looked at
  ASSERT_TRUE(request_evd_->Dequeue(event).ok());
  EXPECT_EQ(Dto(event).ep_handle, client);
  EXPECT_EQ(fake().queued_completions(), 0u);
}

// DAT_COMPLETION_SUPPRESS_FLAG reaches the device as quiet_success (a NIC posts it unsignalled:
// no CQE unless it fails), and the request still leaves the queue, with no event.
TEST_F(DeviceCqTest, SuppressedRequestsGoToTheDeviceAsQuietSuccesses) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 1).ok());
  ASSERT_TRUE(PostRecv(server, 1, 2).ok());
  Connect(client, server);
  std::strcpy(SlotData(2), "quiet");
  const DAT_LMR_TRIPLET quiet = Slot(2, 6);
  ASSERT_TRUE(client->PostSend(1, &quiet, Cookie(7), DAT_COMPLETION_SUPPRESS_FLAG, false, 0).ok());
  ASSERT_TRUE(Send(client, 3, "loud", 8).ok());
  EXPECT_EQ(fake().quiet_posts(), 1u);
  Settle();
  DAT_EVENT event;
  ASSERT_TRUE(request_evd_->Dequeue(event).ok());
  EXPECT_EQ(Dto(event).user_cookie.as_64, 8u) << "the suppressed Send's success raises no event";
  DAT_BOOLEAN recv_idle = DAT_FALSE;
  DAT_BOOLEAN request_idle = DAT_FALSE;
  DAT_EP_STATE state;
  client->GetStatus(state, &recv_idle, &request_idle);
  EXPECT_EQ(request_idle, DAT_TRUE);
}

// DAT_COMPLETION_UNSIGNALLED_FLAG is a non-notification completion, not a suppressed one: it goes
// to the device signalled (as OFED DAPL posts it: only SUPPRESS clears IBV_SEND_SIGNALED), so its
// event reaches the EVD once the request is done, with no later request to retire it; there it
// notifies nobody (the CNO stays quiet), while a default request's event triggers the CNO.
TEST_F(DeviceCqTest, UnsignalledRequestsGoToTheDeviceSignalledAndTheirEventsNotifyNobody) {
  Cno* cno = nullptr;
  ASSERT_TRUE(Cno::Create(ia_, DAT_OS_WAIT_PROXY_AGENT{}, &cno).ok());
  ASSERT_TRUE(request_evd_->ModifyCno(cno).ok());
  Ep* probe = MakeEp();
  DAT_EP_PARAM param{};
  probe->Query(DAT_EP_FIELD_ALL, param);
  ASSERT_TRUE(Ep::Free(probe).ok());
  param.ep_attr.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
  Ep* client = nullptr;
  ASSERT_TRUE(Ep::Create(ia_, pz_, recv_evd_, request_evd_, connect_evd_, nullptr, &param.ep_attr, &client).ok());
  Ep* server = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 1).ok());
  ASSERT_TRUE(PostRecv(server, 1, 2).ok());
  Connect(client, server);
  std::strcpy(SlotData(2), "quiet");
  const DAT_LMR_TRIPLET triplet = Slot(2, 6);
  ASSERT_TRUE(client->PostSend(1, &triplet, Cookie(7), DAT_COMPLETION_UNSIGNALLED_FLAG, false, 0).ok());
  EXPECT_EQ(fake().quiet_posts(), 0u) << "an UNSIGNALLED request must reach the device signalled";
  Settle();  // the progress polls the CQ the CNO watches
  DAT_EVD_HANDLE triggered = DAT_HANDLE_NULL;
  EXPECT_EQ(cno->Wait(0, triggered).code(), Code::kTimeout) << "an UNSIGNALLED completion must not notify";
  DAT_EVENT event;
  ASSERT_TRUE(request_evd_->Dequeue(event).ok()) << "its completion is in the EVD without a later request";
  EXPECT_EQ(Dto(event).user_cookie.as_64, 7u);
  EXPECT_EQ(Dto(event).status, DAT_DTO_SUCCESS);
  EXPECT_EQ(Dto(event).transfered_length, 6u);
  ASSERT_TRUE(Send(client, 3, "loud", 8).ok());
  Settle();
  ASSERT_TRUE(cno->Wait(0, triggered).ok()) << "a default request's completion notifies";
  EXPECT_EQ(triggered, request_evd_);
  ASSERT_TRUE(request_evd_->ModifyCno(nullptr).ok());
}

// More completions than the EVD's CQ holds: the device drops them (a CQ overflow) and the
// consumer hears DAT_ASYNC_ERROR_EVD_OVERFLOW naming the EVD on the IA's asynchronous EVD.
TEST_F(DeviceCqTest, ACqOverflowReachesTheConsumerAsEvdOverflow) {
  Evd* small = nullptr;
  ASSERT_TRUE(Evd::Create(ia_, 2, nullptr, DAT_EVD_DTO_FLAG, &small).ok());
  Ep* server = MakeEp(nullptr, small);
  Ep* client = MakeEp();
  for (std::uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(PostRecv(server, i, i).ok());
  Connect(client, server);
  for (std::uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(Send(client, 8 + i, "x").ok());
  Settle();
  DAT_EVENT event;
  ASSERT_TRUE(small->Dequeue(event).ok());  // the poll that finds the overflow
  const std::vector<DAT_EVENT> async = Drain(async_);
  const auto overflow = std::find_if(async.begin(), async.end(), [&](const DAT_EVENT& e) {
    return e.event_number == DAT_ASYNC_ERROR_EVD_OVERFLOW && e.event_data.asynch_error_event_data.dat_handle == small;
  });
  EXPECT_NE(overflow, async.end()) << "no DAT_ASYNC_ERROR_EVD_OVERFLOW for the EVD";
}

TEST_F(DeviceCqTest, EpsOnAnSrqShareTheirReceiveEvdsCq) {
  constexpr int kEps = 20;
  Srq* srq = MakeSrq(64);
  std::vector<Ep*> servers;
  std::vector<Ep*> clients;
  for (int i = 0; i < kEps; ++i) {
    servers.push_back(MakeEp(srq));
    clients.push_back(MakeEp());
    Connect(clients.back(), servers.back());
  }
  for (std::uint32_t i = 0; i < kEps; ++i) ASSERT_TRUE(PostRecv(srq, i, 100 + i).ok());
  for (std::uint32_t i = 0; i < kEps; ++i) ASSERT_TRUE(Send(clients[i], 100 + i, "x").ok());
  Settle();
  EXPECT_EQ(recv_evd_->completion_queue()->capacity(), 256u);  // the EVD's length, not EPs x SRQ
  std::vector<Ep*> received;
  for (const DAT_EVENT& event : Drain(recv_evd_)) {
    EXPECT_EQ(Dto(event).status, DAT_DTO_SUCCESS);
    received.push_back(static_cast<Ep*>(Dto(event).ep_handle));
  }
  EXPECT_EQ(received.size(), servers.size());
  for (Ep* server : servers) EXPECT_NE(std::find(received.begin(), received.end(), server), received.end());
  EXPECT_EQ(srq->pool().Query().outstanding_dto_count, 0u);  // every buffer reaped on dequeue
}

TEST_F(DeviceCqTest, WhatTheCqHoldsIsReportedBeforeTheEndOfTheConnection) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(server, i, i).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 8, "one").ok());
  ASSERT_TRUE(Send(client, 9, "two").ok());
  Settle();
  ASSERT_TRUE(client->Disconnect(DAT_CLOSE_GRACEFUL_FLAG).ok());
  Settle();
  // Both messages arrived before the end: delivered, not flushed; then the unused buffer flushed.
  const std::vector<DAT_EVENT> received = Drain(recv_evd_);
  ASSERT_EQ(received.size(), 3u);
  EXPECT_EQ(Dto(received[0]).status, DAT_DTO_SUCCESS);
  EXPECT_EQ(Dto(received[1]).status, DAT_DTO_SUCCESS);
  EXPECT_EQ(Dto(received[2]).status, DAT_DTO_ERR_FLUSHED);
  DAT_EVENT event;
  ASSERT_TRUE(Next(connect_evd_, event));
  EXPECT_EQ(event.event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
}

TEST_F(DeviceCqTest, AnEpWhoseEvdsChangeReportsToTheNewEvdsCq) {
  Evd* other = nullptr;
  ASSERT_TRUE(Evd::Create(ia_, 16, nullptr, DAT_EVD_DTO_FLAG, &other).ok());
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  DAT_EP_PARAM param{};
  param.recv_evd_handle = other;
  ASSERT_TRUE(server->Modify(DAT_EP_FIELD_RECV_EVD_HANDLE, param).ok());
  ASSERT_TRUE(PostRecv(server, 0, 7).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 1, "moved").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(other, event));
  EXPECT_EQ(Dto(event).user_cookie.as_64, 7u);
  EXPECT_FALSE(Next(recv_evd_, event));
}

TEST_F(DeviceCqTest, AWaiterSleepingOnTheCqIsWokenByACompletion) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 5).ok());
  Connect(client, server);
  std::atomic<bool> done{false};
  Status status(Code::kInternal);
  DAT_EVENT event{};
  std::thread waiter([&] {
    status = recv_evd_->Wait(30'000'000, 1, event, nullptr);
    done = true;
  });
  // The waiter spins a little, then arms the CQ and sleeps on it; whenever the send goes, its
  // completion reaches the waiter (through its own poll or the CQ's notification).
  ASSERT_TRUE(Send(client, 1, "wake").ok());
  for (int i = 0; i < 100000 && !done; ++i) {
    fake().Progress();
    std::this_thread::yield();
  }
  if (!done) recv_evd_->SetUnwaitable();
  waiter.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(status, Status::Ok());
  EXPECT_EQ(Dto(event).user_cookie.as_64, 5u);
}

TEST_F(DeviceCqTest, ACnoHearsOfCompletionsNobodyPolls) {
  Cno* cno = nullptr;
  ASSERT_TRUE(Cno::Create(ia_, DAT_OS_WAIT_PROXY_AGENT{}, &cno).ok());
  ASSERT_TRUE(recv_evd_->ModifyCno(cno).ok());
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 9).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 1, "cno").ok());
  Settle();  // the progress polls the watched CQ: the completion reaches the ring and the CNO
  DAT_EVD_HANDLE triggered = DAT_HANDLE_NULL;
  ASSERT_TRUE(cno->Wait(0, triggered).ok());
  EXPECT_EQ(triggered, recv_evd_);
  DAT_EVENT event;
  ASSERT_TRUE(recv_evd_->Dequeue(event).ok());
  EXPECT_EQ(Dto(event).user_cookie.as_64, 9u);
  ASSERT_TRUE(recv_evd_->ModifyCno(nullptr).ok());
}

// The peer sends as soon as it is connected, and this side's dequeue polls the receive out of the
// CQ before its own transport reported the connection established: the receive follows the
// ESTABLISHED event, and an answer posted on it finds the EP CONNECTED.
TEST_F(DeviceCqTest, AReceiveThatBeatsTheEstablishedEventFollowsIt) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Psp* psp = ConnectAndSendBeforeTheServersEstablished(client, server);
  DAT_EVENT event;
  EXPECT_FALSE(recv_evd_->Dequeue(event).ok()) << "a receive delivered before its connection's ESTABLISHED";
  fake().ReleaseHeldEstablished();
  const std::vector<DAT_EVENT> connection = Drain(connect_evd_);
  ASSERT_EQ(connection.size(), 2u);
  EXPECT_EQ(connection[1].event_data.connect_event_data.ep_handle, server);
  EXPECT_EQ(connection[1].event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(Dto(event).user_cookie.as_64, 3u);
  EXPECT_TRUE(Send(server, 2, "answer").ok()) << "the answer to a delivered receive";
  ASSERT_TRUE(Psp::Free(psp).ok());
}

// The same receive, polled while the ESTABLISHED is being taken: the state already reads
// CONNECTED, the event is not posted yet. The receive still follows the ESTABLISHED (it was
// posted first when a poll came in that window).
TEST_F(DeviceCqTest, AReceivePolledWhileTheEstablishedIsTakenStillFollowsIt) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Psp* psp = ConnectAndSendBeforeTheServersEstablished(client, server);
  DAT_EVENT event;
  // Inside the server's OnEstablished, after its state reads CONNECTED: a consumer's dequeue
  // polls the receive CQ there. It runs on the thread inside that step, since the fake device
  // lets one thread at a time poll; so before the fix its pass posted the receive's event under
  // the EP's lock, which softdat's lock check refuses, and the order below was wrong.
  bool polled = false;
  DAT_EP_STATE state_then = DAT_EP_STATE_UNCONNECTED;
  bool received_then = true;
  fake().behaviour().on_local_address = [&] {
    polled = true;
    state_then = server->state();
    DAT_EVENT early;
    received_then = recv_evd_->Dequeue(early).ok();
  };
  fake().ReleaseHeldEstablished();
  Settle();
  ASSERT_TRUE(polled);
  EXPECT_EQ(state_then, DAT_EP_STATE_CONNECTED) << "the poll came in the window";
  EXPECT_FALSE(received_then) << "a receive delivered before its connection's ESTABLISHED";
  const std::vector<DAT_EVENT> connection = Drain(connect_evd_);
  ASSERT_EQ(connection.size(), 2u);
  EXPECT_EQ(connection[1].event_data.connect_event_data.ep_handle, server);
  EXPECT_EQ(connection[1].event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
  ASSERT_TRUE(Next(recv_evd_, event)) << "the receive, after the ESTABLISHED";
  EXPECT_EQ(Dto(event).user_cookie.as_64, 3u);
  ASSERT_TRUE(Psp::Free(psp).ok());
}

}  // namespace
}  // namespace softdat::core::device_testing
