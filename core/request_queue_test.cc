// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// RequestQueue: completions in posting order whatever the finishing order, the outstanding limit,
// abandoned posts, flushes, and completions for unknown ids.
#include "core/request_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace softdat::core {
namespace {

using transport::WorkStatus;

std::unique_ptr<RequestQueue> MakeQueue(std::uint32_t max_requests, std::uint32_t max_iov = 2) {
  std::unique_ptr<RequestQueue> queue;
  EXPECT_TRUE(RequestQueue::Create(max_requests, max_iov, queue).ok());
  return queue;
}

std::uint64_t PostTagged(RequestQueue& queue, std::uint64_t tag, DAT_DTOS operation = DAT_DTO_SEND) {
  RequestQueue::Request* request = queue.Reserve();
  EXPECT_NE(request, nullptr);
  request->cookie.as_64 = tag;
  request->operation = operation;
  request->segments[0] = Segment{tag, 8, 1};
  request->num_segments = 1;
  return queue.Commit();
}

std::vector<std::uint64_t> PopTags(RequestQueue& queue) {
  std::vector<std::uint64_t> tags;
  RequestQueue::Completion completion{};
  while (queue.PopCompletion(completion)) tags.push_back(completion.cookie.as_64);
  return tags;
}

TEST(RequestQueue, CreateRefusesOutOfRange) {
  std::unique_ptr<RequestQueue> queue;
  EXPECT_EQ(RequestQueue::Create(0, 1, queue), Status(Code::kInvalidParameter, Detail::kParamAttributes));
  EXPECT_EQ(RequestQueue::Create(RequestQueue::kMaxRequests + 1, 1, queue),
            Status(Code::kInvalidParameter, Detail::kParamAttributes));
  EXPECT_EQ(RequestQueue::Create(4, RequestQueue::kMaxIov + 1, queue),
            Status(Code::kInvalidParameter, Detail::kParamAttributes));
}

TEST(RequestQueue, CompletionsFollowPostingOrder) {
  auto queue = MakeQueue(8);
  const std::uint64_t read = PostTagged(*queue, 1, DAT_DTO_RDMA_READ);
  const std::uint64_t send = PostTagged(*queue, 2);
  const std::uint64_t write = PostTagged(*queue, 3, DAT_DTO_RDMA_WRITE);
  ASSERT_TRUE(queue->Finish(send, WorkStatus::kSuccess, 8));
  ASSERT_TRUE(queue->Finish(write, WorkStatus::kSuccess, 8));
  EXPECT_TRUE(PopTags(*queue).empty()) << "the read posted first is still out";
  ASSERT_TRUE(queue->Finish(read, WorkStatus::kSuccess, 8));
  RequestQueue::Completion completion{};
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_EQ(completion.operation, DAT_DTO_RDMA_READ);
  EXPECT_EQ(completion.length, 8u);
  EXPECT_EQ(PopTags(*queue), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(queue->count(), 0u);
}

// `more` lets the deliverer skip a second look under the lock after the usual single completion:
// it must say whether the next request had finished when this one was popped.
TEST(RequestQueue, APoppedCompletionSaysWhetherTheNextHasFinished) {
  auto queue = MakeQueue(8);
  const std::uint64_t first = PostTagged(*queue, 1);
  const std::uint64_t second = PostTagged(*queue, 2);
  const std::uint64_t third = PostTagged(*queue, 3);
  ASSERT_TRUE(queue->Finish(first, WorkStatus::kSuccess, 8));
  ASSERT_TRUE(queue->Finish(second, WorkStatus::kSuccess, 8));
  RequestQueue::Completion completion{};
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_TRUE(completion.more) << "the second had finished";
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_FALSE(completion.more) << "the third is still out";
  ASSERT_TRUE(queue->Finish(third, WorkStatus::kSuccess, 8));
  ASSERT_TRUE(queue->PopCompletion(completion));
  EXPECT_EQ(completion.cookie.as_64, 3u);
  EXPECT_FALSE(completion.more) << "nothing is left";
}

TEST(RequestQueue, FullQueueReservesNothingUntilACompletionIsPopped) {
  auto queue = MakeQueue(2);
  const std::uint64_t first = PostTagged(*queue, 1);
  PostTagged(*queue, 2);
  EXPECT_EQ(queue->Reserve(), nullptr);
  ASSERT_TRUE(queue->Finish(first, WorkStatus::kSuccess, 0));
  EXPECT_EQ(queue->Reserve(), nullptr) << "finished but not popped still counts";
  EXPECT_EQ(PopTags(*queue).size(), 1u);
  EXPECT_NE(queue->Reserve(), nullptr);
}

TEST(RequestQueue, AbandonedPostLeavesNoTrace) {
  auto queue = MakeQueue(4);
  const std::uint64_t kept = PostTagged(*queue, 1);
  const std::uint64_t refused = PostTagged(*queue, 2);
  queue->Abandon(refused);
  EXPECT_EQ(queue->count(), 1u);
  EXPECT_FALSE(queue->Finish(refused, WorkStatus::kSuccess, 0));
  const std::uint64_t next = PostTagged(*queue, 3);
  EXPECT_EQ(next, refused) << "the id is reused";
  ASSERT_TRUE(queue->Finish(kept, WorkStatus::kSuccess, 0));
  ASSERT_TRUE(queue->Finish(next, WorkStatus::kSuccess, 0));
  EXPECT_EQ(PopTags(*queue), (std::vector<std::uint64_t>{1, 3}));
}

TEST(RequestQueue, FlushAllKeepsFinishedStatusesAndFlushesTheRest) {
  auto queue = MakeQueue(4);
  const std::uint64_t a = PostTagged(*queue, 1);
  PostTagged(*queue, 2);
  const std::uint64_t c = PostTagged(*queue, 3);
  ASSERT_TRUE(queue->Finish(c, WorkStatus::kRemoteAccess, 0));
  ASSERT_TRUE(queue->Finish(a, WorkStatus::kSuccess, 8));
  queue->FlushAll();
  std::vector<WorkStatus> statuses;
  RequestQueue::Completion completion{};
  while (queue->PopCompletion(completion)) statuses.push_back(completion.status);
  EXPECT_EQ(statuses, (std::vector<WorkStatus>{WorkStatus::kSuccess, WorkStatus::kFlushed,
                                               WorkStatus::kRemoteAccess}));
}

TEST(RequestQueue, UnknownOrRepeatedFinishIsIgnored) {
  auto queue = MakeQueue(4);
  const std::uint64_t id = PostTagged(*queue, 1);
  EXPECT_FALSE(queue->Finish(0, WorkStatus::kSuccess, 0));
  EXPECT_FALSE(queue->Finish(id + 1, WorkStatus::kSuccess, 0));
  ASSERT_TRUE(queue->Finish(id, WorkStatus::kSuccess, 0));
  EXPECT_FALSE(queue->Finish(id, WorkStatus::kFlushed, 0)) << "exactly once";
  EXPECT_EQ(PopTags(*queue).size(), 1u);
  EXPECT_FALSE(queue->Finish(id, WorkStatus::kSuccess, 0)) << "popped";
}

// The queue takes no lock: a poster, two finishers (each finishing every id it sees, so every
// request is finished twice, in either order) and a popper at once, over a ring that wraps many
// times. Each request completes exactly once, in posting order, with the status of the Finish
// that won; a stale Finish never finishes the later request that reuses its entry. Bounded by
// count; tsan checks the ordering.
TEST(RequestQueue, PostFinishAndPopFromFourThreadsAtOnce) {
  constexpr std::uint64_t kRequests = 20000;
  auto queue = MakeQueue(8);
  std::atomic<std::uint64_t> posted{0};  // ids committed so far (ids are 1..posted)
  std::atomic<bool> popping_done{false};
  std::thread poster([&] {
    for (std::uint64_t tag = 1; tag <= kRequests;) {
      RequestQueue::Request* request = queue->Reserve();
      if (request == nullptr) {
        if (popping_done.load()) return;
        std::this_thread::yield();
        continue;
      }
      request->cookie.as_64 = tag;
      request->num_segments = 0;
      const std::uint64_t id = queue->Commit();
      EXPECT_EQ(id, tag);
      posted.store(id, std::memory_order_release);
      ++tag;
    }
  });
  // Finisher `which` finishes every id up to `posted` with a status that names it; a late one
  // sometimes goes back to an id already popped (a stale completion after a flush).
  std::atomic<std::uint64_t> won[2] = {0, 0};
  auto finisher = [&](int which) {
    const WorkStatus mine = which == 0 ? WorkStatus::kSuccess : WorkStatus::kFlushed;
    for (std::uint64_t id = 1; id <= kRequests;) {
      if (id > posted.load(std::memory_order_acquire)) {
        if (popping_done.load()) return;
        std::this_thread::yield();
        continue;
      }
      if (queue->Finish(id, mine, static_cast<std::uint32_t>(id))) won[which].fetch_add(1);
      if (id > 20 && id % 7 == 0) {
        EXPECT_FALSE(queue->Finish(id - 20, mine, 0)) << "popped long ago";
      }
      ++id;
    }
  };
  std::thread first(finisher, 0), second(finisher, 1);
  std::uint64_t expected = 1;
  std::uint64_t spins = 0;
  RequestQueue::Completion completion{};
  while (expected <= kRequests && ++spins < 2'000'000'000) {
    if (!queue->PopCompletion(completion)) continue;
    ASSERT_EQ(completion.cookie.as_64, expected) << "in posting order, each once";
    EXPECT_TRUE(completion.status == WorkStatus::kSuccess || completion.status == WorkStatus::kFlushed);
    EXPECT_EQ(completion.length, expected) << "the winning Finish's length";
    ++expected;
  }
  popping_done.store(true);
  poster.join();
  first.join();
  second.join();
  EXPECT_EQ(expected, kRequests + 1) << "every request completed";
  EXPECT_EQ(won[0].load() + won[1].load(), kRequests) << "one Finish won each";
  EXPECT_EQ(queue->count(), 0u);
}

}  // namespace
}  // namespace softdat::core
