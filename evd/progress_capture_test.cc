// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A consumer that moves the transport on its own thread (a dequeue that found the ring empty, a
// spinning waiter) gets the first event its progress makes written in place: never ahead of an
// event already queued, never for a queue with a CNO, the rest of a burst queued in order, and
// every event counted as posted either way.
#include <gtest/gtest.h>

#include <functional>

#include "evd/cno.h"
#include "evd/event_queue.h"
#include "evd/progress_hook.h"
#include "evd/test_support.h"

namespace softdat::evd {
namespace {

using testing::kLongTimeoutUs;
using testing::MakeEvent;
using testing::NewQueue;
using testing::QueuedEvents;
using testing::SeqOf;

// Posts `burst` events (seq first_seq, first_seq + 1, ...) on its first call, as a transport's
// poll that finds completions; then `after_post` sees the queue as the poster left it.
class BurstHook final : public ProgressHook {
 public:
  BurstHook(EventQueue& queue, int burst, std::uint64_t first_seq = 1)
      : queue_(queue), burst_(burst), first_seq_(first_seq) {}

  bool Progress() noexcept override {
    if (++calls > 1) return false;
    for (int i = 0; i < burst_; ++i)
      EXPECT_EQ(queue_.Post(MakeEvent(0, first_seq_ + static_cast<std::uint64_t>(i))), Status::Ok());
    if (after_post) after_post();
    return burst_ > 0;
  }
  bool ProgressDue() const noexcept override { return false; }
  std::uint32_t spin_us() const noexcept override { return 0; }
  void Pause() noexcept override {}

  int calls = 0;
  std::function<void()> after_post;

 private:
  EventQueue& queue_;
  int burst_;
  std::uint64_t first_seq_;
};

TEST(ProgressCapture, TheFirstEventGoesInPlaceAndTheRestQueueInOrder) {
  auto queue = NewQueue(8);
  BurstHook hook(*queue, 3);
  DAT_EVENT event{};
  bool moved = false;
  ASSERT_TRUE(queue->ProgressInto(hook, &event, moved));
  EXPECT_TRUE(moved);
  EXPECT_EQ(SeqOf(event), 1u);
  EXPECT_EQ(QueuedEvents(*queue), 2u);
  for (std::uint64_t seq = 2; seq <= 3; ++seq) {
    ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
    EXPECT_EQ(SeqOf(event), seq);
  }
  EXPECT_EQ(queue->Tally(false).other_posted, 3u) << "the event written in place was posted too";
}

TEST(ProgressCapture, AnEventAlreadyQueuedIsReturnedFirst) {
  auto queue = NewQueue(8);
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  BurstHook hook(*queue, 1, 2);
  DAT_EVENT event{};
  bool moved = false;
  EXPECT_FALSE(queue->ProgressInto(hook, &event, moved));
  EXPECT_TRUE(moved);
  ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
  ASSERT_EQ(queue->Dequeue(&event), Status::Ok());
  EXPECT_EQ(SeqOf(event), 2u);
}

TEST(ProgressCapture, NothingMadeNothingTaken) {
  auto queue = NewQueue(8);
  BurstHook hook(*queue, 0);
  DAT_EVENT event{};
  bool moved = true;
  EXPECT_FALSE(queue->ProgressInto(hook, &event, moved));
  EXPECT_FALSE(moved);
  EXPECT_EQ(QueuedEvents(*queue), 0u);
}

TEST(ProgressCapture, AQueueWithACnoQueuesTheEventAndTriggersIt) {
  auto queue = NewQueue(8);
  Cno cno;
  queue->SetCno(&cno);
  BurstHook hook(*queue, 1);
  DAT_EVENT event{};
  bool moved = false;
  EXPECT_FALSE(queue->ProgressInto(hook, &event, moved));
  EXPECT_EQ(QueuedEvents(*queue), 1u);
  EXPECT_EQ(cno.Take(), queue.get()) << "a signalled event of a queue with a CNO triggers it";
  queue->SetCno(nullptr);
}

// dat_evd_wait's spin (busy-poll: the waiter drives the transport) takes the event its own
// progress made without it passing through the ring.
TEST(ProgressCapture, ASpinningWaiterTakesItsOwnProgresssEventInPlace) {
  auto queue = NewQueue(8);
  BurstHook hook(*queue, 1, 7);
  std::size_t queued_after_post = 99;
  hook.after_post = [&] { queued_after_post = QueuedEvents(*queue); };
  queue->SetProgressHook(&hook);
  DAT_EVENT event{};
  DAT_COUNT nmore = -1;
  ASSERT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, &nmore), Status::Ok());
  EXPECT_EQ(SeqOf(event), 7u);
  EXPECT_EQ(nmore, 0);
  EXPECT_EQ(queued_after_post, 0u) << "the event went straight to the waiter";
  queue->SetProgressHook(nullptr);
}

// A threshold wait gathers its events in the ring: none is taken ahead of the others.
TEST(ProgressCapture, AThresholdWaiterGathersInTheRing) {
  auto queue = NewQueue(8);
  BurstHook hook(*queue, 2);
  std::size_t queued_after_post = 99;
  hook.after_post = [&] { queued_after_post = QueuedEvents(*queue); };
  queue->SetProgressHook(&hook);
  DAT_EVENT event{};
  DAT_COUNT nmore = -1;
  ASSERT_EQ(queue->Wait(kLongTimeoutUs, 2, &event, &nmore), Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
  EXPECT_EQ(nmore, 1);
  EXPECT_EQ(queued_after_post, 2u);
  queue->SetProgressHook(nullptr);
}

}  // namespace
}  // namespace softdat::evd
