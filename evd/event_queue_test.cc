// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EventQueue without waiting: FIFO delivery, empty and full rings, overflow reporting, software
// events, queue lengths and resize.
#include "evd/event_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "evd/test_support.h"

namespace softdat::evd {
namespace {

using testing::MakeEvent;
using testing::NewQueue;
using testing::QueuedEvents;
using testing::SeqOf;

TEST(EventQueue, PostDequeueFifo) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  std::uint64_t next_post = 0;
  std::uint64_t next_take = 0;
  // Several rounds of uneven batches so the ring wraps more than once.
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 6; ++i) {
      DAT_EVENT event = MakeEvent(round, next_post++);
      event.event_extension_data[7] = 0xabcdef00 + next_post;  // the whole event is copied
      ASSERT_EQ(queue->Post(event), Status::Ok());
    }
    for (int i = 0; i < 6; ++i) {
      DAT_EVENT expected = MakeEvent(round, next_take++);
      expected.event_extension_data[7] = 0xabcdef00 + next_take;
      DAT_EVENT event{};
      ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
      EXPECT_EQ(std::memcmp(&event, &expected, sizeof(DAT_EVENT)), 0) << "event " << next_take - 1;
    }
  }
  EXPECT_EQ(QueuedEvents(*queue), 0u);
}

TEST(EventQueue, DequeueEmptyIsQueueEmpty) {
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  DAT_EVENT event = MakeEvent(9, 99);
  EXPECT_EQ(queue->Dequeue(&event), Status(Code::kQueueEmpty));
  EXPECT_EQ(SeqOf(event), 99u);  // output untouched on failure
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
  EXPECT_EQ(queue->Dequeue(&event), Status(Code::kQueueEmpty));
  EXPECT_EQ(queue->Dequeue(nullptr), Status(Code::kInvalidParameter, Detail::kParamEvent));
}

// A dequeue that finds the ring empty returns without the lock; events posted by another thread
// meanwhile are all found by later dequeues, in order, none twice, and the count ends at zero.
TEST(EventQueue, ASpinningDequeueFindsEveryEventAnotherThreadPosts) {
  constexpr std::uint64_t kEvents = 20000;
  auto queue = NewQueue(64);
  ASSERT_NE(queue, nullptr);
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < kEvents;) {
      if (queue->Post(MakeEvent(1, i)) == Status::Ok()) {
        ++i;
      } else {
        std::this_thread::yield();  // full: the consumer is behind
      }
    }
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::uint64_t next = 0;
  while (next < kEvents && std::chrono::steady_clock::now() < give_up) {
    DAT_EVENT event{};
    const Status status = queue->Dequeue(&event);
    if (status.code() == Code::kQueueEmpty) continue;
    ASSERT_EQ(status, Status::Ok());
    ASSERT_EQ(SeqOf(event), next) << "out of order or repeated";
    ++next;
  }
  producer.join();
  EXPECT_EQ(next, kEvents);
  EXPECT_EQ(QueuedEvents(*queue), 0u);
  DAT_EVENT none{};
  EXPECT_EQ(queue->Dequeue(&none).code(), Code::kQueueEmpty);
}

TEST(EventQueue, PostWhenFullOverflowsOnceAndKeepsOldEvents) {
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  ASSERT_EQ(queue->Query().qlen, 4);
  for (std::uint64_t seq = 1; seq <= 4; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  EXPECT_FALSE(queue->TakeOverflow());
  EXPECT_FALSE(queue->Query().overflowed);

  EXPECT_EQ(queue->Post(MakeEvent(0, 5)), Status(Code::kQueueFull));
  EXPECT_EQ(queue->Post(MakeEvent(0, 6)), Status(Code::kQueueFull));
  EXPECT_TRUE(queue->TakeOverflow());   // one report for the episode...
  EXPECT_FALSE(queue->TakeOverflow());  // ...not one per dropped event
  EXPECT_EQ(queue->Post(MakeEvent(0, 7)), Status(Code::kQueueFull));
  EXPECT_FALSE(queue->TakeOverflow());  // still the same episode
  EXPECT_TRUE(queue->Query().overflowed);
  EXPECT_EQ(QueuedEvents(*queue), 4u);

  // The queued events are the first four, intact; the dropped ones never appear.
  for (std::uint64_t seq = 1; seq <= 4; ++seq) {
    DAT_EVENT event{};
    ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
    EXPECT_EQ(SeqOf(event), seq);
  }

  // The queue keeps working; a Post that fits ends the episode, so a new drop reports again.
  for (std::uint64_t seq = 8; seq <= 11; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  EXPECT_EQ(queue->Post(MakeEvent(0, 12)), Status(Code::kQueueFull));
  EXPECT_TRUE(queue->TakeOverflow());
  EXPECT_TRUE(queue->Query().overflowed);  // sticky: the EVD was in error
}

TEST(EventQueue, PostSoftwareWhenFullIsRefusedWithoutOverflow) {
  auto queue = NewQueue(2);
  ASSERT_NE(queue, nullptr);
  DAT_EVENT not_software = MakeEvent(0, 1);
  not_software.event_number = DAT_DTO_COMPLETION_EVENT;
  EXPECT_EQ(queue->PostSoftware(not_software), Status(Code::kInvalidParameter, Detail::kParamEvent));
  EXPECT_EQ(QueuedEvents(*queue), 0u);

  ASSERT_EQ(queue->PostSoftware(MakeEvent(0, 1)), Status::Ok());
  ASSERT_EQ(queue->PostSoftware(MakeEvent(0, 2)), Status::Ok());
  EXPECT_EQ(queue->PostSoftware(MakeEvent(0, 3)), Status(Code::kQueueFull));
  EXPECT_FALSE(queue->TakeOverflow());
  EXPECT_FALSE(queue->Query().overflowed);
  EXPECT_EQ(QueuedEvents(*queue), 2u);
}

TEST(EventQueue, QlenRoundsUpToPowerOfTwoWithinLimits) {
  auto queue = NewQueue(5);
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ(queue->Query().qlen, 8);
  for (std::uint64_t seq = 0; seq < 8; ++seq) EXPECT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  EXPECT_EQ(queue->Post(MakeEvent(0, 8)), Status(Code::kQueueFull));

  std::unique_ptr<EventQueue> out;
  EXPECT_EQ(EventQueue::Create(0, &out), Status(Code::kInvalidParameter, Detail::kParamQlen));
  EXPECT_EQ(EventQueue::Create(-3, &out), Status(Code::kInvalidParameter, Detail::kParamQlen));
  EXPECT_EQ(EventQueue::Create(EventQueue::kMaxQueueLength + 1, &out),
            Status(Code::kInvalidParameter, Detail::kParamQlen));
  EXPECT_EQ(out, nullptr);  // output set only on success
  ASSERT_EQ(EventQueue::Create(1, &out), Status::Ok());
  EXPECT_EQ(out->Query().qlen, 1);
}

TEST(EventQueue, ResizeBelowCountIsInvalidState) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  for (std::uint64_t seq = 1; seq <= 5; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  EXPECT_EQ(queue->Resize(4), Status(Code::kInvalidState));
  EXPECT_EQ(queue->Resize(0), Status(Code::kInvalidParameter, Detail::kParamQlen));
  EXPECT_EQ(queue->Resize(EventQueue::kMaxQueueLength + 1),
            Status(Code::kInvalidParameter, Detail::kParamQlen));
  EXPECT_EQ(queue->Query().qlen, 8);  // failed resizes change nothing
  EXPECT_EQ(QueuedEvents(*queue), 5u);
  EXPECT_EQ(queue->Resize(5), Status::Ok());  // exactly the queued count fits
  for (std::uint64_t seq = 1; seq <= 5; ++seq) {
    DAT_EVENT event{};
    ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
    EXPECT_EQ(SeqOf(event), seq);
  }
}

TEST(EventQueue, GrowNeverShrinksAndKeepsOrder) {
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  DAT_EVENT event{};
  // Wrap the ring: head at 2, events 3..6 queued.
  for (std::uint64_t seq = 1; seq <= 4; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
  ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
  for (std::uint64_t seq = 5; seq <= 6; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  EXPECT_EQ(queue->Grow(2), Status::Ok());  // already room: nothing changes
  EXPECT_EQ(queue->Query().qlen, 4);
  EXPECT_EQ(queue->Grow(0), Status(Code::kInvalidParameter, Detail::kParamQlen));
  EXPECT_EQ(queue->Grow(EventQueue::kMaxQueueLength + 1), Status(Code::kInvalidParameter, Detail::kParamQlen));
  EXPECT_EQ(queue->Grow(6), Status::Ok());
  EXPECT_EQ(queue->Query().qlen, 8);
  for (std::uint64_t seq = 7; seq <= 10; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  for (std::uint64_t seq = 3; seq <= 10; ++seq) {
    ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
    EXPECT_EQ(SeqOf(event), seq);
  }
}

TEST(EventQueue, ResizeKeepsOrder) {
  // Grow a wrapped ring.
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  DAT_EVENT event{};
  for (std::uint64_t seq = 1; seq <= 3; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  for (std::uint64_t seq = 1; seq <= 2; ++seq) ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
  for (std::uint64_t seq = 4; seq <= 6; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  ASSERT_EQ(queue->Resize(16), Status::Ok());
  EXPECT_EQ(queue->Query().qlen, 16);
  for (std::uint64_t seq = 7; seq <= 18; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  EXPECT_EQ(queue->Post(MakeEvent(0, 19)), Status(Code::kQueueFull));
  for (std::uint64_t seq = 3; seq <= 18; ++seq) {
    ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
    EXPECT_EQ(SeqOf(event), seq);
  }

  // Shrink a wrapped ring: 16 entries, head moved to 12, six events spanning the end.
  queue = NewQueue(16);
  ASSERT_NE(queue, nullptr);
  for (std::uint64_t seq = 1; seq <= 14; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  for (std::uint64_t seq = 1; seq <= 12; ++seq) ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
  for (std::uint64_t seq = 15; seq <= 18; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  ASSERT_EQ(queue->Resize(6), Status::Ok());
  EXPECT_EQ(queue->Query().qlen, 8);
  EXPECT_EQ(QueuedEvents(*queue), 6u);
  for (std::uint64_t seq = 19; seq <= 20; ++seq) ASSERT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  EXPECT_EQ(queue->Post(MakeEvent(0, 21)), Status(Code::kQueueFull));  // the new length holds
  for (std::uint64_t seq = 13; seq <= 20; ++seq) {
    ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
    EXPECT_EQ(SeqOf(event), seq);
  }
  EXPECT_EQ(queue->Dequeue(&event), Status(Code::kQueueEmpty));
}

TEST(EventQueue, EnableDisableAndWaitableShowInQuery) {
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  EventQueueInfo info = queue->Query();
  EXPECT_TRUE(info.enabled);
  EXPECT_TRUE(info.waitable);
  EXPECT_FALSE(info.waiter);
  EXPECT_EQ(info.cno, nullptr);
  queue->Disable();
  queue->SetUnwaitable();
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());  // a disabled EVD still queues
  info = queue->Query();
  EXPECT_FALSE(info.enabled);
  EXPECT_FALSE(info.waitable);
  EXPECT_EQ(info.count, 1);
  DAT_EVENT event{};
  EXPECT_EQ(queue->Dequeue(&event), Status::Ok());  // and can be dequeued
  queue->Enable();
  queue->ClearUnwaitable();
  info = queue->Query();
  EXPECT_TRUE(info.enabled);
  EXPECT_TRUE(info.waitable);
}

}  // namespace
}  // namespace softdat::evd
