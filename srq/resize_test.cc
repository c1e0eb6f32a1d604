// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_srq_resize: never loses a buffer; refuses sizes below what is outstanding or the watermark.
#include <gtest/gtest.h>

#include <vector>

#include "srq/srq_pool.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Complete;
using testing::FlushEndpoint;
using testing::MakeWindow;
using testing::MakePool;
using testing::PostTagged;
using testing::Segment;
using TakeResult = SrqPool::TakeResult;

constexpr Status kInUse(Code::kInvalidState, Detail::kSrqInUse);
constexpr Status kSrqFull(Code::kInsufficientResources, Detail::kResourceSrq);

TEST(SrqResize, ResizeRefusesZeroAndAboveLimit) {
  auto pool = MakePool(8);
  EXPECT_EQ(pool->Resize(0), Status(Code::kInvalidParameter, Detail::kParamSrqMaxRecvDto));
  EXPECT_EQ(pool->Resize(SrqPool::kMaxRecvDtos + 1),
            Status(Code::kInvalidParameter, Detail::kParamSrqMaxRecvDto));
  EXPECT_EQ(pool->Query().max_recv_dtos, 8u);
}

TEST(SrqResize, ResizeBelowOutstandingIsInvalidState) {
  auto pool = MakePool(8, 1);
  auto ep = MakeWindow(*pool);
  for (std::uint64_t tag = 1; tag <= 5; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  // Outstanding 5: 2 on the SRQ, 1 held by the EP, 2 completed but not reaped.
  RecvBuffer buffer{};
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  for (std::uint32_t msn = 1; msn <= 3; ++msn)
    ASSERT_EQ(pool->Take(*ep, msn, buffer), TakeResult::kTaken);
  ASSERT_TRUE(Complete(*pool, *ep, 1, 0, DAT_DTO_SUCCESS, out, delivered).ok());
  const std::uint32_t first_slot = out[0].slot;
  ASSERT_TRUE(Complete(*pool, *ep, 2, 0, DAT_DTO_SUCCESS, out, delivered).ok());
  EXPECT_EQ(pool->Resize(4), kInUse);
  EXPECT_EQ(pool->Query().max_recv_dtos, 8u);  // unchanged
  EXPECT_EQ(pool->Query().outstanding_dto_count, 5u);
  // Reaping one completion brings outstanding to 4: now 4 is allowed.
  ASSERT_TRUE(pool->Reaped(first_slot).ok());
  EXPECT_EQ(pool->Resize(3), kInUse);
  ASSERT_TRUE(pool->Resize(4).ok());
  EXPECT_EQ(pool->Query().max_recv_dtos, 4u);
  EXPECT_EQ(PostTagged(*pool, 9), kSrqFull);  // the new size is enforced
}

TEST(SrqResize, ResizeBelowLowWatermarkIsInvalidState) {
  auto pool = MakePool(16, 1);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_TRUE(pool->SetLowWatermark(10).ok());
  EXPECT_EQ(pool->Resize(9), kInUse);
  EXPECT_EQ(pool->Query().max_recv_dtos, 16u);
  ASSERT_TRUE(pool->Resize(10).ok());
  EXPECT_EQ(pool->Query().max_recv_dtos, 16u);  // 10 rounds up to 16
  ASSERT_TRUE(pool->SetLowWatermark(DAT_SRQ_LW_DEFAULT).ok());
  ASSERT_TRUE(pool->Resize(2).ok());
  EXPECT_EQ(pool->Query().max_recv_dtos, 2u);
}

TEST(SrqResize, ResizeGrowKeepsEveryBuffer) {
  auto pool = MakePool(4, 2);
  auto ep = MakeWindow(*pool, 64);
  for (std::uint64_t tag = 1; tag <= 4; ++tag) ASSERT_TRUE(PostTagged(*pool, tag, 64).ok());
  RecvBuffer held{};
  ASSERT_EQ(pool->Take(*ep, 1, held), TakeResult::kTaken);
  const RecvSegment* held_segments = held.segments;

  ASSERT_TRUE(pool->Resize(40).ok());
  SrqPool::Snapshot query = pool->Query();
  EXPECT_EQ(query.max_recv_dtos, 64u);
  EXPECT_EQ(query.available_dto_count, 3u);
  EXPECT_EQ(query.outstanding_dto_count, 4u);
  // The held buffer's segments did not move (ASan would flag a read of freed storage).
  EXPECT_EQ(held_segments[0].address, Segment(1).address);
  EXPECT_EQ(held_segments[0].length, 64u);
  // The room is there: 60 more posts fit, the 61st does not.
  for (std::uint64_t tag = 5; tag <= 64; ++tag) ASSERT_TRUE(PostTagged(*pool, tag, 64).ok());
  EXPECT_EQ(PostTagged(*pool, 65), kSrqFull);
  // Every buffer comes out intact and in posting order, the old ones first.
  for (std::uint32_t msn = 2; msn <= 64; ++msn) {
    RecvBuffer buffer{};
    ASSERT_EQ(pool->Take(*ep, msn, buffer), TakeResult::kTaken);
    EXPECT_EQ(buffer.cookie.as_64, msn);
    ASSERT_EQ(buffer.num_segments, 1u);
    EXPECT_EQ(buffer.segments[0].address, Segment(msn).address);
    EXPECT_EQ(buffer.capacity, 64u);
  }
  query = pool->Query();
  EXPECT_EQ(query.available_dto_count, 0u);
  EXPECT_EQ(query.outstanding_dto_count, 64u);
  // The buffer held across the resize completes like the others, first in MSN order.
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  for (std::uint32_t msn = 64; msn >= 2; --msn) {
    ASSERT_TRUE(Complete(*pool, *ep, msn, 64, DAT_DTO_SUCCESS, out, delivered).ok());
    ASSERT_EQ(delivered, 0u);
  }
  ASSERT_TRUE(Complete(*pool, *ep, 1, 64, DAT_DTO_SUCCESS, out, delivered).ok());
  ASSERT_EQ(delivered, 64u);
  for (std::uint32_t i = 0; i < 64; ++i) {
    EXPECT_EQ(out[i].msn, i + 1);
    EXPECT_EQ(out[i].cookie.as_64, i + 1);
  }
}

TEST(SrqResize, ResizeShrinkKeepsEveryBuffer) {
  auto pool = MakePool(16, 1);
  auto ep = MakeWindow(*pool);
  for (std::uint64_t tag = 1; tag <= 3; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  RecvBuffer held{};
  ASSERT_EQ(pool->Take(*ep, 1, held), TakeResult::kTaken);
  ASSERT_TRUE(pool->Resize(3).ok());
  SrqPool::Snapshot query = pool->Query();
  EXPECT_EQ(query.max_recv_dtos, 4u);
  EXPECT_EQ(query.available_dto_count, 2u);
  EXPECT_EQ(query.outstanding_dto_count, 3u);
  EXPECT_EQ(held.segments[0].address, testing::Segment(1).address);
  ASSERT_TRUE(PostTagged(*pool, 4).ok());
  EXPECT_EQ(PostTagged(*pool, 5), kSrqFull);
  for (std::uint32_t msn = 2; msn <= 4; ++msn) {
    RecvBuffer buffer{};
    ASSERT_EQ(pool->Take(*ep, msn, buffer), TakeResult::kTaken);
    EXPECT_EQ(buffer.cookie.as_64, msn);
    EXPECT_EQ(buffer.segments[0].address, Segment(msn).address);
  }
  // Growing back within memory already there allocates nothing and keeps the held buffers.
  ASSERT_TRUE(pool->Resize(16).ok());
  EXPECT_EQ(pool->Query().max_recv_dtos, 16u);
  EXPECT_EQ(pool->Query().outstanding_dto_count, 4u);
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  for (std::uint32_t msn = 4; msn >= 1; --msn)
    ASSERT_TRUE(Complete(*pool, *ep, msn, 0, DAT_DTO_SUCCESS, out, delivered).ok());
  ASSERT_EQ(delivered, 4u);
  for (std::uint32_t i = 0; i < 4; ++i) EXPECT_EQ(out[i].cookie.as_64, i + 1);
}

TEST(SrqResize, ResizeGrowRepeatedlyKeepsPostingOrder) {
  auto pool = MakePool(2, 1);
  auto ep = MakeWindow(*pool, 1024);
  std::uint64_t posted = 0;
  std::uint32_t next_msn = 1;
  // Take a buffer now and then so the posted ring wraps before each grow.
  for (std::uint32_t size = 4; size <= 512; size *= 2) {
    while (PostTagged(*pool, posted + 1).ok()) ++posted;
    RecvBuffer buffer{};
    ASSERT_EQ(pool->Take(*ep, next_msn, buffer), TakeResult::kTaken);
    EXPECT_EQ(buffer.cookie.as_64, next_msn);
    ++next_msn;
    ASSERT_TRUE(pool->Resize(size).ok());
  }
  for (; next_msn <= posted; ++next_msn) {
    RecvBuffer buffer{};
    ASSERT_EQ(pool->Take(*ep, next_msn, buffer), TakeResult::kTaken);
    EXPECT_EQ(buffer.cookie.as_64, next_msn);
  }
  EXPECT_EQ(pool->Query().available_dto_count, 0u);
}

}  // namespace
}  // namespace softdat::srq
