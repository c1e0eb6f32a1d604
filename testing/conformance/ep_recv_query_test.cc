// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_ep_recv_query(3DAT): nbufs_allocated and bufs_alloc_span are one consistent snapshot, the
// span is (latest allocated MSN - latest completed MSN), and n never exceeds the span; for an EP
// with its own receive queue a buffer is allocated when posted, for an SRQ EP when it takes one.
#include <algorithm>

#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

class EpRecvQuery : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (provider_attr_.srq_info_supported == 0) GTEST_SKIP() << "provider attribute srq_info_supported is 0";
  }
};

TEST_F(EpRecvQuery, OwnQueueEpCountsPostedBuffersAndSpanEqualsThem) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  Region region;
  ASSERT_EQ(Register(region, 64 * 3, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_COUNT n = -1, span = -1;
  ASSERT_EQ(dat_ep_recv_query(pair.sender, &n, &span), DAT_SUCCESS);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(span, 0);
  for (int i = 0; i < 3; ++i) {
    DAT_LMR_TRIPLET iov = region.Triplet(64 * i, 64);
    DAT_DTO_COOKIE cookie{};
    ASSERT_EQ(dat_ep_post_recv(pair.sender, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  }
  ASSERT_EQ(dat_ep_recv_query(pair.sender, &n, &span), DAT_SUCCESS);
  EXPECT_EQ(n, 3) << "posted to the EP means allocated to it";
  EXPECT_EQ(span, 3) << "MSNs of the three buffers follow the last completed one";
  // Either output may be NULL.
  EXPECT_EQ(dat_ep_recv_query(pair.sender, nullptr, &span), DAT_SUCCESS);
  EXPECT_EQ(dat_ep_recv_query(pair.sender, &n, nullptr), DAT_SUCCESS);
}

TEST_F(EpRecvQuery, SrqEpAllocatesWhenItTakesABufferAndNeverReportsMoreThanTheSpan) {
  if (!SrqEpCountsKnown()) GTEST_SKIP() << "ep_recv_info_supported: this provider cannot count an SRQ EP's buffers";
  constexpr int kMessages = 64;
  constexpr std::size_t kSize = 256 * 1024;
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(kMessages, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = kSize;
  ASSERT_EQ(Register(slots.region, kSize * 8, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < kMessages; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i % 8);  // content is not checked: slots may be shared
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = i;
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
  }
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  DAT_COUNT n = -1, span = -1;
  ASSERT_EQ(dat_ep_recv_query(pair.receiver, &n, &span), DAT_SUCCESS);
  EXPECT_EQ(n, 0) << "buffers on the SRQ are not allocated to any EP";
  EXPECT_EQ(span, 0);
  // Snapshots taken while large messages stream in.
  for (int i = 0; i < kMessages; ++i) ASSERT_NO_FATAL_FAILURE(Send(pair, kSize, 'x'));
  int completed = 0;
  int snapshots = 0;
  while (completed < kMessages) {
    ASSERT_EQ(dat_ep_recv_query(pair.receiver, &n, &span), DAT_SUCCESS);
    ++snapshots;
    ASSERT_GE(n, 0);
    ASSERT_LE(n, span) << "never n buffers in a span smaller than n";
    ASSERT_LE(span, kMessages - completed);
    DAT_EVENT event{};
    while (dat_evd_dequeue(pair.receiver_recv_evd, &event) == DAT_SUCCESS) {
      ASSERT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
      ++completed;
    }
    if (snapshots > 2'000'000) FAIL() << "receives did not complete";
  }
  ASSERT_EQ(dat_ep_recv_query(pair.receiver, &n, &span), DAT_SUCCESS);
  EXPECT_EQ(n, 0) << "every allocated buffer completed";
  EXPECT_EQ(span, 0);
}

TEST_F(EpRecvQuery, SpanIsLatestAllocatedMsnMinusLatestCompletedMsn) {
  if (!SrqEpCountsKnown()) GTEST_SKIP() << "ep_recv_info_supported: this provider cannot count an SRQ EP's buffers";
  if (!ProgressIsPolled()) GTEST_SKIP() << "runs in the progress=poll variant, which can stop the receiver mid-message";
  // Two small messages complete (MSNs 1 and 2), then a large one (MSN 3) is caught while its
  // bytes arrive: one buffer allocated, and the span is 3 - 2 = 1. The sender has an IA of its
  // own and under progress=poll each side moves only when pumped: one pump of the sender writes
  // no more than the socket buffers hold (far less than the message), so the receiver takes the
  // buffer in one step and cannot finish the message in it.
  const std::size_t size = std::min<std::size_t>(32u << 20, ia_attr_.max_message_size);
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Region small, big;
  ASSERT_EQ(Register(small, 128, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  ASSERT_EQ(Register(big, size, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_DTO_COOKIE cookie{};
  for (int i = 0; i < 2; ++i) {
    DAT_LMR_TRIPLET iov = small.Triplet(64 * i, 64);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
  }
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair, {.sender_ia_name = SuiteIaName()}));
  for (int i = 0; i < 2; ++i) {
    ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 's'));
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto, pair.sender_request_evd));
  }
  DAT_LMR_TRIPLET iov = big.Triplet(0, size);
  ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(Send(pair, size, 'b'));
  DAT_COUNT n = 0, span = 0;
  DAT_EVENT event{};
  bool completed = false;
  for (long i = 0; i < 50'000'000 && n == 0 && !completed; ++i) {
    Pump(pair.sender_request_evd);  // progress=poll: the sender writes what the socket takes
    ASSERT_EQ(dat_ep_recv_query(pair.receiver, &n, &span), DAT_SUCCESS);
    ASSERT_LE(n, span);
    completed = n == 0 && dat_evd_dequeue(pair.receiver_recv_evd, &event) == DAT_SUCCESS;
  }
  ASSERT_FALSE(completed) << "the message completed before its buffer was seen allocated";
  EXPECT_EQ(n, 1);
  EXPECT_EQ(span, 1);
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto, pair.sender_request_evd));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  ASSERT_EQ(dat_ep_recv_query(pair.receiver, &n, &span), DAT_SUCCESS);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(span, 0);
}

TEST_F(EpRecvQuery, MessageWaitingForABufferAllocatesNothing) {
  if (!SrqEpCountsKnown()) GTEST_SKIP() << "ep_recv_info_supported: this provider cannot count an SRQ EP's buffers";
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 'w'));
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(Wait(pair.receiver_recv_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED);
  DAT_COUNT n = -1, span = -1;
  ASSERT_EQ(dat_ep_recv_query(pair.receiver, &n, &span), DAT_SUCCESS);
  EXPECT_EQ(n, 0);
  EXPECT_LE(n, span);
}

}  // namespace
}  // namespace softdat::conformance
