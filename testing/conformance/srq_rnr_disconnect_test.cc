// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What happens around an SRQ EP's buffers when the SRQ is empty (dat_srq_create: "the same as
// when there are no buffers on the EP Recv Work Queue", i.e. receiver not ready) and when the EP
// disconnects (dat_srq_post_recv USAGE: completed buffers reach the recv EVD, uncompleted ones are
// flushed, buffers still on the SRQ stay available to the other EPs).
#include <unistd.h>

#include <algorithm>
#include <initializer_list>

#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

// What both kinds of receiver-not-ready end check last: an EP that broke takes nothing any more,
// so a buffer posted now stays on the SRQ.
class RnrEndTest : public ConformanceTest {
 protected:
  void ExpectABufferPostedNowStaysOnTheSrq(DAT_SRQ_HANDLE srq, DAT_EVD_HANDLE recv_evd) {
    Region region;
    ASSERT_EQ(Register(region, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
    DAT_LMR_TRIPLET iov = region.Triplet(0, 64);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(1)), DAT_SUCCESS);
    DAT_EVENT event{};
    EXPECT_EQ(DAT_GET_TYPE(Wait(recv_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED);
    EXPECT_EQ(QuerySrq(srq).available_dto_count, 1);
  }
};

class Rnr : public RnrEndTest {
 protected:
  void SetUp() override {
    RnrEndTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // iWARP has no receiver-not-ready wait: a Send that finds no buffer ends the connection.
    if (!ProviderSays("SOFTDAT_RNR_WAITS")) GTEST_SKIP() << "SOFTDAT_RNR_WAITS is not TRUE on this device";
  }

  // Posts slots 0.. (one per fill) on `srq`: the waiting 8-byte messages complete on `evd`, in
  // order, intact.
  void PostAndExpectWaitingMessages(DAT_SRQ_HANDLE srq, SlotBuffers& slots, DAT_EVD_HANDLE evd,
                                    std::initializer_list<char> fills) {
    for (int i = 0; i < static_cast<int>(fills.size()); ++i) {
      DAT_LMR_TRIPLET iov = slots.Slot(i);
      ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
    }
    for (char fill : fills) {
      DAT_DTO_COMPLETION_EVENT_DATA dto{};
      ASSERT_NO_FATAL_FAILURE(WaitDto(evd, dto));
      EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
      EXPECT_EQ(dto.transfered_length, 8u);
      EXPECT_EQ(slots.region.bytes[dto.user_cookie.as_64 * 64], fill);
    }
  }
};

TEST_F(Rnr, MessageWaitsForABufferNothingLostOtherConnectionsGoOn) {
  DAT_SRQ_HANDLE empty_srq, other_srq;
  ASSERT_EQ(CreateSrq(8, 1, &empty_srq), DAT_SUCCESS);
  ASSERT_EQ(CreateSrq(8, 1, &other_srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = 64;
  ASSERT_EQ(Register(slots.region, 64 * 8, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 4; i < 8; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(other_srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  }
  Pair stalled, other;
  ASSERT_NO_FATAL_FAILURE(Connect(empty_srq, stalled));
  ASSERT_NO_FATAL_FAILURE(Connect(other_srq, other));
  ASSERT_NO_FATAL_FAILURE(Send(stalled, 8, 'A'));
  ASSERT_NO_FATAL_FAILURE(Send(stalled, 8, 'B'));
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(Wait(stalled.receiver_recv_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED)
      << "no buffer: nothing can complete";
  // The other connection is not held up.
  for (char fill : {'x', 'y'}) {
    ASSERT_NO_FATAL_FAILURE(Send(other, 8, fill));
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(other.receiver_recv_evd, dto));
    EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(slots.region.bytes[dto.user_cookie.as_64 * 64], fill);
  }
  // Buffers arrive: both waiting messages complete, in order, intact.
  ASSERT_NO_FATAL_FAILURE(PostAndExpectWaitingMessages(empty_srq, slots, stalled.receiver_recv_evd, {'A', 'B'}));
  DAT_EP_STATE state;
  DAT_BOOLEAN recv_idle, request_idle;
  ASSERT_EQ(dat_ep_get_status(stalled.receiver, &state, &recv_idle, &request_idle), DAT_SUCCESS);
  EXPECT_EQ(state, DAT_EP_STATE_CONNECTED);
}

TEST_F(Rnr, ReplenishingAFewBuffersUnderLoadLosesNothingAndKeepsOrder) {
  // Four connections share an SRQ of 8 buffers and a recv EVD; 4000 messages in all, so messages
  // wait for buffers again and again while the consumer re-posts each buffer as it reaps it.
  constexpr int kPairs = 4, kPerPair = 1000, kWindow = 16, kBuffers = 8;
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(kBuffers, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = 64;
  ASSERT_EQ(Register(slots.region, 64 * kBuffers, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < kBuffers; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  }
  const DAT_EVD_HANDLE shared_evd = MakeEvd(DAT_EVD_DTO_FLAG, 1024);
  Pair pairs[kPairs];
  Region out[kPairs];
  int sent[kPairs] = {}, send_done[kPairs] = {}, received[kPairs] = {};
  for (int p = 0; p < kPairs; ++p) {
    ASSERT_NO_FATAL_FAILURE(Connect(srq, pairs[p], {.recv_evd = shared_evd}));
    ASSERT_EQ(Register(out[p], 64 * kWindow, DAT_MEM_PRIV_LOCAL_READ_FLAG), DAT_SUCCESS);
  }
  int total = 0;
  for (long spin = 0; total < kPairs * kPerPair; ++spin) {
    ASSERT_LT(spin, 20'000'000) << "stalled after " << total << " messages";
    for (int p = 0; p < kPairs; ++p) {
      while (sent[p] < kPerPair && sent[p] - send_done[p] < kWindow) {
        const int slot = sent[p] % kWindow;
        out[p].bytes[64 * slot] = static_cast<char>(p);
        out[p].bytes[64 * slot + 1] = static_cast<char>(sent[p] & 0x7f);
        out[p].bytes[64 * slot + 2] = static_cast<char>(sent[p] >> 7);
        DAT_LMR_TRIPLET iov = out[p].Triplet(64 * slot, 64);
        ASSERT_EQ(dat_ep_post_send(pairs[p].sender, 1, &iov, Cookie(sent[p]), DAT_COMPLETION_DEFAULT_FLAG),
                  DAT_SUCCESS);
        ++sent[p];
      }
      DAT_EVENT event{};
      while (dat_evd_dequeue(pairs[p].sender_request_evd, &event) == DAT_SUCCESS) {
        ASSERT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
        ++send_done[p];
      }
    }
    DAT_EVENT event{};
    while (dat_evd_dequeue(shared_evd, &event) == DAT_SUCCESS) {
      const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
      ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
      const std::uint64_t slot = dto.user_cookie.as_64;
      ASSERT_LT(slot, static_cast<std::uint64_t>(kBuffers));
      const char* bytes = slots.region.bytes.data() + 64 * slot;
      const int p = bytes[0];
      ASSERT_GE(p, 0);
      ASSERT_LT(p, kPairs);
      EXPECT_EQ(dto.ep_handle, pairs[p].receiver);
      const int sequence = bytes[1] | (bytes[2] << 7);
      ASSERT_EQ(sequence, received[p]) << "connection " << p << " out of order or lost a message";
      ++received[p];
      ++total;
      DAT_LMR_TRIPLET iov = slots.Slot(slot);
      ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(slot)), DAT_SUCCESS);
    }
  }
  for (int p = 0; p < kPairs; ++p) EXPECT_EQ(received[p], kPerPair);
}

// An EP that stopped waiting for a buffer (disconnected, or freed) must not take the next one.
TEST_F(Rnr, EpDisconnectedOrFreedWhileWaitingForABufferTakesNone) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  Pair disconnected, freed;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, disconnected));
  ASSERT_NO_FATAL_FAILURE(Connect(srq, freed));
  ASSERT_NO_FATAL_FAILURE(Send(disconnected, 8, 'd'));
  ASSERT_NO_FATAL_FAILURE(Send(freed, 8, 'f'));
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(Wait(disconnected.receiver_recv_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED);
  ASSERT_EQ(dat_ep_disconnect(disconnected.receiver, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  ASSERT_TRUE(WaitConnectionEvent(disconnected.receiver_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_EQ(dat_ep_free(freed.receiver), DAT_SUCCESS);
  Region region;
  ASSERT_EQ(Register(region, 64 * 2, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < 2; ++i) {
    DAT_LMR_TRIPLET iov = region.Triplet(64 * i, 64);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  }
  EXPECT_EQ(DAT_GET_TYPE(Wait(disconnected.receiver_recv_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 2);
  // The buffers still serve a live connection.
  Pair live;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, live));
  ASSERT_NO_FATAL_FAILURE(Send(live, 8, 'l'));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(live.receiver_recv_evd, dto));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(dto.ep_handle, live.receiver);
}

// A sender's Sends complete as they leave it (iWARP), so it may disconnect gracefully while they
// still wait at the receiver for buffers. They are whole there and the sender counts them
// delivered: a graceful close must not drop them (the soak found a connection that broke at its
// peer's FIN while its last message waited for an SRQ buffer being re-posted).
class RnrGracefulClose : public Rnr {
 protected:
  void SetUp() override {
    Rnr::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (ProviderSays("SOFTDAT_TRANSPORT", "verbs"))
      GTEST_SKIP() << "a device's Sends complete only once the receiver took them";
  }

  // Connects `pair` to an empty SRQ of 8, sends one 8-byte message per fill, waits for the
  // sender's completions, then disconnects the sender gracefully.
  void SendThenCloseGracefully(DAT_SRQ_HANDLE& srq, Pair& pair, std::initializer_list<char> fills) {
    ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
    for (char fill : fills) ASSERT_NO_FATAL_FAILURE(Send(pair, 8, fill));
    for (std::size_t i = 0; i < fills.size(); ++i) {
      DAT_DTO_COMPLETION_EVENT_DATA dto{};
      ASSERT_NO_FATAL_FAILURE(WaitDto(pair.sender_request_evd, dto));
      ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
    }
    ASSERT_EQ(dat_ep_disconnect(pair.sender, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  }
};

TEST_F(RnrGracefulClose, SendsWaitingAtTheSendersCloseTakeTheBuffersThatCome) {
  DAT_SRQ_HANDLE srq;
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(SendThenCloseGracefully(srq, pair, {'A', 'B'}));
  DAT_EVENT event{};
  ASSERT_EQ(DAT_GET_TYPE(Wait(pair.receiver_connect_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED)
      << "the receiver ended the connection at the sender's close, its messages undelivered: event "
      << std::hex << event.event_number;
  SlotBuffers slots;
  slots.slot_size = 64;
  ASSERT_EQ(Register(slots.region, 64 * 2, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(PostAndExpectWaitingMessages(srq, slots, pair.receiver_recv_evd, {'A', 'B'}));
  EXPECT_TRUE(WaitConnectionEvent(pair.receiver_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
  EXPECT_TRUE(WaitConnectionEvent(pair.sender_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
}

// ... but not for ever: a peer that closed (or died: its kernel's FIN looks the same) leaves its
// EP waiting no longer than a graceful close is given (3 s), then the receiver's EP breaks; the
// SRQ keeps the buffers that come after.
TEST_F(RnrGracefulClose, SendsWaitingAtTheSendersCloseWithNoBufferEndBroken) {
  DAT_SRQ_HANDLE srq;
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(SendThenCloseGracefully(srq, pair, {'A'}));
  EXPECT_TRUE(WaitConnectionEvent(pair.receiver_connect_evd, DAT_CONNECTION_EVENT_BROKEN))
      << "a message that never finds a buffer after its sender closed must end the connection";
  EXPECT_TRUE(WaitConnectionEvent(pair.sender_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_NO_FATAL_FAILURE(ExpectABufferPostedNowStaysOnTheSrq(srq, pair.receiver_recv_evd));
}

class RnrTimeout : public RnrEndTest {
 protected:
  void SetUp() override {
    // A device's RNR timer is its QP's rnr_retry (7: forever), not an IA option.
    if (!SuiteIsTcp()) GTEST_SKIP() << "rnr_timeout_ms is an IA option of softdat-tcp only";
    RnrEndTest::SetUp();
  }
  const char* ia_name() const override { return "softdat-tcp-rnr"; }
};

TEST_F(RnrTimeout, ConnectionBreaksWithConnectionEventBroken) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 'A'));
  EXPECT_TRUE(WaitConnectionEvent(pair.receiver_connect_evd, DAT_CONNECTION_EVENT_BROKEN))
      << "rnr_timeout_ms=100 must break a connection whose message found no buffer";
  ASSERT_NO_FATAL_FAILURE(ExpectABufferPostedNowStaysOnTheSrq(srq, pair.receiver_recv_evd));
}

using SrqEpDisconnect = ConformanceTest;

TEST_F(SrqEpDisconnect, CompletedBuffersReachRecvEvdUncompletedFlushedSrqBuffersStayAvailable) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = 64;
  ASSERT_EQ(Register(slots.region, 64 * 6, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < 6; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  }
  Pair leaving, staying;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, leaving));
  ASSERT_NO_FATAL_FAILURE(Connect(srq, staying));
  ASSERT_NO_FATAL_FAILURE(Send(leaving, 8, 'L'));
  ASSERT_NO_FATAL_FAILURE(Send(leaving, 8, 'M'));
  ASSERT_NO_FATAL_FAILURE(WaitSends(leaving, 2));
  ASSERT_NO_FATAL_FAILURE(Disconnect(leaving));
  // Every buffer the leaving EP took is on its recv EVD: completed ones with their data, any it
  // had not completed as flushed. Nothing else.
  int successes = 0;
  DAT_EVENT event{};
  while (dat_evd_dequeue(leaving.receiver_recv_evd, &event) == DAT_SUCCESS) {
    ASSERT_EQ(event.event_number, DAT_DTO_COMPLETION_EVENT);
    const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
    EXPECT_EQ(dto.ep_handle, leaving.receiver);
    if (dto.status == DAT_DTO_SUCCESS) {
      EXPECT_EQ(slots.region.bytes[dto.user_cookie.as_64 * 64], successes == 0 ? 'L' : 'M');
      ++successes;
    } else {
      EXPECT_EQ(dto.status, DAT_DTO_ERR_FLUSHED);
    }
  }
  EXPECT_EQ(successes, 2) << "both messages were sent and acknowledged before the disconnect";
  DAT_COUNT n = -1, span = -1;
  ASSERT_EQ(dat_ep_recv_query(leaving.receiver, &n, &span), DAT_SUCCESS);
  EXPECT_EQ(n, 0) << "a disconnected EP holds no buffer";
  // The four buffers still on the SRQ serve the other connection.
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_NO_FATAL_FAILURE(Send(staying, 8, static_cast<char>('s' + i)));
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(staying.receiver_recv_evd, dto));
    EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(dto.ep_handle, staying.receiver);
  }
}

TEST_F(SrqEpDisconnect, BufferTakenButNotCompletedIsFlushed) {
  if (!SrqEpCountsKnown())
    GTEST_SKIP() << "ep_recv_info_supported: this provider cannot see a buffer an SRQ EP holds";
  if (!ProgressIsPolled()) GTEST_SKIP() << "runs in the progress=poll variant, which can stop the receiver mid-message";
  // A message large enough that the receiver can see (dat_ep_recv_query) that its EP took the
  // buffer while the bytes are still arriving, and disconnect then. Under progress=poll one pump
  // of the sender writes no more than the socket buffers hold, so the receiver cannot finish the
  // message in the step that takes its buffer.
  const std::size_t size = std::min<std::size_t>(32u << 20, ia_attr_.max_message_size);
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Region big;
  ASSERT_EQ(Register(big, size, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = big.Triplet(0, size);
  ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(1)), DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair, {.sender_ia_name = SuiteIaName()}));
  ASSERT_NO_FATAL_FAILURE(Send(pair, size, 'b'));
  DAT_COUNT n = 0;
  DAT_EVENT event{};
  bool completed = false;
  for (long i = 0; i < 50'000'000 && n == 0 && !completed; ++i) {
    Pump(pair.sender_request_evd);  // progress=poll: the sender writes what the socket takes
    ASSERT_EQ(dat_ep_recv_query(pair.receiver, &n, nullptr), DAT_SUCCESS);
    completed = n == 0 && dat_evd_dequeue(pair.receiver_recv_evd, &event) == DAT_SUCCESS;
  }
  ASSERT_FALSE(completed) << "the message completed before its buffer was seen taken";
  ASSERT_EQ(n, 1) << "the EP never took the buffer";
  ASSERT_EQ(dat_ep_disconnect(pair.receiver, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  ASSERT_TRUE(WaitConnectionEvent(pair.receiver_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
  EXPECT_EQ(dto.status, DAT_DTO_ERR_FLUSHED);
  EXPECT_EQ(dto.user_cookie.as_64, 1u);
  EXPECT_EQ(dto.ep_handle, pair.receiver);
  EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(pair.receiver_recv_evd, &event)), DAT_QUEUE_EMPTY);
  EXPECT_EQ(QuerySrq(srq).outstanding_dto_count, 0) << "the flushed buffer was reaped";
}

}  // namespace
}  // namespace softdat::conformance
