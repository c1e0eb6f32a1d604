// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DeliveryTurn: one deliverer at a time, and no request is ever left without a pass after it.
#include "core/delivery_turn.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace softdat::core {
namespace {

TEST(DeliveryTurn, SingleCallerDeliversOnceAndIsDone) {
  DeliveryTurn turn;
  ASSERT_TRUE(turn.Request());
  EXPECT_TRUE(turn.Done());
  ASSERT_TRUE(turn.Request()) << "the turn is free again";
  EXPECT_TRUE(turn.Done());
}

TEST(DeliveryTurn, RequestDuringAPassMakesTheDelivererGoRoundAgain) {
  DeliveryTurn turn;
  ASSERT_TRUE(turn.Request());
  EXPECT_FALSE(turn.Request()) << "someone is delivering";
  EXPECT_FALSE(turn.Request());
  EXPECT_FALSE(turn.Done()) << "two requests came in during the pass";
  EXPECT_TRUE(turn.Done());
  EXPECT_TRUE(turn.Request());
  EXPECT_TRUE(turn.Done());
}

// The order of core's fused path (Ep::DeliverDeviceRecv): a thread asks for the turn before it
// publishes, and when the turn is taken it publishes and asks again. Its first request may be
// spent by a pass that ran before the item was there; the second is made after it, so a pass
// still follows the item.
TEST(DeliveryTurn, ARequestSpentBeforeItsItemIsPublishedIsCoveredByTheNextRequest) {
  DeliveryTurn turn;
  int published = 0;
  int delivered = 0;
  ASSERT_TRUE(turn.Request());              // A delivers
  ASSERT_FALSE(turn.Request());             // B asks first: the turn is A's
  delivered = published;                    // A's pass: nothing of B's yet
  ASSERT_FALSE(turn.Done()) << "B's request makes A go round";
  delivered = published;                    // A's second pass: still nothing
  ASSERT_TRUE(turn.Done()) << "B's first request is spent";
  published = 1;                            // B publishes
  ASSERT_TRUE(turn.Request()) << "B's second request finds the turn free: B delivers";
  delivered = published;
  EXPECT_TRUE(turn.Done());
  EXPECT_EQ(delivered, 1);
}

// The same, with threads: every item is delivered, whichever way the requests fall.
TEST(DeliveryTurn, ProducersThatAskBeforeTheyPublishLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  DeliveryTurn turn;
  std::atomic<int> published{0};
  std::atomic<int> delivered{0};  // written by the deliverer only
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        bool mine = turn.Request();
        published.fetch_add(1, std::memory_order_release);
        if (!mine) mine = turn.Request();
        if (!mine) continue;
        do {
          delivered.store(published.load(std::memory_order_acquire), std::memory_order_relaxed);
        } while (!turn.Done());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(delivered.load(), kThreads * kPerThread);
}

// Producers publish items and request a turn; whoever delivers drains everything published.
// Every item must be delivered, exactly once, by one deliverer at a time.
TEST(DeliveryTurn, ConcurrentProducersLoseNothingAndNeverOverlap) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  DeliveryTurn turn;
  std::atomic<int> published{0};
  int delivered = 0;  // only the deliverer touches it
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        published.fetch_add(1, std::memory_order_release);
        if (!turn.Request()) continue;
        do {
          if (inside.fetch_add(1) != 0) overlap = true;
          delivered = published.load(std::memory_order_acquire);
          inside.fetch_sub(1);
        } while (!turn.Done());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(delivered, kThreads * kPerThread);
}

}  // namespace
}  // namespace softdat::core
