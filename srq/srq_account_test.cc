// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// An EP's account on a shared SRQ (SrqAccount): window sizing per connection, the waiting of an
// EP that found no buffer (one woken per buffer, in arrival order), device completions mapped to MSNs, what the account holds and returns
// when it goes away.
#include "srq/srq_account.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

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

// Regression: a transport reports completions while it holds its locks and delivers them after
// (EndpointEvents::Deliver), so a connection may read more messages than its window holds before
// any completion is generated. The next message waits (kNotReady), it is not refused as a
// protocol violation (which terminated every connection of a 4-client SRQ stream), and the pop
// that makes room wakes it.
TEST(SrqAccount, AMessageAheadOfAWindowOfUndeliveredCompletionsWaitsAndThePopWakesIt) {
  // An SRQ larger than the largest window, so buffers remain when the window is full.
  constexpr std::uint32_t kSrq = 8192;
  auto pool = MakePool(kSrq);
  CountingWaiter waiter;
  auto account = MakeAccount(*pool, &waiter);
  ASSERT_TRUE(account->BeginConnection().ok());
  const std::uint32_t window = SrqAccount::WindowFor(kSrq);
  ASSERT_LT(window, kSrq);
  for (std::uint64_t tag = 1; tag <= window + 1; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  for (std::uint32_t msn = 1; msn <= window; ++msn) {
    RecvBuffer buffer{};
    ASSERT_EQ(account->TakeForMessage(msn, buffer), TakeResult::kTaken);
    ASSERT_TRUE(account->Place(msn, 8, DAT_DTO_SUCCESS, RecvNotes{}).ok());
  }
  RecvBuffer buffer{};
  EXPECT_EQ(account->TakeForMessage(window + 1, buffer), TakeResult::kNotReady);
  EXPECT_EQ(waiter.calls, 0);
  RecvCompletion completion{};
  ASSERT_TRUE(account->PopCompletion(completion));
  EXPECT_EQ(waiter.calls, 1) << "the pop that made room did not wake the waiting message";
  ASSERT_TRUE(account->PopCompletion(completion));
  EXPECT_EQ(waiter.calls, 1) << "one wake-up per wait";
  EXPECT_EQ(account->TakeForMessage(window + 1, buffer), TakeResult::kTaken);
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

// One connected account per waiter, each with its first message waiting for a buffer.
struct Waiting {
  CountingWaiter waiter;
  std::unique_ptr<SrqAccount> account;
};
std::vector<std::unique_ptr<Waiting>> MakeWaiting(SrqPool& pool, int n) {
  std::vector<std::unique_ptr<Waiting>> all;
  for (int i = 0; i < n; ++i) {
    auto w = std::make_unique<Waiting>();
    w->account = MakeAccount(pool, &w->waiter);
    EXPECT_TRUE(w->account->BeginConnection().ok());
    RecvBuffer buffer{};
    EXPECT_EQ(w->account->TakeForMessage(1, buffer), TakeResult::kNotReady);
    all.push_back(std::move(w));
  }
  return all;
}

TEST(SrqAccount, APostWakesTheOldestWaiterOnly) {
  auto pool = MakePool(8);
  auto w = MakeWaiting(*pool, 3);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  EXPECT_EQ(w[0]->waiter.calls, 1);
  EXPECT_EQ(w[1]->waiter.calls, 0) << "one buffer, one waiter woken";
  EXPECT_EQ(w[2]->waiter.calls, 0);
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  EXPECT_EQ(w[1]->waiter.calls, 1) << "the next buffer wakes the next waiter, in arrival order";
  EXPECT_EQ(w[2]->waiter.calls, 0);
  RecvBuffer buffer{};
  EXPECT_EQ(w[0]->account->TakeForMessage(1, buffer), TakeResult::kTaken);
  EXPECT_EQ(w[1]->account->TakeForMessage(1, buffer), TakeResult::kTaken);
  EXPECT_EQ(w[2]->waiter.calls, 0) << "taking a buffer one was woken for wakes nobody else";
}

TEST(SrqAccount, AWokenWaiterThatLostItsBufferKeepsItsPlaceAtTheHead) {
  auto pool = MakePool(8);
  auto w = MakeWaiting(*pool, 2);
  auto other = MakeAccount(*pool);
  ASSERT_TRUE(other->BeginConnection().ok());
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_EQ(w[0]->waiter.calls, 1);
  RecvBuffer buffer{};
  ASSERT_EQ(other->TakeForMessage(1, buffer), TakeResult::kTaken) << "a message that arrived meanwhile";
  EXPECT_EQ(w[0]->account->TakeForMessage(1, buffer), TakeResult::kNotReady);
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  EXPECT_EQ(w[0]->waiter.calls, 2) << "still first in line";
  EXPECT_EQ(w[1]->waiter.calls, 0);
}

TEST(SrqAccount, AWakeUpNeverUsedGoesToTheNextWaiterWhenTheConnectionEnds) {
  auto pool = MakePool(8);
  auto w = MakeWaiting(*pool, 2);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_EQ(w[0]->waiter.calls, 1);
  ASSERT_EQ(w[1]->waiter.calls, 0);
  w[0]->account->Close();  // its connection ended before it came back for the buffer
  EXPECT_EQ(w[1]->waiter.calls, 1);
  RecvBuffer buffer{};
  EXPECT_EQ(w[1]->account->TakeForMessage(1, buffer), TakeResult::kTaken);
}

TEST(SrqAccount, AWakeUpNeverUsedGoesToTheNextWaiterWhenTheEpStopsWaking) {
  auto pool = MakePool(8);
  auto w = MakeWaiting(*pool, 2);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  w[0]->account->StopWaking();  // the EP is being freed
  EXPECT_EQ(w[1]->waiter.calls, 1);
}

TEST(SrqAccount, AQueuedWaiterThatClosesIsForgotten) {
  auto pool = MakePool(8);
  auto w = MakeWaiting(*pool, 2);
  w[0]->account->Close();
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  EXPECT_EQ(w[0]->waiter.calls, 0);
  EXPECT_EQ(w[1]->waiter.calls, 1);
}

TEST(SrqAccount, ManyWaitersAreEachWokenOncePerBuffer) {
  // A fan-in: 1,000 connections wait on one SRQ, and every woken EP comes back for a buffer as
  // core's EP does. Waking every waiter on every post made each post cost 1,000 wake-ups and
  // 999 failed takes (the 1,000-connection collapse of the performance issue).
  constexpr int kWaiters = 1000;
  auto pool = MakePool(1024);
  auto w = MakeWaiting(*pool, kWaiters);
  std::vector<int> seen(kWaiters, 0);
  int taken = 0;
  RecvBuffer buffer{};
  for (int post = 0; post < kWaiters; ++post) {
    ASSERT_TRUE(PostTagged(*pool, static_cast<std::uint64_t>(post)).ok());
    for (int i = 0; i < kWaiters; ++i) {
      if (w[i]->waiter.calls == seen[i]) continue;
      seen[i] = w[i]->waiter.calls;
      if (w[i]->account->TakeForMessage(1, buffer) == TakeResult::kTaken) ++taken;
    }
  }
  EXPECT_EQ(taken, kWaiters);
  int calls = 0;
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(w[i]->waiter.calls, 1) << "waiter " << i;
    calls += w[i]->waiter.calls;
  }
  EXPECT_EQ(calls, kWaiters);
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

// Two buffers of 100 bytes on the SRQ (cookies 1 and 2, their pool slots in `slots`), and the
// device account's connection begun.
void PostTwoAndConnect(SrqPool& pool, SrqAccount& account, std::uint32_t (&slots)[2]) {
  for (std::uint32_t i = 0; i < 2; ++i) {
    const RecvSegment segment = testing::Segment(i + 1);
    ASSERT_TRUE(pool.Post(Cookie(i + 1), {&segment, 1}, &slots[i]).ok());
  }
  ASSERT_TRUE(account.BeginConnection().ok());
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

// The fused step every device receive takes (Ep::OnDeviceRecvDone): the completion is placed
// with the take, its length clamped to the buffer, and comes out in completion order.
TEST(SrqAccountDevice, CompleteDeviceChosenTakesAndPlacesInOneStep) {
  auto pool = MakePool(8);
  auto account = MakeAccount(*pool, nullptr, /*device=*/true);
  std::uint32_t slots[2];
  ASSERT_NO_FATAL_FAILURE(PostTwoAndConnect(*pool, *account, slots));
  std::uint32_t msn = 0;
  RecvNotes notes{};
  notes.solicited = true;
  ASSERT_EQ(account->CompleteDeviceChosen(slots[1], 40, DAT_DTO_SUCCESS, notes, msn), TakeResult::kTaken);
  EXPECT_EQ(msn, 1u);
  EXPECT_EQ(account->CompleteDeviceChosen(999, 1, DAT_DTO_SUCCESS, {}, msn), TakeResult::kRefused);
  EXPECT_EQ(account->CompleteDeviceChosen(slots[1], 1, DAT_DTO_SUCCESS, {}, msn), TakeResult::kRefused)
      << "held already";
  ASSERT_EQ(account->CompleteDeviceChosen(slots[0], 1 << 20, DAT_DTO_ERR_LOCAL_LENGTH, {}, msn), TakeResult::kTaken);
  EXPECT_EQ(msn, 2u) << "the refused completions opened no gap";
  EXPECT_TRUE(testing::PopsCompletion(*account, 2, 40, DAT_DTO_SUCCESS, true));
  EXPECT_TRUE(testing::PopsCompletion(*account, 1, 100, DAT_DTO_ERR_LOCAL_LENGTH, false)) << "never more than the buffer";
  RecvCompletion done{};
  EXPECT_FALSE(account->PopCompletion(done));
}

// Core's fused device path (Ep::DeliverDeviceRecv) on an SRQ EP: what the pool takes and places
// comes straight back, in the pool's one step, and a refusal hands nothing back.
TEST(SrqAccountDevice, CompleteDeviceChosenAndPopHandsBackWhatItCompleted) {
  auto pool = MakePool(8);
  auto account = MakeAccount(*pool, nullptr, /*device=*/true);
  std::uint32_t slots[2];
  ASSERT_NO_FATAL_FAILURE(PostTwoAndConnect(*pool, *account, slots));
  RecvCompletion done{};
  bool popped = true;
  EXPECT_EQ(account->CompleteDeviceChosenAndPop(999, 1, DAT_DTO_SUCCESS, {}, done, popped), TakeResult::kRefused);
  EXPECT_FALSE(popped);
  ASSERT_EQ(account->CompleteDeviceChosenAndPop(slots[1], 40, DAT_DTO_SUCCESS, {}, done, popped), TakeResult::kTaken);
  ASSERT_TRUE(popped);
  EXPECT_EQ(done.cookie.as_64, 2u);
  EXPECT_EQ(done.msn, 1u);
  EXPECT_EQ(done.transferred_length, 40u);
  EXPECT_TRUE(done.from_srq);
  EXPECT_EQ(done.slot, slots[1]);
  EXPECT_TRUE(pool->Reaped(done.slot).ok());
  RecvCompletion none{};
  EXPECT_FALSE(account->PopCompletion(none)) << "handed out once";
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
