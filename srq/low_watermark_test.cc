// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_srq_set_lw: a one-shot event the first time the SRQ holds fewer buffers than the watermark.
#include <gtest/gtest.h>

#include "srq/srq_pool.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Complete;
using testing::FlushEndpoint;
using testing::CountingListener;
using testing::MakeWindow;
using testing::MakePool;
using testing::PostTagged;
using TakeResult = SrqPool::TakeResult;

constexpr Status kBadValue(Code::kInvalidParameter, Detail::kParamLowWatermark);

// Takes the next buffer under the next MSN.
void TakeOne(SrqPool& pool, MsnWindow& ep, std::uint32_t& msn) {
  RecvBuffer buffer{};
  ASSERT_EQ(pool.Take(ep, msn++, buffer), TakeResult::kTaken);
}

TEST(SrqLowWatermark, LowWatermarkFiresOnceWhenBelow) {
  CountingListener listener;
  auto pool = MakePool(8, 1, &listener);
  auto ep = MakeWindow(*pool);
  std::uint32_t msn = 1;
  for (std::uint64_t tag = 0; tag < 4; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  ASSERT_TRUE(pool->SetLowWatermark(2).ok());
  EXPECT_EQ(listener.count(), 0);
  TakeOne(*pool, *ep, msn);  // 3 on the SRQ
  TakeOne(*pool, *ep, msn);  // 2: at the watermark, not below it
  EXPECT_EQ(listener.count(), 0);
  TakeOne(*pool, *ep, msn);  // 1: below
  EXPECT_EQ(listener.count(), 1);
  TakeOne(*pool, *ep, msn);  // 0: still below, but the event was used up
  EXPECT_EQ(listener.count(), 1);
  // Refilling and draining again does not re-fire without a new dat_srq_set_lw.
  for (std::uint64_t tag = 0; tag < 3; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  TakeOne(*pool, *ep, msn);
  TakeOne(*pool, *ep, msn);
  EXPECT_EQ(listener.count(), 1);
  EXPECT_EQ(pool->Query().low_watermark, 2u);  // the value stays set after the event
}

TEST(SrqLowWatermark, LowWatermarkFiresAtOnceIfAlreadyBelow) {
  CountingListener listener;
  auto pool = MakePool(8, 1, &listener);
  auto ep = MakeWindow(*pool);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_TRUE(pool->SetLowWatermark(3).ok());
  EXPECT_EQ(listener.count(), 1);  // during the call
  std::uint32_t msn = 1;
  TakeOne(*pool, *ep, msn);
  EXPECT_EQ(listener.count(), 1);
  // An empty SRQ is below any non-default watermark, e.g. right after creation.
  ASSERT_TRUE(pool->SetLowWatermark(1).ok());
  EXPECT_EQ(listener.count(), 2);
}

TEST(SrqLowWatermark, LowWatermarkNotFiredAtExactlyTheWatermark) {
  CountingListener listener;
  auto pool = MakePool(8, 1, &listener);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  ASSERT_TRUE(pool->SetLowWatermark(2).ok());
  EXPECT_EQ(listener.count(), 0);
}

TEST(SrqLowWatermark, LowWatermarkRearmsOnEverySet) {
  CountingListener listener;
  auto pool = MakePool(8, 1, &listener);
  auto ep = MakeWindow(*pool);
  std::uint32_t msn = 1;
  for (std::uint64_t tag = 0; tag < 4; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  ASSERT_TRUE(pool->SetLowWatermark(4).ok());
  TakeOne(*pool, *ep, msn);  // 3 < 4
  EXPECT_EQ(listener.count(), 1);
  ASSERT_TRUE(pool->SetLowWatermark(3).ok());  // 3 is not below 3: armed, silent
  EXPECT_EQ(listener.count(), 1);
  TakeOne(*pool, *ep, msn);  // 2 < 3
  EXPECT_EQ(listener.count(), 2);
  // Setting it again before it fired simply replaces the value: still one event.
  ASSERT_TRUE(pool->SetLowWatermark(1).ok());
  ASSERT_TRUE(pool->SetLowWatermark(2).ok());
  TakeOne(*pool, *ep, msn);  // 1 < 2
  TakeOne(*pool, *ep, msn);  // 0 < 2
  EXPECT_EQ(listener.count(), 3);
}

TEST(SrqLowWatermark, LowWatermarkAboveMaxIsInvalid) {
  CountingListener listener;
  auto pool = MakePool(5, 1, &listener);  // actual size 8
  EXPECT_EQ(pool->SetLowWatermark(9), kBadValue);
  EXPECT_EQ(pool->SetLowWatermark(-1), kBadValue);
  EXPECT_EQ(pool->Query().low_watermark, 0u);  // unchanged
  EXPECT_EQ(listener.count(), 0);              // and not armed
  EXPECT_TRUE(pool->SetLowWatermark(8).ok());  // the actual size is allowed
  EXPECT_EQ(pool->Query().low_watermark, 8u);
  EXPECT_EQ(listener.count(), 1);  // empty SRQ: below at once
}

TEST(SrqLowWatermark, LowWatermarkDefaultDisarms) {
  CountingListener listener;
  auto pool = MakePool(8, 1, &listener);
  auto ep = MakeWindow(*pool);
  for (std::uint64_t tag = 0; tag < 4; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  ASSERT_TRUE(pool->SetLowWatermark(3).ok());
  ASSERT_TRUE(pool->SetLowWatermark(DAT_SRQ_LW_DEFAULT).ok());
  EXPECT_EQ(pool->Query().low_watermark, 0u);
  std::uint32_t msn = 1;
  for (int i = 0; i < 4; ++i) TakeOne(*pool, *ep, msn);
  EXPECT_EQ(listener.count(), 0);
}

TEST(SrqLowWatermark, LowWatermarkWithoutListenerIsConsumedQuietly) {
  CountingListener listener;
  auto pool = MakePool(8, 1, nullptr);
  auto ep = MakeWindow(*pool);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  ASSERT_TRUE(pool->SetLowWatermark(2).ok());
  std::uint32_t msn = 1;
  TakeOne(*pool, *ep, msn);  // fires into no listener
  pool->SetListener(&listener);
  TakeOne(*pool, *ep, msn);
  EXPECT_EQ(listener.count(), 0);  // that arming was used up
  ASSERT_TRUE(pool->SetLowWatermark(1).ok());
  EXPECT_EQ(listener.count(), 1);
}

// The listener runs outside the pool's lock: it may call back into the pool. Were it called with
// the lock held, Query would self-deadlock (and the test time out).
class QueryingListener : public LowWatermarkListener {
 public:
  void OnLowWatermark() override {
    ++calls;
    seen = pool->Query();
  }
  SrqPool* pool = nullptr;
  int calls = 0;
  SrqPool::Snapshot seen{};
};

TEST(SrqLowWatermark, LowWatermarkListenerIsCalledOutsideTheLock) {
  QueryingListener listener;
  auto pool = MakePool(8, 1, &listener);
  listener.pool = pool.get();
  auto ep = MakeWindow(*pool);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  ASSERT_TRUE(pool->SetLowWatermark(2).ok());
  std::uint32_t msn = 1;
  TakeOne(*pool, *ep, msn);
  ASSERT_EQ(listener.calls, 1);
  EXPECT_EQ(listener.seen.available_dto_count, 1u);
  ASSERT_TRUE(pool->SetLowWatermark(2).ok());  // fires inside SetLowWatermark
  EXPECT_EQ(listener.calls, 2);
}

}  // namespace
}  // namespace softdat::srq
