// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EventQueue with a CompletionSource (a device CQ behind a DTO EVD): dequeue polls it straight
// into the consumer's event and queues the rest of the batch, never more than the ring holds; a
// waiter arms it and sleeps on its descriptor, woken by a completion, a Post or set_unwaitable;
// a CNO makes the source watched.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

#include "evd/cno.h"
#include "evd/completion_source.h"
#include "evd/event_queue.h"
#include "evd/progress_hook.h"
#include "evd/test_support.h"

namespace softdat::evd {
namespace {

using testing::Eventually;
using testing::kLongTimeoutUs;
using testing::MakeEvent;
using testing::NewQueue;
using testing::ProducerOf;
using testing::QueuedEvents;
using testing::SeqOf;

// A completion queue in memory: each completion Posts one event to its queue when polled. Armed,
// the next completion makes the eventfd readable (once), like ibv_req_notify_cq.
class FakeSource final : public CompletionSource {
 public:
  explicit FakeSource(EventQueue& queue) : queue_(queue), fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~FakeSource() { close(fd_); }

  void Complete(std::uint64_t seq) {
    std::lock_guard lock(mutex_);
    pending_.push_back(seq);
    if (armed_) {
      armed_ = false;
      const std::uint64_t one = 1;
      [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
    }
  }

  std::uint32_t Poll(std::uint32_t max) noexcept override {
    polls_.fetch_add(1);
    std::uint32_t taken = 0;
    for (; taken < max; ++taken) {
      std::uint64_t seq;
      {
        std::lock_guard lock(mutex_);
        if (pending_.empty()) break;
        seq = pending_.front();
        pending_.pop_front();
      }
      largest_batch_ = std::max(largest_batch_.load(), max);
      (void)queue_.Post(MakeEvent(1, seq));  // outside the source's lock, as a transport reports
    }
    return taken;
  }
  void Arm() noexcept override {
    std::lock_guard lock(mutex_);
    armed_ = true;
    arms_.fetch_add(1);
  }
  int wait_fd() const noexcept override { return fd_; }
  void TakeNotifications() noexcept override {
    std::uint64_t count;
    [[maybe_unused]] ssize_t n = read(fd_, &count, sizeof count);
  }
  void SetWatched(bool watched) noexcept override { watched_ = watched; }

  std::size_t pending() {
    std::lock_guard lock(mutex_);
    return pending_.size();
  }

  std::atomic<int> polls_{0};
  std::atomic<int> arms_{0};
  std::atomic<std::uint32_t> largest_batch_{0};
  std::atomic<bool> watched_{false};

 private:
  EventQueue& queue_;
  int fd_;
  std::mutex mutex_;
  std::deque<std::uint64_t> pending_;
  bool armed_ = false;
};

// A queue of `qlen` entries with a FakeSource behind it, and a waiter thread when a test wants one.
class EventQueueSource : public ::testing::Test {
 protected:
  void Attach(DAT_COUNT qlen, EventQueue* completes_to = nullptr) {
    queue_ = NewQueue(qlen);
    source_ = std::make_unique<FakeSource>(completes_to != nullptr ? *completes_to : *queue_);
    ASSERT_EQ(queue_->SetCompletionSource(source_.get()), Status::Ok());
  }
  // Starts Wait(threshold) on another thread and returns once it sleeps on the source.
  void StartWaiter(DAT_COUNT threshold) {
    waiter_ = std::thread([this, threshold] { status_ = queue_->Wait(kLongTimeoutUs, threshold, &event_, &nmore_); });
    ASSERT_TRUE(Eventually([&] { return source_->arms_.load() > 0 && queue_->Query().waiter; }));
  }
  // The waiter left Wait and its thread stored what Wait returned (joined: status_ and event_
  // are written by that thread after Wait clears the waiter flag).
  bool WaiterReturned() {
    if (!Eventually([&] { return !queue_->Query().waiter; })) return false;
    waiter_.join();
    return true;
  }
  void TearDown() override {
    if (waiter_.joinable()) {
      queue_->SetUnwaitable();  // releases the waiter if an assertion bailed out early
      waiter_.join();
    }
    if (queue_ != nullptr) {
      EXPECT_EQ(queue_->SetCompletionSource(nullptr), Status::Ok());
    }
  }

  std::unique_ptr<EventQueue> queue_;
  std::unique_ptr<FakeSource> source_;
  std::thread waiter_;
  Status status_{Code::kInternal};
  DAT_EVENT event_{};
  DAT_COUNT nmore_ = -1;
};

TEST_F(EventQueueSource, DequeueTakesACompletionStraightIntoTheEvent) {
  Attach(8);
  DAT_EVENT event{};
  EXPECT_EQ(queue_->Dequeue(&event).code(), Code::kQueueEmpty);  // nothing completed: empty
  source_->Complete(7);
  ASSERT_EQ(queue_->Dequeue(&event), Status::Ok());
  EXPECT_EQ(SeqOf(event), 7u);
  EXPECT_EQ(QueuedEvents(*queue_), 0u);
  EXPECT_EQ(source_->pending(), 0u);
}

TEST_F(EventQueueSource, DequeueQueuesTheRestOfTheBatchInOrder) {
  Attach(8);
  for (std::uint64_t seq = 1; seq <= 5; ++seq) source_->Complete(seq);
  DAT_EVENT event{};
  ASSERT_EQ(queue_->Dequeue(&event), Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
  EXPECT_EQ(QueuedEvents(*queue_), 4u);  // one poll brought the whole burst
  const int polls = source_->polls_.load();
  for (std::uint64_t seq = 2; seq <= 5; ++seq) {
    ASSERT_EQ(queue_->Dequeue(&event), Status::Ok());
    EXPECT_EQ(SeqOf(event), seq);
  }
  EXPECT_EQ(source_->polls_.load(), polls);  // the ring answered: no poll while it held events
}

// The EVD's posted-event counters (DCNT_EVD_DTO_CALLBACK and the rest) count the completion
// written straight into the dequeue as well as those queued behind it.
TEST_F(EventQueueSource, EveryPolledCompletionIsCountedAsPosted) {
  Attach(8);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) source_->Complete(seq);
  DAT_EVENT event{};
  ASSERT_EQ(queue_->Dequeue(&event), Status::Ok());
  EXPECT_EQ(QueuedEvents(*queue_), 2u);
  EXPECT_EQ(queue_->Tally(false).other_posted, 3u);
  EXPECT_EQ(queue_->Tally(true).other_posted, 3u);
  EXPECT_EQ(queue_->Tally(false).other_posted, 0u) << "reset";
}

TEST_F(EventQueueSource, APollNeverBringsInMoreThanTheRingHolds) {
  Attach(4);
  for (std::uint64_t seq = 1; seq <= 40; ++seq) source_->Complete(seq);
  DAT_EVENT event{};
  for (std::uint64_t seq = 1; seq <= 40; ++seq) {
    ASSERT_EQ(queue_->Dequeue(&event), Status::Ok()) << seq;
    EXPECT_EQ(SeqOf(event), seq);
  }
  EXPECT_LE(source_->largest_batch_.load(), 5u);  // the ring's 4 and the one taken at once
  EXPECT_FALSE(queue_->Query().overflowed);
  EXPECT_EQ(queue_->Dequeue(&event).code(), Code::kQueueEmpty);
}

TEST_F(EventQueueSource, AnEventForAnotherQueueIsNotTaken) {
  auto other = NewQueue(4);
  // A source whose completions belong to another EVD (a poll reports them to their endpoints,
  // which may deliver anywhere).
  Attach(4, other.get());
  source_->Complete(3);
  DAT_EVENT event = MakeEvent(9, 9);
  EXPECT_EQ(queue_->Dequeue(&event).code(), Code::kQueueEmpty);
  EXPECT_EQ(ProducerOf(event), 9u);  // untouched
  EXPECT_EQ(QueuedEvents(*other), 1u);
}

TEST_F(EventQueueSource, AWaiterSleepsOnTheSourceAndACompletionWakesIt) {
  Attach(8);
  // No progress hook: the waiter arms the source at once and sleeps on its descriptor.
  StartWaiter(1);
  source_->Complete(11);
  ASSERT_TRUE(WaiterReturned());
  EXPECT_EQ(status_, Status::Ok());
  EXPECT_EQ(SeqOf(event_), 11u);
  EXPECT_EQ(nmore_, 0);
}

TEST_F(EventQueueSource, APostFromAnotherThreadWakesAWaiterSleepingOnTheSource) {
  Attach(8);
  StartWaiter(1);
  // A connection event, or a completion a transport's progress polled: through the ring.
  ASSERT_EQ(queue_->Post(MakeEvent(2, 5)), Status::Ok());
  ASSERT_TRUE(WaiterReturned());
  EXPECT_EQ(status_, Status::Ok());
  EXPECT_EQ(ProducerOf(event_), 2u);
}

TEST_F(EventQueueSource, SetUnwaitableInterruptsAWaiterSleepingOnTheSource) {
  Attach(8);
  StartWaiter(1);
  queue_->SetUnwaitable();
  waiter_.join();
  EXPECT_EQ(status_.code(), Code::kInterrupted);
}

TEST_F(EventQueueSource, AThresholdWaitGathersCompletionsInTheRing) {
  Attach(8);
  StartWaiter(3);
  source_->Complete(1);
  source_->Complete(2);
  ASSERT_TRUE(Eventually([&] { return QueuedEvents(*queue_) == 2; }));
  EXPECT_TRUE(queue_->Query().waiter);  // two of three
  source_->Complete(3);
  ASSERT_TRUE(WaiterReturned());
  EXPECT_EQ(status_, Status::Ok());
  EXPECT_EQ(SeqOf(event_), 1u);
  EXPECT_EQ(nmore_, 2);
}

TEST_F(EventQueueSource, AWaitTimesOutWhileSleepingOnTheSource) {
  Attach(8);
  DAT_EVENT event{};
  EXPECT_EQ(queue_->Wait(20'000, 1, &event, nullptr).code(), Code::kTimeout);
  EXPECT_GT(source_->arms_.load(), 0);
}

// A transport that never moves, each call taking a while; should a waiter still spin at its
// kRescueCall-th call (far past any timeout below), it posts an event so that the test fails
// instead of hanging.
class IdleHook final : public ProgressHook {
 public:
  static constexpr int kRescueCall = 4000;  // 50 us each: at least 200 ms
  IdleHook(EventQueue& queue, std::uint32_t spin) : queue_(queue), spin_(spin) {}
  bool Progress() noexcept override {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (++calls == kRescueCall) {
      EXPECT_EQ(queue_.Post(MakeEvent(0, 77)), Status::Ok());
    }
    return false;
  }
  bool ProgressDue() const noexcept override { return false; }
  std::uint32_t spin_us() const noexcept override { return spin_; }
  void Pause() noexcept override { ++pauses; }

  int calls = 0;
  int pauses = 0;

 private:
  EventQueue& queue_;
  std::uint32_t spin_;
};

// Regression: a spinning waiter counted its idle turns (which bring the clock: the timeout, the
// spin's end) only without a completion source, so a waiter on a device's EVD never timed out
// and never handed over: stock consumers on rxe and siw hung in dat_evd_wait.
TEST_F(EventQueueSource, ASpinningWaiterWithASourceTimesOutAndHandsOver) {
  Attach(8);
  DAT_EVENT event{};
  IdleHook busy(*queue_, 0);  // busy-poll: spins until the timeout
  queue_->SetProgressHook(&busy);
  EXPECT_EQ(queue_->Wait(2'000, 1, &event, nullptr).code(), Code::kTimeout);
  EXPECT_LT(busy.calls, IdleHook::kRescueCall);

  IdleHook spinning(*queue_, 1'000);  // the default mode: spins 1 ms, hands over, sleeps
  queue_->SetProgressHook(&spinning);
  EXPECT_EQ(queue_->Wait(50'000, 1, &event, nullptr).code(), Code::kTimeout);
  EXPECT_LT(spinning.calls, IdleHook::kRescueCall);
  EXPECT_EQ(spinning.pauses, 1);
  queue_->SetProgressHook(nullptr);
}

TEST_F(EventQueueSource, ACnoMakesTheSourceWatched) {
  Attach(8);
  Cno cno(DAT_OS_WAIT_PROXY_AGENT{});
  EXPECT_FALSE(source_->watched_.load());
  queue_->SetCno(&cno);
  EXPECT_TRUE(source_->watched_.load());
  queue_->SetCno(nullptr);
  EXPECT_FALSE(source_->watched_.load());
}

}  // namespace
}  // namespace softdat::evd
