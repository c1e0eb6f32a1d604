// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FutexLock: mutual exclusion under contention (spinning and sleeping waiters), try_lock, and
// that a sleeper is woken by the unlock (a lost wake-up would hang the test's bounded wait).
#include "base/futex_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace softdat {
namespace {

using namespace std::chrono_literals;

TEST(FutexLock, TryLockFailsWhileHeldAndSucceedsAfter) {
  FutexLock lock;
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock());
  std::thread other([&] { EXPECT_FALSE(lock.try_lock()); });
  other.join();
  lock.unlock();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

// Four threads, each 100,000 increments of a plain counter under the lock: any overlap of two
// critical sections loses an increment (and TSan reports the race).
TEST(FutexLock, ContendedIncrementsAreNeverLost) {
  FutexLock lock;
  std::uint64_t counter = 0;
  constexpr int kThreads = 4, kEach = 100'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        std::lock_guard guard(lock);
        ++counter;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter, std::uint64_t{kThreads} * kEach);
}

// A holder that keeps the lock far longer than the spin: the waiters sleep on the futex, and the
// unlock must wake them (each takes the lock in turn within the bound).
TEST(FutexLock, SleepingWaitersAreWokenByTheUnlock) {
  FutexLock lock;
  lock.lock();
  constexpr int kWaiters = 3;
  std::atomic<int> started{0}, done{0};
  std::vector<std::future<void>> waiters;
  for (int w = 0; w < kWaiters; ++w)
    waiters.push_back(std::async(std::launch::async, [&] {
      started.fetch_add(1);
      lock.lock();
      done.fetch_add(1);
      lock.unlock();
    }));
  while (started.load() < kWaiters) std::this_thread::yield();
  std::this_thread::sleep_for(50ms);  // long past the spin: they sleep (or are about to)
  EXPECT_EQ(done.load(), 0);
  lock.unlock();
  for (auto& waiter : waiters) ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << "a sleeper was never woken";
  EXPECT_EQ(done.load(), kWaiters);
  EXPECT_TRUE(lock.try_lock()) << "the lock is free once every waiter left";
  lock.unlock();
}

}  // namespace
}  // namespace softdat
