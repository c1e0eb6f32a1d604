// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FutexSharedLock: readers share it, a writer excludes readers and writers, a writer waits for
// the readers inside and holds new ones off, and sleepers on either side are woken (a lost
// wake-up would hang a bounded wait).
#include "base/futex_shared_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace softdat {
namespace {

using namespace std::chrono_literals;

TEST(FutexSharedLock, ReadersShareAndAWriterExcludesThem) {
  FutexSharedLock lock;
  ASSERT_TRUE(lock.try_lock_shared());
  ASSERT_TRUE(lock.try_lock_shared()) << "a second reader shares it";
  EXPECT_FALSE(lock.try_lock()) << "no writer while readers are inside";
  lock.unlock_shared();
  lock.unlock_shared();
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock_shared());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_TRUE(lock.try_lock_shared());
  lock.unlock_shared();
}

// Writers increment a plain counter twice (an odd value is a write under way); readers check it
// is even and unchanged while they hold the lock. Any overlap fails, and TSan sees the race.
TEST(FutexSharedLock, ReadersNeverSeeAWriteUnderWayAndWritesAreNeverLost) {
  FutexSharedLock lock;
  std::uint64_t counter = 0;
  std::atomic<int> torn{0};
  constexpr int kWriters = 2, kReaders = 3, kWrites = 20'000, kReads = 50'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kWrites; ++i) {
        std::lock_guard guard(lock);
        ++counter;
        ++counter;
      }
    });
  for (int t = 0; t < kReaders; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kReads; ++i) {
        std::shared_lock guard(lock);
        const std::uint64_t seen = counter;
        if (seen % 2 != 0 || counter != seen) torn.fetch_add(1);
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(counter, std::uint64_t{2} * kWriters * kWrites);
}

// A writer arriving while a reader is inside sleeps until that reader leaves; meanwhile a new
// reader is held off (it would otherwise starve the writer). Both are woken in turn.
TEST(FutexSharedLock, AWriterWaitsForTheReadersInsideAndHoldsNewOnesOff) {
  FutexSharedLock lock;
  lock.lock_shared();
  std::atomic<bool> written{false};
  auto writer = std::async(std::launch::async, [&] {
    lock.lock();
    written = true;
    lock.unlock();
  });
  // Until the writer's bit is set: then a reader can no longer come in (try_lock_shared fails).
  while (lock.try_lock_shared()) {
    lock.unlock_shared();
    std::this_thread::yield();
  }
  EXPECT_FALSE(written.load()) << "a reader is still inside";
  std::atomic<bool> read{false};
  auto reader = std::async(std::launch::async, [&] {
    lock.lock_shared();
    read = true;
    lock.unlock_shared();
  });
  std::this_thread::sleep_for(50ms);  // time to come in, were it let in
  EXPECT_FALSE(read.load()) << "a new reader waits behind the writer";
  lock.unlock_shared();  // the last reader out wakes the writer, whose unlock wakes the reader
  ASSERT_EQ(writer.wait_for(10s), std::future_status::ready) << "the writer was never woken";
  ASSERT_EQ(reader.wait_for(10s), std::future_status::ready) << "the reader was never woken";
  EXPECT_TRUE(written.load());
  EXPECT_TRUE(read.load());
}

}  // namespace
}  // namespace softdat
