// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// InlineRing: FIFO allocation, the skipped tail at the wrap, refusal when full, nothing handed
// out twice while in use, and its pooled block held only while something is allocated.
#include "transport/tcp/inline_ring.h"

#include <gtest/gtest.h>

#include <deque>
#include <utility>

namespace softdat::transport::tcp {
namespace {

TEST(InlineRing, RefusesEmptyOversizeAndWhatDoesNotFit) {
  BlockPool pool(10000);
  InlineRing ring(pool);
  std::uint32_t charged = 0;
  EXPECT_EQ(ring.Allocate(0, charged), nullptr);
  EXPECT_EQ(ring.Allocate(InlineRing::kMaxAllocation + 1, charged), nullptr);
  ASSERT_NE(ring.Allocate(4096, charged), nullptr);
  ASSERT_NE(ring.Allocate(4096, charged), nullptr);
  EXPECT_EQ(ring.Allocate(4096, charged), nullptr) << "only 1808 bytes left";
  EXPECT_NE(ring.Allocate(1808, charged), nullptr);
  EXPECT_EQ(ring.used(), 10000u);
  EXPECT_EQ(ring.Allocate(1, charged), nullptr);
}

TEST(InlineRing, HoldsAPooledBlockOnlyWhileSomethingIsAllocated) {
  BlockPool pool(8192);
  InlineRing ring(pool);
  EXPECT_FALSE(ring.holds_block());
  std::uint32_t a = 0, b = 0;
  ASSERT_NE(ring.Allocate(100, a), nullptr);
  ASSERT_NE(ring.Allocate(100, b), nullptr);
  EXPECT_TRUE(ring.holds_block());
  EXPECT_EQ(pool.in_use(), 1u);
  ring.Release(a);
  EXPECT_TRUE(ring.holds_block());
  ring.Release(b);
  EXPECT_FALSE(ring.holds_block()) << "idle: the block is back in the pool";
  EXPECT_EQ(pool.in_use(), 0u);
  ASSERT_NE(ring.Allocate(100, a), nullptr);
  EXPECT_EQ(pool.allocated(), 1u) << "the block is reused, not allocated again";
  ring.Release(a);
}

TEST(InlineRing, SkipsTheTailAtTheWrapAndChargesIt) {
  BlockPool pool(10000);
  InlineRing ring(pool);
  std::uint32_t a = 0, b = 0, c = 0;
  std::uint8_t* first = ring.Allocate(4000, a);
  ASSERT_NE(ring.Allocate(4000, b), nullptr);
  ring.Release(a);  // 4000 free at the front, 2000 at the back
  std::uint8_t* wrapped = ring.Allocate(3000, c);
  ASSERT_NE(wrapped, nullptr);
  EXPECT_EQ(wrapped, first) << "does not fit the 2000-byte tail: starts again at the front";
  EXPECT_EQ(c, 2000u + 3000u);
  EXPECT_EQ(ring.used(), 4000u + 5000u);
  ring.Release(b);
  ring.Release(c);
  EXPECT_EQ(ring.used(), 0u);
}

// Many rounds of allocate-fill and release-check in FIFO order: no live allocation overlaps
// another, so no message's bytes are overwritten before it is released.
TEST(InlineRing, LiveAllocationsNeverOverlap) {
  BlockPool pool(3 * 4096 + 100);
  InlineRing ring(pool);
  std::deque<std::pair<std::uint8_t*, std::pair<std::size_t, std::uint32_t>>> live;
  std::uint8_t tag = 0;
  for (int round = 0; round < 5000; ++round) {
    const std::size_t length = 1 + (static_cast<std::size_t>(round) * 977) % InlineRing::kMaxInline;
    std::uint32_t charged = 0;
    std::uint8_t* at = ring.Allocate(length, charged);
    while (at == nullptr) {
      ASSERT_FALSE(live.empty()) << "an empty ring must take any inline length";
      auto [old, size_and_charge] = live.front();
      live.pop_front();
      const std::uint8_t expect = old[0];
      for (std::size_t i = 0; i < size_and_charge.first; ++i) ASSERT_EQ(old[i], expect);
      ring.Release(size_and_charge.second);
      at = ring.Allocate(length, charged);
    }
    ++tag;
    for (std::size_t i = 0; i < length; ++i) at[i] = tag;
    live.push_back({at, {length, charged}});
  }
}

// Regression: Release clamped an underflow silently, hiding an accounting bug. It stops a debug
// build (the test suite's), and an optimized build logs it.
TEST(InlineRingDeathTest, ReleasingMoreThanWasChargedIsAnInternalError) {
  BlockPool pool(8192);
  InlineRing ring(pool);
  std::uint32_t charged = 0;
  ASSERT_NE(ring.Allocate(100, charged), nullptr);
  EXPECT_DEBUG_DEATH(ring.Release(charged + 1), "more released than charged");
}

}  // namespace
}  // namespace softdat::transport::tcp
