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
