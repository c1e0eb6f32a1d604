// An EP's account on a shared SRQ (SrqAccount): window sizing per connection, the waiting of an
// EP that found no buffer, device completions mapped to MSNs, what the account holds and returns
// when it goes away.
#include "srq/srq_account.h"

#include <gtest/gtest.h>

#include <memory>

#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Cookie;
using testing::MakePool;
using testing::PostTagged;
using TakeResult = ReceiveSource::TakeResult;

class CountingWaiter final : public BufferWaiter {
 public:
  void OnBuffersPosted() override { ++calls; }
  int calls = 0;
};

std::unique_ptr<SrqAccount> MakeAccount(SrqPool& pool, BufferWaiter* waiter = nullptr, bool device = false) {
  std::unique_ptr<SrqAccount> account;
  EXPECT_TRUE(SrqAccount::Create(pool, waiter, device, account).ok());
  return account;
}

TEST(SrqAccount, IsAUserOfItsSrqForItsWholeLife) {
  auto pool = MakePool(8);
  {
    auto account = MakeAccount(*pool);
    EXPECT_EQ(pool->user_count(), 1u);
  }
  EXPECT_EQ(pool->user_count(), 0u);
}

TEST(SrqAccount, RefusesOwnPosts) {
  auto pool = MakePool(8);
  auto account = MakeAccount(*pool);
  EXPECT_EQ(account->CanPost(), Status(Code::kInvalidState, Detail::kEpNotReady));
  ReceiveSource::Posted posted;
  EXPECT_EQ(account->Post(Cookie(1), {}, DAT_COMPLETION_DEFAULT_FLAG, posted).code(), Code::kInvalidState);
}

TEST(SrqAccount, WindowIsSizedFromTheSrqWithinBounds) {
  EXPECT_EQ(SrqAccount::WindowFor(1), 16u);
  EXPECT_EQ(SrqAccount::WindowFor(100), 128u);
  EXPECT_EQ(SrqAccount::WindowFor(1u << 20), 4096u);
}

TEST(SrqAccount, TakesNothingBeforeAConnectionBegins) {
  auto pool = MakePool(8);
  auto account = MakeAccount(*pool);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  RecvBuffer buffer{};
  EXPECT_EQ(account->TakeForMessage(1, buffer), TakeResult::kRefused);
  ASSERT_TRUE(account->BeginConnection().ok());
  EXPECT_EQ(account->TakeForMessage(1, buffer), TakeResult::kTaken);
  EXPECT_EQ(account->held(), 1u);
}

TEST(SrqAccount, AWaitingEndpointHearsOfTheNextPostOnce) {
  auto pool = MakePool(8);
  CountingWaiter waiter;
  auto account = MakeAccount(*pool, &waiter);
  ASSERT_TRUE(account->BeginConnection().ok());
  RecvBuffer buffer{};
  EXPECT_EQ(account->TakeForMessage(1, buffer), TakeResult::kNotReady);
  EXPECT_EQ(account->TakeForMessage(1, buffer), TakeResult::kNotReady);  // asks again: one wait
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  EXPECT_EQ(waiter.calls, 1);
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  EXPECT_EQ(waiter.calls, 1) << "no longer waiting";
  EXPECT_EQ(account->TakeForMessage(1, buffer), TakeResult::kTaken);
}

TEST(SrqAccount, NoWakeUpAfterStopWaking) {
  auto pool = MakePool(8);
  CountingWaiter waiter;
  auto account = MakeAccount(*pool, &waiter);
  ASSERT_TRUE(account->BeginConnection().ok());
  RecvBuffer buffer{};
  EXPECT_EQ(account->TakeForMessage(1, buffer), TakeResult::kNotReady);
  account->StopWaking();
  EXPECT_EQ(account->TakeForMessage(1, buffer), TakeResult::kNotReady);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  EXPECT_EQ(waiter.calls, 0);
}

TEST(SrqAccount, EveryWaitingEndpointIsWokenByOnePost) {
  auto pool = MakePool(8);
  CountingWaiter first_waiter;
  CountingWaiter second_waiter;
  auto first = MakeAccount(*pool, &first_waiter);
  auto second = MakeAccount(*pool, &second_waiter);
  ASSERT_TRUE(first->BeginConnection().ok());
  ASSERT_TRUE(second->BeginConnection().ok());
  RecvBuffer buffer{};
  EXPECT_EQ(first->TakeForMessage(1, buffer), TakeResult::kNotReady);
  EXPECT_EQ(second->TakeForMessage(1, buffer), TakeResult::kNotReady);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  EXPECT_EQ(first_waiter.calls, 1);
  EXPECT_EQ(second_waiter.calls, 1);
}

TEST(SrqAccount, ANewConnectionNeedsThePreviousFlushDelivered) {
  auto pool = MakePool(8);
  auto account = MakeAccount(*pool);
  ASSERT_TRUE(account->BeginConnection().ok());
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(account->TakeForMessage(1, buffer), TakeResult::kTaken);
  account->Close();
  EXPECT_EQ(account->BeginConnection(), Status(Code::kInvalidState, Detail::kEpCompletionPending));
  RecvCompletion completion{};
  ASSERT_TRUE(account->PopCompletion(completion));
  EXPECT_EQ(completion.status, DAT_DTO_ERR_FLUSHED);
  EXPECT_TRUE(completion.from_srq);
  ASSERT_TRUE(pool->Reaped(completion.slot).ok());
  ASSERT_TRUE(account->BeginConnection().ok());
  EXPECT_EQ(account->held(), 0u);
}

TEST(SrqAccount, GoingAwayReturnsWhatItStillHolds) {
  auto pool = MakePool(8);
  {
    auto account = MakeAccount(*pool);
    ASSERT_TRUE(account->BeginConnection().ok());
    ASSERT_TRUE(PostTagged(*pool, 1).ok());
    ASSERT_TRUE(PostTagged(*pool, 2).ok());
    RecvBuffer buffer{};
    ASSERT_EQ(account->TakeForMessage(1, buffer), TakeResult::kTaken);
    EXPECT_EQ(pool->Query().outstanding_dto_count, 2u);
  }
  EXPECT_EQ(pool->Query().outstanding_dto_count, 1u) << "only the buffer still on the SRQ";
}

TEST(SrqAccountDevice, DeviceCompletionsBecomeMsnsInCompletionOrder) {
  auto pool = MakePool(8);
  auto account = MakeAccount(*pool, nullptr, /*device=*/true);
  std::uint32_t slots[3];
  for (std::uint32_t i = 0; i < 3; ++i) {
    const RecvSegment segment = testing::Segment(i + 1);
    ASSERT_TRUE(pool->Post(Cookie(i + 1), {&segment, 1}, &slots[i]).ok());
  }
  ASSERT_TRUE(account->BeginConnection().ok());
  RecvBuffer buffer{};
  std::uint32_t msn = 0;
  ASSERT_EQ(account->TakeDeviceChosen(slots[2], msn, buffer), TakeResult::kTaken);
  EXPECT_EQ(msn, 1u);
  EXPECT_EQ(buffer.cookie.as_64, 3u);
  EXPECT_EQ(account->TakeDeviceChosen(999, msn, buffer), TakeResult::kRefused);
  ASSERT_EQ(account->TakeDeviceChosen(slots[0], msn, buffer), TakeResult::kTaken);
  EXPECT_EQ(msn, 2u) << "a stray completion opened no gap";
}

TEST(SrqAccountDevice, HoldingsAreUnknownWhileTheDeviceHasTheConnection) {
  auto pool = MakePool(8);
  auto account = MakeAccount(*pool, nullptr, /*device=*/true);
  DAT_COUNT n = -5;
  DAT_COUNT span = -5;
  account->RecvQuery(&n, &span);
  EXPECT_EQ(n, 0);
  ASSERT_TRUE(account->BeginConnection().ok());
  account->RecvQuery(&n, &span);
  EXPECT_EQ(n, DAT_VALUE_UNKNOWN);
  EXPECT_EQ(span, DAT_VALUE_UNKNOWN);
  account->Close();
  account->RecvQuery(&n, &span);
  EXPECT_EQ(n, 0);
}

TEST(SrqAccountDevice, FiniteHighWatermarksAreRefused) {
  auto pool = MakePool(8);
  auto account = MakeAccount(*pool, nullptr, /*device=*/true);
  ReceiveSource::Crossing crossed;
  EXPECT_EQ(account->SetHighWatermarks(4, DAT_WATERMARK_INFINITE, false, crossed).code(), Code::kModelNotSupported);
  EXPECT_TRUE(account->SetHighWatermarks(DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE, false, crossed).ok());
}

}  // namespace
}  // namespace softdat::srq
