// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_srq_create and dat_srq_post_recv rules on the pool, taking buffers, reaping, attaching.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "srq/srq_pool.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Complete;
using testing::FlushEndpoint;
using testing::Cookie;
using testing::MakeWindow;
using testing::MakePool;
using testing::PostTagged;
using testing::Segment;
using TakeResult = SrqPool::TakeResult;

constexpr Status kBadAttributes(Code::kInvalidParameter, Detail::kParamAttributes);
constexpr Status kBadSegments(Code::kInvalidParameter, Detail::kParamNumSegments);
// A caller's mistake inside the provider, not a consumer argument: no parameter is named.
constexpr Status kMisuse(Code::kInvalidParameter);
constexpr Status kSrqFull(Code::kInsufficientResources, Detail::kResourceSrq);

// Takes `msn` on `ep`, completes it in full and returns its slot (the one completion delivered).
std::uint32_t TakeAndComplete(SrqPool& pool, MsnWindow& ep, std::uint32_t msn) {
  RecvBuffer buffer{};
  EXPECT_EQ(pool.Take(ep, msn, buffer), TakeResult::kTaken);
  std::vector<RecvCompletion> out(ep.window());
  std::size_t delivered = 0;
  EXPECT_TRUE(Complete(pool, ep, msn, 0, DAT_DTO_SUCCESS, out, delivered).ok());
  EXPECT_EQ(delivered, 1u);
  return buffer.slot;
}

TEST(SrqCreate, CreateRefusesZeroAndOversizedAttributes) {
  std::unique_ptr<SrqPool> pool;
  EXPECT_EQ(SrqPool::Create(0, 1, nullptr, pool), kBadAttributes);
  EXPECT_EQ(SrqPool::Create(SrqPool::kMaxRecvDtos + 1, 1, nullptr, pool), kBadAttributes);
  EXPECT_EQ(SrqPool::Create(static_cast<std::uint32_t>(-1), 1, nullptr, pool), kBadAttributes);
  EXPECT_EQ(SrqPool::Create(8, SrqPool::kMaxRecvIov + 1, nullptr, pool), kBadAttributes);
  EXPECT_EQ(pool, nullptr);  // output set only on success
}

TEST(SrqCreate, CreateReportsActualValuesAtLeastRequested) {
  std::unique_ptr<SrqPool> pool;
  ASSERT_TRUE(SrqPool::Create(5, 3, nullptr, pool).ok());
  const SrqPool::Snapshot query = pool->Query();
  EXPECT_EQ(query.max_recv_dtos, 8u);  // rounded up to a power of two
  EXPECT_EQ(query.max_recv_iov, 3u);
  EXPECT_EQ(query.low_watermark, 0u);  // DAT_SRQ_LW_DEFAULT
  EXPECT_EQ(query.available_dto_count, 0u);
  EXPECT_EQ(query.outstanding_dto_count, 0u);
  EXPECT_EQ(pool->user_count(), 0u);  // created with no EP using it

  ASSERT_TRUE(SrqPool::Create(SrqPool::kMaxRecvDtos, SrqPool::kMaxRecvIov, nullptr, pool).ok());
  EXPECT_EQ(pool->Query().max_recv_dtos, SrqPool::kMaxRecvDtos);
}

TEST(SrqCreate, CreateWithZeroIovReportsOneSegment) {
  auto pool = MakePool(4, 0);
  EXPECT_EQ(pool->Query().max_recv_iov, 1u);
  const RecvSegment segment = Segment(1);
  EXPECT_TRUE(pool->Post(Cookie(1), {&segment, 1}).ok());
}

TEST(SrqPost, PostRefusesMoreSegmentsThanMaxIov) {
  auto pool = MakePool(8, 2);
  const std::array<RecvSegment, 3> segments{Segment(1), Segment(2), Segment(3)};
  EXPECT_EQ(pool->Post(Cookie(1), segments), kBadSegments);
  EXPECT_TRUE(pool->Post(Cookie(1), std::span(segments).first(2)).ok());
}

TEST(SrqPost, PostRefusedChangesNothing) {
  auto pool = MakePool(2, 1);
  auto ep = MakeWindow(*pool);
  ASSERT_TRUE(PostTagged(*pool, 7).ok());
  const std::array<RecvSegment, 2> too_many{Segment(8), Segment(9)};
  EXPECT_EQ(pool->Post(Cookie(8), too_many), kBadSegments);
  ASSERT_TRUE(PostTagged(*pool, 10).ok());
  EXPECT_EQ(PostTagged(*pool, 11), kSrqFull);
  const SrqPool::Snapshot query = pool->Query();
  EXPECT_EQ(query.available_dto_count, 2u);
  EXPECT_EQ(query.outstanding_dto_count, 2u);
  // Exactly the two accepted buffers come out, intact, and nothing else.
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 7u);
  ASSERT_EQ(buffer.num_segments, 1u);
  EXPECT_EQ(buffer.segments[0].key, 7u);
  ASSERT_EQ(pool->Take(*ep, 2, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 10u);
  EXPECT_EQ(buffer.segments[0].address, Segment(10).address);
  EXPECT_EQ(pool->Take(*ep, 3, buffer), TakeResult::kEmpty);
}

TEST(SrqPost, PostZeroSegmentsForZeroSizeMessage) {
  auto pool = MakePool(4, 2);
  auto ep = MakeWindow(*pool);
  ASSERT_TRUE(pool->Post(Cookie(42), {}).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 42u);
  EXPECT_EQ(buffer.num_segments, 0u);
  EXPECT_EQ(buffer.capacity, 0u);
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  EXPECT_EQ(Complete(*pool, *ep, 1, 1, DAT_DTO_SUCCESS, out, delivered), kMisuse);  // no room
  ASSERT_TRUE(Complete(*pool, *ep, 1, 0, DAT_DTO_SUCCESS, out, delivered).ok());
  ASSERT_EQ(delivered, 1u);
  EXPECT_EQ(out[0].cookie.as_64, 42u);
  EXPECT_EQ(out[0].transferred_length, 0u);
}

TEST(SrqPost, PostCapacityIsTheSumOfSegmentLengths) {
  auto pool = MakePool(4, 3);
  auto ep = MakeWindow(*pool);
  const std::array<RecvSegment, 3> segments{Segment(1, 10), Segment(2, 20), Segment(3, 4000)};
  ASSERT_TRUE(pool->Post(Cookie(1), segments).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.capacity, 4030u);
  ASSERT_EQ(buffer.num_segments, 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(buffer.segments[i].address, segments[i].address);
    EXPECT_EQ(buffer.segments[i].length, segments[i].length);
    EXPECT_EQ(buffer.segments[i].key, segments[i].key);
  }
}

TEST(SrqPost, PostFullQueueIsInsufficientResources) {
  auto pool = MakePool(4, 1);
  auto ep = MakeWindow(*pool);
  for (std::uint64_t tag = 1; tag <= 4; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  EXPECT_EQ(PostTagged(*pool, 5), kSrqFull);
  // A buffer held by an EP is still outstanding.
  RecvBuffer held{};
  ASSERT_EQ(pool->Take(*ep, 1, held), TakeResult::kTaken);
  EXPECT_EQ(PostTagged(*pool, 5), kSrqFull);
  // So is one whose completion was generated but not reaped.
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  ASSERT_TRUE(Complete(*pool, *ep, 1, 0, DAT_DTO_SUCCESS, out, delivered).ok());
  ASSERT_EQ(delivered, 1u);
  EXPECT_EQ(PostTagged(*pool, 5), kSrqFull);
  EXPECT_EQ(pool->Query().outstanding_dto_count, 4u);
  EXPECT_EQ(pool->Query().available_dto_count, 3u);
  // Reaping frees it.
  ASSERT_TRUE(pool->Reaped(out[0].slot).ok());
  EXPECT_TRUE(PostTagged(*pool, 5).ok());
  EXPECT_EQ(PostTagged(*pool, 6), kSrqFull);
}

TEST(SrqTake, TakeFromEmptyReturnsEmpty) {
  auto pool = MakePool(4);
  auto ep = MakeWindow(*pool);
  RecvBuffer buffer{};
  buffer.slot = 12345;
  EXPECT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kEmpty);
  EXPECT_EQ(buffer.slot, 12345u);  // output untouched
  DAT_COUNT n = -1;
  DAT_COUNT span = -1;
  ASSERT_TRUE(pool->RecvQuery(*ep, &n, &span).ok());
  EXPECT_EQ(n, 0);
  EXPECT_EQ(span, 0);
  // Nothing was lost: the waiting message takes the next posted buffer under the same MSN.
  ASSERT_TRUE(PostTagged(*pool, 3).ok());
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 3u);
}

TEST(SrqTake, TakeIsFirstPostedFirstTaken) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool);
  for (std::uint64_t tag = 1; tag <= 5; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  for (std::uint32_t msn = 1; msn <= 5; ++msn) {
    RecvBuffer buffer{};
    ASSERT_EQ(pool->Take(*ep, msn, buffer), TakeResult::kTaken);
    EXPECT_EQ(buffer.cookie.as_64, msn);
  }
}

TEST(SrqTake, TakeAgainForSameMsnReturnsTheSameBuffer) {
  auto pool = MakePool(4);
  auto ep = MakeWindow(*pool);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  RecvBuffer first{};
  RecvBuffer again{};
  ASSERT_EQ(pool->Take(*ep, 1, first), TakeResult::kTaken);
  ASSERT_EQ(pool->Take(*ep, 1, again), TakeResult::kTaken);
  EXPECT_EQ(again.slot, first.slot);
  EXPECT_EQ(again.cookie.as_64, 1u);
  EXPECT_EQ(pool->Query().available_dto_count, 1u);
}

// Behind the window, delivered or placed: refused. Ahead of it: the message waits for the
// completions before it to be generated (kWindowFull), as for a buffer.
TEST(SrqTake, TakeRefusedForDeliveredOrPlacedMsnAndWaitsAheadOfTheWindow) {
  auto pool = MakePool(16);
  auto ep = MakeWindow(*pool, 4, 1);
  for (std::uint64_t tag = 1; tag <= 8; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  RecvBuffer buffer{};
  EXPECT_EQ(pool->Take(*ep, 0, buffer), TakeResult::kRefused);  // before the first MSN
  EXPECT_EQ(pool->Take(*ep, 5, buffer), TakeResult::kWindowFull);  // window is 1..4
  TakeAndComplete(*pool, *ep, 1);
  EXPECT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kRefused);  // already delivered
  ASSERT_EQ(pool->Take(*ep, 3, buffer), TakeResult::kTaken);
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  ASSERT_TRUE(Complete(*pool, *ep, 3, 0, DAT_DTO_SUCCESS, out, delivered).ok());
  EXPECT_EQ(delivered, 0u);
  EXPECT_EQ(pool->Take(*ep, 3, buffer), TakeResult::kRefused);  // placed, awaiting MSN 2
  EXPECT_EQ(pool->Take(*ep, 5, buffer), TakeResult::kTaken);    // window moved to 2..5
  EXPECT_EQ(pool->Take(*ep, 6, buffer), TakeResult::kWindowFull);
  EXPECT_EQ(pool->Query().available_dto_count, 5u);  // refusals and waits took nothing
}

TEST(SrqTake, TakeRefusedForAccountNotAttachedHere) {
  auto pool = MakePool(4);
  auto other = MakePool(4);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  std::unique_ptr<MsnWindow> ep;
  ASSERT_TRUE(MsnWindow::Create(8, 1, ep).ok());
  RecvBuffer buffer{};
  EXPECT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kRefused);
  ASSERT_TRUE(other->Attach(*ep).ok());
  EXPECT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kRefused);
  EXPECT_EQ(pool->Query().available_dto_count, 1u);
}

TEST(SrqReap, ReapedRefusesSlotWithoutGeneratedCompletion) {
  auto pool = MakePool(4);
  auto ep = MakeWindow(*pool);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  RecvBuffer held{};
  ASSERT_EQ(pool->Take(*ep, 1, held), TakeResult::kTaken);
  EXPECT_EQ(pool->Reaped(held.slot), kMisuse);  // held, not completed
  EXPECT_EQ(pool->Reaped(4), kMisuse);          // no such slot
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  ASSERT_TRUE(Complete(*pool, *ep, 1, 0, DAT_DTO_SUCCESS, out, delivered).ok());
  EXPECT_TRUE(pool->Reaped(held.slot).ok());
  EXPECT_EQ(pool->Reaped(held.slot), kMisuse);  // twice
  const SrqPool::Snapshot query = pool->Query();
  EXPECT_EQ(query.outstanding_dto_count, 1u);  // the posted one only
  EXPECT_EQ(query.available_dto_count, 1u);
}

TEST(SrqAttach, AWindowAttachesToOnePoolAtATime) {
  auto pool = MakePool(4);
  std::unique_ptr<MsnWindow> a;
  std::unique_ptr<MsnWindow> b;
  ASSERT_TRUE(MsnWindow::Create(4, 1, a).ok());
  ASSERT_TRUE(MsnWindow::Create(4, 1, b).ok());
  ASSERT_TRUE(pool->Attach(*a).ok());
  ASSERT_TRUE(pool->Attach(*b).ok());
  EXPECT_EQ(pool->Attach(*a), kMisuse);  // already attached
  ASSERT_TRUE(pool->Detach(*a).ok());
  EXPECT_EQ(pool->Detach(*a), kMisuse);  // not attached any more
  ASSERT_TRUE(pool->Detach(*b).ok());
}

TEST(SrqAttach, UsersAreCountedForSrqFree) {
  auto pool = MakePool(4);
  ASSERT_TRUE(pool->AddUser().ok());
  ASSERT_TRUE(pool->AddUser().ok());
  EXPECT_EQ(pool->user_count(), 2u);
  pool->RemoveUser();
  EXPECT_EQ(pool->user_count(), 1u);
  pool->RemoveUser();
  EXPECT_EQ(pool->user_count(), 0u);
}

TEST(SrqAttach, DetachRefusedWhileEndpointHoldsBuffers) {
  auto pool = MakePool(4);
  auto ep = MakeWindow(*pool);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  EXPECT_EQ(pool->Detach(*ep), Status(Code::kInvalidState, Detail::kEpCompletionPending));
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  ASSERT_TRUE(FlushEndpoint(*pool, *ep, out, delivered).ok());
  EXPECT_TRUE(pool->Detach(*ep).ok());
}

TEST(SrqMsnWindow, WindowMustBeAPowerOfTwoInRange) {
  std::unique_ptr<MsnWindow> account;
  EXPECT_EQ(MsnWindow::Create(0, 1, account), kMisuse);
  EXPECT_EQ(MsnWindow::Create(12, 1, account), kMisuse);
  EXPECT_EQ(MsnWindow::Create(MsnWindow::kMaxWindow * 2, 1, account),
            kMisuse);
  EXPECT_EQ(account, nullptr);
  ASSERT_TRUE(MsnWindow::Create(1, 1, account).ok());
  EXPECT_EQ(account->window(), 1u);
}

}  // namespace
}  // namespace softdat::srq
