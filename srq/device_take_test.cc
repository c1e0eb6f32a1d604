// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The pool steps of the device receive model: the device, not the pool, picks which posted buffer
// a message takes, a buffer the device refused goes back to free, and a resize can be checked
// before the device queue is grown.
#include <gtest/gtest.h>

#include <vector>

#include "srq/ep_recv_queue.h"
#include "srq/receive_source.h"
#include "srq/srq_pool.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Cookie;
using testing::MakeWindow;
using testing::MakePool;
using testing::Segment;
using TakeResult = SrqPool::TakeResult;

std::uint32_t PostGettingSlot(SrqPool& pool, std::uint64_t tag) {
  const RecvSegment segment = Segment(tag);
  std::uint32_t slot = 0xFFFFFFFF;
  EXPECT_TRUE(pool.Post(Cookie(tag), {&segment, 1}, &slot).ok());
  return slot;
}

TEST(SrqDeviceTake, TakePostedTakesTheBufferTheDeviceChoseNotTheOldest) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool);
  const std::uint32_t first = PostGettingSlot(*pool, 1);
  const std::uint32_t second = PostGettingSlot(*pool, 2);
  RecvBuffer buffer{};
  ASSERT_EQ(pool->TakePosted(*ep, 1, second, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 2u);
  EXPECT_EQ(buffer.slot, second);
  EXPECT_EQ(pool->Query().available_dto_count, 1u);
  // The other buffer is still on the SRQ and is the next a software Take would get.
  ASSERT_EQ(pool->Take(*ep, 2, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.slot, first);
}

// The pool's step behind core's fused device path: the completion comes straight back when no
// earlier MSN of the EP is open, and waits for it otherwise.
TEST(SrqDeviceTake, CompletePostedAndPopHandsBackOnlyTheNextCompletionInMsnOrder) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool);
  const std::uint32_t first = PostGettingSlot(*pool, 1);
  const std::uint32_t second = PostGettingSlot(*pool, 2);
  const std::uint32_t third = PostGettingSlot(*pool, 3);
  RecvBuffer buffer{};
  ASSERT_EQ(pool->TakePosted(*ep, 1, first, buffer), TakeResult::kTaken);  // MSN 1 open
  RecvCompletion done{};
  bool popped = true;
  ASSERT_EQ(pool->CompletePostedAndPop(*ep, 2, second, 1 << 20, DAT_DTO_SUCCESS, {}, done, popped), TakeResult::kTaken);
  EXPECT_FALSE(popped) << "MSN 1 comes first";
  EXPECT_EQ(pool->CompletePostedAndPop(*ep, 3, second, 1, DAT_DTO_SUCCESS, {}, done, popped), TakeResult::kRefused)
      << "held already";
  EXPECT_FALSE(popped);
  ASSERT_TRUE(pool->Place(*ep, 1, 5, DAT_DTO_SUCCESS).ok());
  ASSERT_TRUE(pool->PopCompletion(*ep, done));
  EXPECT_EQ(done.msn, 1u);
  ASSERT_TRUE(pool->PopCompletion(*ep, done));
  EXPECT_EQ(done.msn, 2u);
  EXPECT_EQ(done.slot, second);
  EXPECT_EQ(done.transferred_length, 100u) << "never more than the buffer";
  ASSERT_EQ(pool->CompletePostedAndPop(*ep, 3, third, 9, DAT_DTO_SUCCESS, {}, done, popped), TakeResult::kTaken);
  ASSERT_TRUE(popped) << "nothing earlier is open";
  EXPECT_EQ(done.msn, 3u);
  EXPECT_EQ(done.cookie.as_64, 3u);
  EXPECT_EQ(done.transferred_length, 9u);
  EXPECT_FALSE(pool->PopCompletion(*ep, done)) << "handed out once";
}

TEST(SrqDeviceTake, TakePostedRefusesASlotNotOnTheSrq) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool);
  const std::uint32_t slot = PostGettingSlot(*pool, 1);
  RecvBuffer buffer{};
  ASSERT_EQ(pool->TakePosted(*ep, 1, slot, buffer), TakeResult::kTaken);
  EXPECT_EQ(pool->TakePosted(*ep, 2, slot, buffer), TakeResult::kRefused);  // held already
  EXPECT_EQ(pool->TakePosted(*ep, 2, 7, buffer), TakeResult::kRefused);     // free slot
  EXPECT_EQ(pool->TakePosted(*ep, 2, 1000, buffer), TakeResult::kRefused);  // no such slot
}

TEST(SrqDeviceTake, WithdrawnBufferIsNoLongerOutstanding) {
  auto pool = MakePool(2);
  const std::uint32_t first = PostGettingSlot(*pool, 1);
  const std::uint32_t second = PostGettingSlot(*pool, 2);
  ASSERT_TRUE(pool->Withdraw(first).ok());
  EXPECT_EQ(pool->Query().outstanding_dto_count, 1u);
  EXPECT_EQ(pool->Withdraw(first), Status(Code::kInvalidParameter));
  // The survivor keeps its place: it is the oldest posted.
  auto ep = MakeWindow(*pool);
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.slot, second);
}

TEST(SrqDeviceTake, CheckResizeAppliesTheResizeRulesWithoutResizing) {
  auto pool = MakePool(4);
  for (std::uint64_t tag = 1; tag <= 3; ++tag) PostGettingSlot(*pool, tag);
  EXPECT_EQ(pool->CheckResize(2), Status(Code::kInvalidState, Detail::kSrqInUse));
  ASSERT_TRUE(pool->SetLowWatermark(0).ok());
  EXPECT_TRUE(pool->CheckResize(16).ok());
  EXPECT_EQ(pool->CheckResize(0), Status(Code::kInvalidParameter, Detail::kParamSrqMaxRecvDto));
  EXPECT_EQ(pool->Query().max_recv_dtos, 4u);
}

ReceiveSource::Posted PostOwn(EpRecvQueue& queue, std::uint64_t tag) {
  const RecvSegment segment = Segment(tag);
  ReceiveSource::Posted posted;
  EXPECT_TRUE(queue.Post(Cookie(tag), {&segment, 1}, DAT_COMPLETION_DEFAULT_FLAG, posted).ok());
  return posted;
}

TEST(EpRecvQueueDevice, WithdrawTakesBackOnlyTheNewestPostedBuffer) {
  std::unique_ptr<EpRecvQueue> queue;
  ASSERT_TRUE(EpRecvQueue::Create(4, 1, queue).ok());
  queue->Withdraw();  // nothing posted: nothing happens
  EXPECT_EQ(PostOwn(*queue, 1).recv_id, 1u);
  EXPECT_EQ(PostOwn(*queue, 2).recv_id, 2u);
  queue->Withdraw();
  EXPECT_EQ(queue->held(), 1u);
  EXPECT_EQ(PostOwn(*queue, 3).recv_id, 2u) << "the withdrawn buffer's recv_id is reused";
  queue->Withdraw();
  ASSERT_TRUE(queue->BeginConnection().ok());
  RecvBuffer buffer{};
  std::uint32_t msn = 0;
  ASSERT_EQ(queue->TakeDeviceChosen(1, msn, buffer), ReceiveSource::TakeResult::kTaken);
  EXPECT_EQ(msn, 1u);
  queue->Withdraw();  // taken: the transport has it
  EXPECT_EQ(queue->held(), 1u);
}

TEST(EpRecvQueueDevice, DeviceCompletionsNameMessagesByPostingNumberFromTheConnectionStart) {
  std::unique_ptr<EpRecvQueue> queue;
  ASSERT_TRUE(EpRecvQueue::Create(8, 1, queue).ok());
  for (std::uint64_t tag = 1; tag <= 3; ++tag) PostOwn(*queue, tag);
  // The first connection completes two of them, then ends: the third is flushed.
  ASSERT_TRUE(queue->BeginConnection().ok());
  RecvBuffer buffer{};
  std::uint32_t msn = 0;
  ASSERT_EQ(queue->TakeDeviceChosen(1, msn, buffer), ReceiveSource::TakeResult::kTaken);
  ASSERT_TRUE(queue->Place(msn, 0, DAT_DTO_SUCCESS, {}).ok());
  ASSERT_EQ(queue->TakeDeviceChosen(2, msn, buffer), ReceiveSource::TakeResult::kTaken);
  EXPECT_EQ(msn, 2u);
  EXPECT_EQ(buffer.cookie.as_64, 2u);
  ASSERT_TRUE(queue->Place(msn, 0, DAT_DTO_SUCCESS, {}).ok());
  queue->Close();
  RecvCompletion completion{};
  int popped = 0;
  while (queue->PopCompletion(completion)) ++popped;
  EXPECT_EQ(popped, 3);
  // The next connection's first message is the next buffer posted, recv_id 5 after 4 is posted
  // before it begins.
  PostOwn(*queue, 4);
  PostOwn(*queue, 5);
  ASSERT_TRUE(queue->BeginConnection().ok());
  EXPECT_EQ(queue->TakeDeviceChosen(5, msn, buffer), ReceiveSource::TakeResult::kTaken);
  EXPECT_EQ(msn, 2u) << "recv_id 5 is this connection's second message";
  EXPECT_EQ(buffer.cookie.as_64, 5u);
  EXPECT_EQ(queue->TakeDeviceChosen(9, msn, buffer), ReceiveSource::TakeResult::kRefused)
      << "a recv_id never posted names no buffer";
}

// The fused step every device receive takes (Ep::OnDeviceRecvDone): take and place under one
// lock, the length clamped to the buffer; a refusal changes nothing.
TEST(EpRecvQueueDevice, CompleteDeviceChosenTakesAndPlacesInOneStep) {
  std::unique_ptr<EpRecvQueue> queue;
  ASSERT_TRUE(EpRecvQueue::Create(8, 1, queue).ok());
  for (std::uint64_t tag = 1; tag <= 3; ++tag) PostOwn(*queue, tag);  // 100 bytes each
  ASSERT_TRUE(queue->BeginConnection().ok());
  std::uint32_t msn = 0;
  RecvNotes notes{};
  notes.solicited = true;
  ASSERT_EQ(queue->CompleteDeviceChosen(1, 40, DAT_DTO_SUCCESS, notes, msn), ReceiveSource::TakeResult::kTaken);
  EXPECT_EQ(msn, 1u);
  EXPECT_EQ(queue->CompleteDeviceChosen(9, 1, DAT_DTO_SUCCESS, {}, msn), ReceiveSource::TakeResult::kRefused)
      << "a recv_id never posted names no buffer";
  EXPECT_EQ(queue->CompleteDeviceChosen(1, 1, DAT_DTO_SUCCESS, {}, msn), ReceiveSource::TakeResult::kRefused)
      << "placed already";
  ASSERT_EQ(queue->CompleteDeviceChosen(2, 1 << 20, DAT_DTO_ERR_LOCAL_LENGTH, {}, msn),
            ReceiveSource::TakeResult::kTaken);
  EXPECT_EQ(msn, 2u);
  EXPECT_TRUE(testing::PopsCompletion(*queue, 1, 40, DAT_DTO_SUCCESS, true));
  EXPECT_TRUE(testing::PopsCompletion(*queue, 2, 100, DAT_DTO_ERR_LOCAL_LENGTH, false)) << "never more than the buffer";
  RecvCompletion done{};
  EXPECT_FALSE(queue->PopCompletion(done)) << "the third is not completed";
  queue->Close();
  EXPECT_EQ(queue->CompleteDeviceChosen(3, 1, DAT_DTO_SUCCESS, {}, msn), ReceiveSource::TakeResult::kRefused)
      << "a closed queue takes no buffer";
  ASSERT_TRUE(queue->PopCompletion(done));
  EXPECT_EQ(done.status, DAT_DTO_ERR_FLUSHED);
}

// What core's fused device path asks of the queue (Ep::DeliverDeviceRecv): the completion just
// made comes straight back when it is the next to generate, in MSN order otherwise, under the
// one lock; a refusal changes nothing and hands nothing back.
TEST(EpRecvQueueDevice, CompleteDeviceChosenAndPopHandsBackTheNextCompletionOnly) {
  std::unique_ptr<EpRecvQueue> queue;
  ASSERT_TRUE(EpRecvQueue::Create(8, 1, queue).ok());
  for (std::uint64_t tag = 1; tag <= 3; ++tag) PostOwn(*queue, tag);  // 100 bytes each
  ASSERT_TRUE(queue->BeginConnection().ok());
  RecvNotes notes{};
  notes.solicited = true;
  RecvCompletion done{};
  bool popped = true;
  ASSERT_EQ(queue->CompleteDeviceChosenAndPop(1, 40, DAT_DTO_SUCCESS, notes, done, popped),
            ReceiveSource::TakeResult::kTaken);
  ASSERT_TRUE(popped) << "nothing earlier waits: the completion is generated now";
  EXPECT_EQ(done.cookie.as_64, 1u);
  EXPECT_EQ(done.msn, 1u);
  EXPECT_EQ(done.transferred_length, 40u);
  EXPECT_TRUE(done.notes.solicited);
  EXPECT_FALSE(done.more);
  EXPECT_EQ(queue->held(), 2u);
  // Out of posting order (a device never does this; the queue copes): the third is placed and
  // held behind the second.
  ASSERT_EQ(queue->CompleteDeviceChosenAndPop(3, 1 << 20, DAT_DTO_SUCCESS, {}, done, popped),
            ReceiveSource::TakeResult::kTaken);
  EXPECT_FALSE(popped) << "the second message's buffer comes first";
  EXPECT_EQ(queue->CompleteDeviceChosenAndPop(9, 1, DAT_DTO_SUCCESS, {}, done, popped),
            ReceiveSource::TakeResult::kRefused);
  EXPECT_FALSE(popped);
  ASSERT_EQ(queue->CompleteDeviceChosenAndPop(2, 7, DAT_DTO_SUCCESS, {}, done, popped),
            ReceiveSource::TakeResult::kTaken);
  ASSERT_TRUE(popped);
  EXPECT_EQ(done.cookie.as_64, 2u);
  EXPECT_TRUE(done.more) << "the third is ready behind it";
  EXPECT_TRUE(testing::PopsCompletion(*queue, 3, 100, DAT_DTO_SUCCESS, false)) << "never more than the buffer";
  EXPECT_EQ(queue->held(), 0u);
}

}  // namespace
}  // namespace softdat::srq
