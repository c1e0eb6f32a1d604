// The pool steps of the device receive model: the device, not the pool, picks which posted buffer
// a message takes, a buffer the device refused goes back to free, and a resize can be checked
// before the device queue is grown.
#include <gtest/gtest.h>

#include <vector>

#include "srq/ep_recv_queue.h"
#include "srq/srq_pool.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Cookie;
using testing::MakeAccount;
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
  auto ep = MakeAccount(*pool);
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

TEST(SrqDeviceTake, TakePostedRefusesASlotNotOnTheSrq) {
  auto pool = MakePool(8);
  auto ep = MakeAccount(*pool);
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
  EXPECT_EQ(pool->Withdraw(first), Status(Code::kInvalidParameter, Detail::kArg1));
  // The survivor keeps its place: it is the oldest posted.
  auto ep = MakeAccount(*pool);
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
  EXPECT_EQ(pool->CheckResize(0), Status(Code::kInvalidParameter, Detail::kArg2));
  EXPECT_EQ(pool->Query().max_recv_dtos, 4u);
}

TEST(EpRecvQueueDevice, WithdrawTakesBackOnlyTheNewestPostedBuffer) {
  std::unique_ptr<EpRecvQueue> queue;
  ASSERT_TRUE(EpRecvQueue::Create(4, 1, queue).ok());
  EXPECT_FALSE(queue->Withdraw());
  const RecvSegment segment = Segment(1);
  ASSERT_TRUE(queue->Post(Cookie(1), {&segment, 1}).ok());
  ASSERT_TRUE(queue->Post(Cookie(2), {&segment, 1}).ok());
  ASSERT_TRUE(queue->Withdraw());
  EXPECT_EQ(queue->count(), 1u);
  RecvBuffer buffer{};
  ASSERT_EQ(queue->Take(1, buffer), EpRecvQueue::TakeResult::kTaken);
  EXPECT_FALSE(queue->Withdraw());  // taken: the transport has it
  EXPECT_EQ(queue->count(), 1u);
}

}  // namespace
}  // namespace softdat::srq
