// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The receive queue of an EP without SRQ: buffers consumed by MSN position, completions in MSN
// order, flush on close, posting limits, and dat_ep_recv_query's counts.
#include "srq/ep_recv_queue.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Cookie;
using testing::Segment;
using TakeResult = EpRecvQueue::TakeResult;

std::unique_ptr<EpRecvQueue> MakeQueue(std::uint32_t max_dtos, std::uint32_t max_iov = 4) {
  std::unique_ptr<EpRecvQueue> queue;
  EXPECT_TRUE(EpRecvQueue::Create(max_dtos, max_iov, queue).ok());
  return queue;
}

Status PostTagged(EpRecvQueue& queue, std::uint64_t tag, std::uint32_t length = 100) {
  const RecvSegment segment = Segment(tag, length);
  ReceiveSource::Posted posted;
  return queue.Post(Cookie(tag), {&segment, 1}, DAT_COMPLETION_DEFAULT_FLAG, posted);
}

std::vector<std::pair<std::uint64_t, DAT_DTO_COMPLETION_STATUS>> PopAll(EpRecvQueue& queue) {
  std::vector<std::pair<std::uint64_t, DAT_DTO_COMPLETION_STATUS>> out;
  RecvCompletion completion{};
  while (queue.PopCompletion(completion)) out.emplace_back(completion.cookie.as_64, completion.status);
  return out;
}

// A completion says whether another is ready behind it, so the deliverer stops without a second
// look in the usual one-at-a-time case, and never stops while one is.
TEST(EpRecvQueue, ACompletionSaysWhetherAnotherIsReadyBehindIt) {
  auto queue = MakeQueue(8);
  for (std::uint64_t tag = 1; tag <= 4; ++tag) ASSERT_TRUE(PostTagged(*queue, tag).ok());
  RecvBuffer buffer{};
  for (std::uint32_t msn = 1; msn <= 3; ++msn) ASSERT_EQ(queue->TakeForMessage(msn, buffer), TakeResult::kTaken);
  ASSERT_TRUE(queue->Place(1, 1, DAT_DTO_SUCCESS, {}).ok());
  ASSERT_TRUE(queue->Place(2, 2, DAT_DTO_SUCCESS, {}).ok());
  RecvCompletion completion{};
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_TRUE(completion.more) << "MSN 2 is placed";
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_FALSE(completion.more) << "MSN 3 is taken, not placed; the buffer after it is not taken";
  queue->Close();
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_EQ(completion.status, DAT_DTO_ERR_FLUSHED);
  EXPECT_TRUE(completion.more) << "closed: the last buffer is flushed too";
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_FALSE(completion.more) << "nothing left";
  EXPECT_FALSE(queue->PopCompletion(completion));
}

TEST(EpRecvQueue, CreateRefusesOutOfRangeSizes) {
  std::unique_ptr<EpRecvQueue> queue;
  EXPECT_EQ(EpRecvQueue::Create(0, 1, queue), Status(Code::kInvalidParameter, Detail::kParamAttributes));
  EXPECT_EQ(EpRecvQueue::Create(EpRecvQueue::kMaxRecvDtos + 1, 1, queue),
            Status(Code::kInvalidParameter, Detail::kParamAttributes));
  EXPECT_EQ(EpRecvQueue::Create(4, EpRecvQueue::kMaxRecvIov + 1, queue),
            Status(Code::kInvalidParameter, Detail::kParamAttributes));
  EXPECT_EQ(queue, nullptr);
}

TEST(EpRecvQueue, BufferOfAnMsnIsItsPostingPositionWhateverTheArrivalOrder) {
  auto queue = MakeQueue(8);
  for (std::uint64_t tag = 10; tag < 13; ++tag) ASSERT_TRUE(PostTagged(*queue, tag).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(3, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 12u);
  ASSERT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 10u);
  EXPECT_EQ(buffer.segments[0].address, Segment(10).address);
  ASSERT_TRUE(queue->Place(3, 30, DAT_DTO_SUCCESS, {}).ok());
  RecvCompletion completion{};
  EXPECT_FALSE(queue->PopCompletion(completion)) << "MSN 1 is not placed yet";
  ASSERT_TRUE(queue->Place(1, 10, DAT_DTO_SUCCESS, {}).ok());
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_EQ(completion.cookie.as_64, 10u);
  EXPECT_EQ(completion.msn, 1u);
  EXPECT_EQ(completion.transferred_length, 10u);
  EXPECT_FALSE(queue->PopCompletion(completion)) << "MSN 2 is open";
  ASSERT_EQ(queue->TakeForMessage(2, buffer), TakeResult::kTaken);
  ASSERT_TRUE(queue->Place(2, 20, DAT_DTO_SUCCESS, {}).ok());
  EXPECT_EQ(PopAll(*queue), (std::vector<std::pair<std::uint64_t, DAT_DTO_COMPLETION_STATUS>>{
                                {11, DAT_DTO_SUCCESS}, {12, DAT_DTO_SUCCESS}}));
}

TEST(EpRecvQueue, UnpostedMsnIsNotReadyAndDeliveredMsnIsRefused) {
  auto queue = MakeQueue(4);
  RecvBuffer buffer{};
  EXPECT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kNotReady);
  ASSERT_TRUE(PostTagged(*queue, 1).ok());
  ASSERT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kTaken);
  EXPECT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kTaken) << "a later segment finds the same buffer";
  ASSERT_TRUE(queue->Place(1, 1, DAT_DTO_SUCCESS, {}).ok());
  EXPECT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kRefused) << "placed";
  RecvCompletion completion{};
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kRefused) << "delivered";
  EXPECT_EQ(queue->TakeForMessage(2, buffer), TakeResult::kNotReady);
  EXPECT_EQ(queue->TakeForMessage(1000, buffer), TakeResult::kNotReady);
}

TEST(EpRecvQueue, PostRefusalsChangeNothing) {
  auto queue = MakeQueue(2, 2);
  const RecvSegment three[3] = {Segment(1), Segment(2), Segment(3)};
  ReceiveSource::Posted posted;
  EXPECT_EQ(queue->Post(Cookie(1), three, DAT_COMPLETION_DEFAULT_FLAG, posted), Status(Code::kInvalidParameter, Detail::kParamNumSegments));
  ASSERT_TRUE(PostTagged(*queue, 1).ok());
  ASSERT_TRUE(PostTagged(*queue, 2).ok());
  EXPECT_EQ(PostTagged(*queue, 3).code(), Code::kInsufficientResources);
  EXPECT_EQ(queue->held(), 2u);
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(2, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 2u);
}

TEST(EpRecvQueue, ZeroSegmentBufferTakesAZeroSizeMessage) {
  auto queue = MakeQueue(2);
  ReceiveSource::Posted posted;
  ASSERT_TRUE(queue->Post(Cookie(7), {}, DAT_COMPLETION_DEFAULT_FLAG, posted).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.capacity, 0u);
  EXPECT_EQ(queue->Place(1, 1, DAT_DTO_SUCCESS, {}), Status(Code::kInvalidParameter));
  ASSERT_TRUE(queue->Place(1, 0, DAT_DTO_SUCCESS, {}).ok());
  EXPECT_EQ(PopAll(*queue).size(), 1u);
}

TEST(EpRecvQueue, CloseFlushesEverythingInPostingOrderKeepingPlacedStatuses) {
  auto queue = MakeQueue(8);
  for (std::uint64_t tag = 1; tag <= 4; ++tag) ASSERT_TRUE(PostTagged(*queue, tag).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(2, buffer), TakeResult::kTaken);
  ASSERT_TRUE(queue->Place(2, 5, DAT_DTO_ERR_LOCAL_LENGTH, {}).ok());
  ASSERT_EQ(queue->TakeForMessage(3, buffer), TakeResult::kTaken);
  queue->Close();
  EXPECT_EQ(queue->TakeForMessage(4, buffer), TakeResult::kRefused);
  ASSERT_TRUE(PostTagged(*queue, 5).ok()) << "posting to a disconnected EP is allowed";
  EXPECT_EQ(PopAll(*queue), (std::vector<std::pair<std::uint64_t, DAT_DTO_COMPLETION_STATUS>>{
                                {1, DAT_DTO_ERR_FLUSHED},
                                {2, DAT_DTO_ERR_LOCAL_LENGTH},
                                {3, DAT_DTO_ERR_FLUSHED},
                                {4, DAT_DTO_ERR_FLUSHED},
                                {5, DAT_DTO_ERR_FLUSHED}}));
  EXPECT_EQ(queue->held(), 0u);
}

TEST(EpRecvQueue, BeginStartsANewConnectionOnlyWhenNothingIsInFlight) {
  auto queue = MakeQueue(4);
  ASSERT_TRUE(PostTagged(*queue, 1).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kTaken);
  EXPECT_EQ(queue->BeginConnection().code(), Code::kInvalidState);
  queue->Close();
  EXPECT_EQ(PopAll(*queue).size(), 1u);
  ASSERT_TRUE(PostTagged(*queue, 2).ok());
  ASSERT_TRUE(queue->BeginConnection().ok());
  ASSERT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kTaken) << "reopened";
  EXPECT_EQ(buffer.cookie.as_64, 2u);
}

TEST(EpRecvQueue, RecvQueryCountsPostedBuffersAsAllocatedWithEqualSpan) {
  auto queue = MakeQueue(8);
  DAT_COUNT n = -1;
  DAT_COUNT span = -1;
  queue->RecvQuery(&n, &span);
  EXPECT_EQ(n, 0);
  EXPECT_EQ(span, 0);
  for (std::uint64_t tag = 1; tag <= 3; ++tag) ASSERT_TRUE(PostTagged(*queue, tag).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(1, buffer), TakeResult::kTaken);
  ASSERT_TRUE(queue->Place(1, 1, DAT_DTO_SUCCESS, {}).ok());
  RecvCompletion completion{};
  ASSERT_TRUE(queue->PopCompletion(completion));
  queue->RecvQuery(&n, &span);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(span, 2);
  queue->RecvQuery(nullptr, nullptr);
}

TEST(EpRecvQueue, MsnWrapsAroundTwoToTheThirtyTwo) {
  auto queue = MakeQueue(4);
  ASSERT_TRUE(queue->BeginConnectionAt(0xFFFFFFFFu).ok());
  ASSERT_TRUE(PostTagged(*queue, 1).ok());
  ASSERT_TRUE(PostTagged(*queue, 2).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(0, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 2u);
  ASSERT_EQ(queue->TakeForMessage(0xFFFFFFFFu, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 1u);
}

}  // namespace
}  // namespace softdat::srq

namespace softdat::srq {
namespace {

TEST(EpRecvQueueNotes, PostFlagsAndMessageNotesReachTheCompletion) {
  std::unique_ptr<EpRecvQueue> queue;
  ASSERT_TRUE(EpRecvQueue::Create(4, 1, queue).ok());
  const RecvSegment segment = testing::Segment(1);
  ReceiveSource::Posted posted;
  ASSERT_TRUE(queue->Post(testing::Cookie(1), {&segment, 1}, DAT_COMPLETION_UNSIGNALLED_FLAG, posted).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(1, buffer), EpRecvQueue::TakeResult::kTaken);
  ASSERT_TRUE(queue->Place(1, 3, DAT_DTO_SUCCESS, RecvNotes{true, true, 0x4242, {}}).ok());
  RecvCompletion completion{};
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_EQ(completion.post_flags, DAT_COMPLETION_UNSIGNALLED_FLAG);
  EXPECT_TRUE(completion.notes.solicited);
  EXPECT_TRUE(completion.notes.invalidated);
  EXPECT_EQ(completion.notes.invalidated_key, 0x4242u);
}

TEST(EpRecvQueueNotes, ImmediateDataTakesABufferAndPlacesNothing) {
  std::unique_ptr<EpRecvQueue> queue;
  ASSERT_TRUE(EpRecvQueue::Create(4, 1, queue).ok());
  const RecvSegment segment = testing::Segment(1);  // smaller than the Write: nothing goes into it
  ReceiveSource::Posted posted;
  ASSERT_TRUE(queue->Post(testing::Cookie(1), {&segment, 1}, DAT_COMPLETION_DEFAULT_FLAG, posted).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(queue->TakeForMessage(1, buffer), EpRecvQueue::TakeResult::kTaken);
  RecvNotes notes{};
  notes.extension.immediate = true;
  notes.extension.immediate_data = 0x7777;
  notes.extension.written = 1 << 20;
  ASSERT_TRUE(queue->Place(1, 0, DAT_DTO_SUCCESS, notes).ok());
  RecvCompletion completion{};
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_EQ(completion.transferred_length, 0u);
  EXPECT_TRUE(completion.notes.extension.immediate);
  EXPECT_EQ(completion.notes.extension.immediate_data, 0x7777u);
  EXPECT_EQ(completion.notes.extension.written, 1u << 20);
  EXPECT_EQ(queue->held(), 0u);
}

}  // namespace
}  // namespace softdat::srq
