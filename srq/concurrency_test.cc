// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The pool under concurrent use (dat_srq_create: MT-Level Safe): posters, takers completing out
// of order, a resizer and a watermark setter at once. No buffer may be lost or duplicated, and
// the counts stay consistent. Meant for --config=tsan and --config=asan as well.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "srq/srq_pool.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Complete;
using testing::FlushEndpoint;
using testing::CountingListener;
using testing::Segment;
using TakeResult = SrqPool::TakeResult;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kPerPoster = 10000;
constexpr int kPosters = 2;
constexpr int kTakers = 2;
constexpr auto kTimeLimit = std::chrono::seconds(40);

std::uint64_t Tag(int poster, std::uint64_t sequence) {
  return (std::uint64_t(poster) << 32) | sequence;
}

TEST(SrqConcurrency, ConcurrentPostTakeCompleteLosesAndDuplicatesNothing) {
  CountingListener listener;
  std::unique_ptr<SrqPool> pool;
  ASSERT_TRUE(SrqPool::Create(32, 2, &listener, pool).ok());
  std::vector<std::unique_ptr<MsnWindow>> accounts(kTakers);
  for (auto& account : accounts) {
    ASSERT_TRUE(MsnWindow::Create(4, 1, account).ok());
    ASSERT_TRUE(pool->Attach(*account).ok());
  }
  const Clock::time_point deadline = Clock::now() + kTimeLimit;
  std::atomic<std::uint64_t> taken_total{0};
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  // seen[poster][sequence]: how many times each posted buffer was delivered; written by takers.
  std::vector<std::vector<std::atomic<int>>> seen(kPosters);
  for (auto& row : seen) row = std::vector<std::atomic<int>>(kPerPoster);

  std::vector<std::thread> threads;
  for (int poster = 0; poster < kPosters; ++poster) {
    threads.emplace_back([&, poster] {
      for (std::uint64_t sequence = 0; sequence < kPerPoster;) {
        if (Clock::now() > deadline) return;
        const std::uint64_t tag = Tag(poster, sequence);
        const RecvSegment segments[2] = {Segment(tag, 8), Segment(tag + 1, 8)};
        const Status status = pool->Post(testing::Cookie(tag), segments);
        if (status.ok()) {
          ++sequence;
        } else if (status.code() == Code::kInsufficientResources) {
          std::this_thread::yield();
        } else {
          failures.fetch_add(1);
          return;
        }
      }
    });
  }
  for (int taker = 0; taker < kTakers; ++taker) {
    threads.emplace_back([&, taker] {
      MsnWindow& ep = *accounts[taker];
      std::vector<RecvCompletion> out(ep.window());
      std::uint32_t next_msn = 1;
      while (taken_total.load() < kPosters * kPerPoster && Clock::now() < deadline) {
        // Take up to three messages, then complete them newest first: completions must still
        // come out oldest first.
        std::vector<std::uint32_t> msns;
        for (int i = 0; i < 3; ++i) {
          RecvBuffer buffer{};
          if (pool->Take(ep, next_msn, buffer) != TakeResult::kTaken) break;
          const std::uint64_t tag = buffer.cookie.as_64;
          if (buffer.num_segments != 2 || buffer.capacity != 16 ||
              buffer.segments[0].address != Segment(tag).address ||
              buffer.segments[1].address != Segment(tag + 1).address)
            failures.fetch_add(1);
          msns.push_back(next_msn++);
        }
        if (msns.empty()) {
          std::this_thread::yield();
          continue;
        }
        for (auto it = msns.rbegin(); it != msns.rend(); ++it) {
          std::size_t delivered = 0;
          if (!Complete(*pool, ep, *it, 16, DAT_DTO_SUCCESS, out, delivered).ok()) {
            failures.fetch_add(1);
            continue;
          }
          const std::size_t expected = (it + 1 == msns.rend()) ? msns.size() : 0;
          if (delivered != expected) failures.fetch_add(1);
          for (std::size_t i = 0; i < delivered; ++i) {
            if (out[i].msn != msns[i]) failures.fetch_add(1);
            const std::uint64_t tag = out[i].cookie.as_64;
            const auto poster = static_cast<std::size_t>(tag >> 32);
            const std::uint64_t sequence = tag & 0xFFFFFFFFu;
            if (poster >= seen.size() || sequence >= kPerPoster) {
              failures.fetch_add(1);
            } else {
              seen[poster][sequence].fetch_add(1);
            }
            if (!pool->Reaped(out[i].slot).ok()) failures.fetch_add(1);
            taken_total.fetch_add(1);
          }
        }
        DAT_COUNT n = 0;
        DAT_COUNT span = 0;
        if (!pool->RecvQuery(ep, &n, &span).ok() || n != 0 || span != 0) failures.fetch_add(1);
      }
    });
  }
  // Control path at the same time: resizing, re-arming the watermark, querying.
  std::thread control([&] {
    for (std::uint32_t round = 0; !stop.load() && Clock::now() < deadline; ++round) {
      const Status resized = pool->Resize(round % 2 == 0 ? 64 : 16);
      if (!resized.ok() && resized != Status(Code::kInvalidState, Detail::kSrqInUse))
        failures.fetch_add(1);
      (void)pool->SetLowWatermark(8);
      const SrqPool::Snapshot query = pool->Query();
      if (query.available_dto_count > query.outstanding_dto_count ||
          query.outstanding_dto_count > query.max_recv_dtos)
        failures.fetch_add(1);
      std::this_thread::yield();
    }
  });
  for (std::thread& thread : threads) thread.join();
  stop.store(true);
  control.join();

  ASSERT_LT(Clock::now(), deadline) << "did not finish in time";
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(taken_total.load(), kPosters * kPerPoster);
  int lost = 0;
  int duplicated = 0;
  for (auto& row : seen) {
    for (auto& count : row) {
      lost += count.load() == 0;
      duplicated += count.load() > 1;
    }
  }
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(duplicated, 0);
  const SrqPool::Snapshot query = pool->Query();
  EXPECT_EQ(query.available_dto_count, 0u);
  EXPECT_EQ(query.outstanding_dto_count, 0u);
  EXPECT_GT(listener.count(), 0);  // the SRQ did run low while the watermark was armed
}

}  // namespace
}  // namespace softdat::srq
