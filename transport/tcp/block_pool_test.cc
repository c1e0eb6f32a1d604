// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// BlockPool: blocks come back for reuse, through the spare kept outside the lock and through the
// locked stack alike; the counts see both; no block is ever held by two takers at once.
#include "transport/tcp/block_pool.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace softdat::transport::tcp {
namespace {

TEST(BlockPool, AReleasedBlockIsTakenAgainWithoutAllocating) {
  BlockPool pool(4096);
  std::uint8_t* first = pool.Acquire();
  ASSERT_NE(first, nullptr);
  pool.Release(first);
  EXPECT_EQ(pool.in_use(), 0u) << "the spare block counts as free";
  EXPECT_EQ(pool.Acquire(), first);
  EXPECT_EQ(pool.allocated(), 1u);
  EXPECT_EQ(pool.in_use(), 1u);
  pool.Release(first);
  pool.Release(nullptr);  // ignored
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(BlockPool, CountsTheSpareAndTheStackTogether) {
  BlockPool pool(4096);
  std::array<std::uint8_t*, 3> blocks{};
  for (auto& block : blocks) ASSERT_NE(block = pool.Acquire(), nullptr);
  EXPECT_EQ(pool.allocated(), 3u);
  EXPECT_EQ(pool.in_use(), 3u);
  pool.Release(blocks[0]);  // the spare
  EXPECT_EQ(pool.in_use(), 2u);
  pool.Release(blocks[1]);  // the stack: the spare is taken
  pool.Release(blocks[2]);
  EXPECT_EQ(pool.in_use(), 0u);
  std::set<std::uint8_t*> again;
  for (int i = 0; i < 3; ++i) again.insert(pool.Acquire());
  EXPECT_EQ(again, std::set<std::uint8_t*>(blocks.begin(), blocks.end())) << "all three reused";
  EXPECT_EQ(pool.allocated(), 3u);
  for (std::uint8_t* block : again) pool.Release(block);
}

// Regression: the pool kept every block it ever made, so a burst of 10,000 connections held about
// 1.25 GiB of receive blocks for the transport's life. What a burst took goes back as it ends,
// while steady use (a few blocks taken and given back) keeps its blocks.
TEST(BlockPool, GivesBackWhatABurstTookAndKeepsWhatSteadyUseNeeds) {
  for (const std::size_t size : {std::size_t{4096}, std::size_t{128 * 1024}}) {  // heap and mapped
    SCOPED_TRACE(size);
    BlockPool pool(size);
    std::vector<std::uint8_t*> burst(1000);
    for (auto& block : burst) {
      ASSERT_NE(block = pool.Acquire(), nullptr);
      std::memset(block, 0x5a, size);  // touched, as a receive would
    }
    EXPECT_EQ(pool.allocated(), 1000u);
    for (std::uint8_t* block : burst) pool.Release(block);
    EXPECT_EQ(pool.in_use(), 0u);
    // kKeepFree, the spare, and the spare once more (the trim counts it as in use).
    EXPECT_LE(pool.allocated(), BlockPool::kKeepFree + 2) << "the burst's blocks were kept";

    std::array<std::uint8_t*, 4> steady{};
    const std::size_t before = pool.allocated();
    for (int round = 0; round < 100; ++round) {
      for (auto& block : steady) ASSERT_NE(block = pool.Acquire(), nullptr);
      for (std::uint8_t* block : steady) pool.Release(block);
    }
    EXPECT_EQ(pool.allocated(), before) << "steady use made or freed blocks";
  }
}

// Two threads taking and giving back blocks as fast as they can: each writes its mark over the
// whole block while it holds it and checks nobody else wrote there (under TSan, a shared block
// is also a reported race).
TEST(BlockPool, NeverHandsOneBlockToTwoTakers) {
  constexpr std::size_t kSize = 256;
  constexpr int kRounds = 20000;
  BlockPool pool(kSize);
  std::atomic<int> overlaps{0};
  auto run = [&](std::uint8_t mark) {
    for (int i = 0; i < kRounds; ++i) {
      std::uint8_t* a = pool.Acquire();
      std::uint8_t* b = pool.Acquire();
      ASSERT_NE(a, nullptr);
      ASSERT_NE(b, nullptr);
      std::memset(a, mark, kSize);
      std::memset(b, mark, kSize);
      for (std::size_t j = 0; j < kSize; ++j)
        if (a[j] != mark || b[j] != mark) overlaps.fetch_add(1);
      pool.Release(a);
      pool.Release(b);
    }
  };
  std::thread first(run, 1), second(run, 2);
  first.join();
  second.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_LE(pool.allocated(), 4u) << "at most two held by each thread";
}

}  // namespace
}  // namespace softdat::transport::tcp
