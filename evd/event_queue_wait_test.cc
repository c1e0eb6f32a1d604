// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EventQueue::Wait: thresholds, timeouts, the one-waiter rule, unwaitable and interruption,
// and busy-poll mode through a ProgressHook.
#include <gtest/gtest.h>

#include <functional>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "evd/event_queue.h"
#include "evd/progress_hook.h"
#include "evd/test_support.h"

namespace softdat::evd {
namespace {

using std::chrono::steady_clock;
using testing::Eventually;
using testing::Finally;
using testing::kLongTimeoutUs;
using testing::MakeEvent;
using testing::NewQueue;
using testing::QueuedEvents;
using testing::SeqOf;

// Outputs start as sentinels so a test sees whether a failing call touched them.
constexpr std::uint64_t kUntouchedSeq = 0xdead;
constexpr DAT_COUNT kUntouchedCount = -7;

TEST(EventQueue, WaitReturnsWhenThresholdReached) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  std::atomic<bool> returned{false};
  Status status(Code::kInternal);
  DAT_EVENT event = MakeEvent(0, kUntouchedSeq);
  DAT_COUNT nmore = kUntouchedCount;
  std::thread consumer([&] {
    status = queue->Wait(kLongTimeoutUs, 3, &event, &nmore);
    returned = true;
  });
  Finally join([&] {
    queue->SetUnwaitable();  // releases the consumer if an assertion below bailed out early
    consumer.join();
  });
  ASSERT_TRUE(Eventually([&] { return queue->Query().waiter; }));
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  ASSERT_EQ(queue->Post(MakeEvent(0, 2)), Status::Ok());
  // Below the threshold the waiter must still be there (a premature return is also caught by
  // nmore below, whatever the interleaving).
  EXPECT_TRUE(queue->Query().waiter);
  EXPECT_FALSE(returned.load());
  ASSERT_EQ(queue->Post(MakeEvent(0, 3)), Status::Ok());
  ASSERT_TRUE(Eventually([&] { return returned.load(); }));
  EXPECT_EQ(status, Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);  // the oldest event
  EXPECT_EQ(nmore, 2);          // the two that remain
  EXPECT_EQ(QueuedEvents(*queue), 2u);
}

TEST(EventQueue, WaitTimesOut) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  DAT_EVENT event = MakeEvent(0, kUntouchedSeq);
  DAT_COUNT nmore = kUntouchedCount;

  auto start = steady_clock::now();
  EXPECT_EQ(queue->Wait(50'000, 1, &event, &nmore), Status(Code::kTimeout));
  EXPECT_GE(steady_clock::now() - start, std::chrono::milliseconds(50));

  // Events below the threshold do not end the wait and stay queued.
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  start = steady_clock::now();
  EXPECT_EQ(queue->Wait(20'000, 2, &event, &nmore), Status(Code::kTimeout));
  EXPECT_GE(steady_clock::now() - start, std::chrono::milliseconds(20));
  EXPECT_EQ(QueuedEvents(*queue), 1u);
  EXPECT_EQ(SeqOf(event), kUntouchedSeq);
  EXPECT_EQ(nmore, kUntouchedCount);
  EXPECT_FALSE(queue->Query().waiter);  // a timed-out waiter is gone
}

TEST(EventQueue, WaitZeroTimeoutPolls) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  DAT_EVENT event = MakeEvent(0, kUntouchedSeq);
  DAT_COUNT nmore = kUntouchedCount;
  EXPECT_EQ(queue->Wait(0, 1, &event, &nmore), Status(Code::kTimeout));
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  EXPECT_EQ(queue->Wait(0, 2, &event, &nmore), Status(Code::kTimeout));
  EXPECT_EQ(SeqOf(event), kUntouchedSeq);
  ASSERT_EQ(queue->Post(MakeEvent(0, 2)), Status::Ok());
  EXPECT_EQ(queue->Wait(0, 2, &event, &nmore), Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
  EXPECT_EQ(nmore, 1);
  EXPECT_EQ(queue->Wait(0, 1, &event, nullptr), Status::Ok());  // nmore is optional
  EXPECT_EQ(SeqOf(event), 2u);
  EXPECT_EQ(QueuedEvents(*queue), 0u);
}

TEST(EventQueue, WaitThresholdAboveQlenIsInvalid) {
  auto queue = NewQueue(5);  // actual qlen 8
  ASSERT_NE(queue, nullptr);
  DAT_EVENT event{};
  DAT_COUNT nmore = 0;
  const Status bad_threshold(Code::kInvalidParameter, Detail::kParamThreshold);
  EXPECT_EQ(queue->Wait(0, 9, &event, &nmore), bad_threshold);
  EXPECT_EQ(queue->Wait(0, 0, &event, &nmore), bad_threshold);
  EXPECT_EQ(queue->Wait(0, -1, &event, &nmore), bad_threshold);
  EXPECT_EQ(queue->Wait(0, 8, &event, &nmore), Status(Code::kTimeout));  // the actual qlen is valid
  EXPECT_EQ(queue->Wait(0, 1, nullptr, &nmore), Status(Code::kInvalidParameter, Detail::kParamEvent));
  // The threshold is checked against the length in force after a resize.
  ASSERT_EQ(queue->Resize(16), Status::Ok());
  EXPECT_EQ(queue->Wait(0, 9, &event, &nmore), Status(Code::kTimeout));
}

TEST(EventQueue, SecondWaiterIsInvalidState) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  Status first(Code::kInternal);
  DAT_EVENT first_event{};
  std::thread waiter([&] { first = queue->Wait(DAT_TIMEOUT_INFINITE, 1, &first_event, nullptr); });
  Finally join([&] {  // releases the waiter if an assertion below bailed out early
    if (!waiter.joinable()) return;
    queue->SetUnwaitable();
    waiter.join();
  });
  ASSERT_TRUE(Eventually([&] { return queue->Query().waiter; }));
  DAT_EVENT event = MakeEvent(0, kUntouchedSeq);
  EXPECT_EQ(queue->Wait(0, 1, &event, nullptr), Status(Code::kInvalidState, Detail::kEvdWaiter));
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, nullptr),
            Status(Code::kInvalidState, Detail::kEvdWaiter));
  EXPECT_EQ(SeqOf(event), kUntouchedSeq);
  // The first waiter is unaffected and gets the next event.
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  ASSERT_TRUE(Eventually([&] { return !queue->Query().waiter; }));
  waiter.join();
  EXPECT_EQ(first, Status::Ok());
  EXPECT_EQ(SeqOf(first_event), 1u);
}

TEST(EventQueue, WaiterBlocksResizeAndFree) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ(queue->CheckFree(), Status::Ok());
  Status waited(Code::kInternal);
  std::thread waiter([&] {
    DAT_EVENT event{};
    waited = queue->Wait(kLongTimeoutUs, 8, &event, nullptr);
  });
  Finally join([&] {  // releases the waiter if an assertion below bailed out early
    if (!waiter.joinable()) return;
    queue->SetUnwaitable();
    waiter.join();
  });
  ASSERT_TRUE(Eventually([&] { return queue->Query().waiter; }));
  // Shrinking below the waiter's threshold would strand it; freeing would pull the ring away.
  EXPECT_EQ(queue->Resize(4), Status(Code::kInvalidState, Detail::kEvdWaiter));
  EXPECT_EQ(queue->Query().qlen, 8);
  EXPECT_EQ(queue->CheckFree(), Status(Code::kInvalidState, Detail::kEvdInUse));
  queue->SetUnwaitable();
  waiter.join();
  EXPECT_EQ(waited, Status(Code::kInterrupted));
  EXPECT_EQ(queue->CheckFree(), Status::Ok());
  EXPECT_EQ(queue->Resize(4), Status::Ok());
}

TEST(EventQueue, GrowWhileAThreadWaitsKeepsEventsAndWakesTheWaiter) {
  // Core grows the async EVD while the consumer may wait on it (one entry per SRQ EP).
  auto queue = NewQueue(2);
  ASSERT_NE(queue, nullptr);
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  Status waited(Code::kInternal);
  DAT_EVENT event{};
  std::thread waiter([&] { waited = queue->Wait(kLongTimeoutUs, 2, &event, nullptr); });
  Finally join([&] {
    if (!waiter.joinable()) return;
    queue->SetUnwaitable();
    waiter.join();
  });
  ASSERT_TRUE(Eventually([&] { return queue->Query().waiter; }));
  EXPECT_EQ(queue->Grow(5), Status::Ok());
  EXPECT_EQ(queue->Query().qlen, 8);
  for (std::uint64_t seq = 2; seq <= 8; ++seq) EXPECT_EQ(queue->Post(MakeEvent(0, seq)), Status::Ok());
  waiter.join();
  EXPECT_EQ(waited, Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
  EXPECT_EQ(queue->Post(MakeEvent(0, 9)), Status::Ok());  // the waiter took one: room again
  EXPECT_EQ(queue->Post(MakeEvent(0, 10)), Status(Code::kQueueFull));
}

TEST(EventQueue, UnwaitableWaitIsInvalidState) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  queue->SetUnwaitable();
  DAT_EVENT event = MakeEvent(0, kUntouchedSeq);
  DAT_COUNT nmore = kUntouchedCount;
  // Even with an event queued: the state, not the contents, decides.
  EXPECT_EQ(queue->Wait(0, 1, &event, &nmore), Status(Code::kInvalidState, Detail::kEvdUnwaitable));
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, &nmore),
            Status(Code::kInvalidState, Detail::kEvdUnwaitable));
  EXPECT_EQ(SeqOf(event), kUntouchedSeq);
  EXPECT_EQ(nmore, kUntouchedCount);
  EXPECT_EQ(QueuedEvents(*queue), 1u);
  queue->ClearUnwaitable();
  EXPECT_EQ(queue->Wait(0, 1, &event, &nmore), Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
}

TEST(EventQueue, SetUnwaitableInterruptsWaiter) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  Status waited(Code::kInternal);
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    DAT_EVENT event{};
    waited = queue->Wait(kLongTimeoutUs, 1, &event, nullptr);
    returned = true;
  });
  Finally join([&] {  // releases the waiter if an assertion below bailed out early
    if (!waiter.joinable()) return;
    queue->SetUnwaitable();
    waiter.join();
  });
  ASSERT_TRUE(Eventually([&] { return queue->Query().waiter; }));
  const auto start = steady_clock::now();
  queue->SetUnwaitable();
  // Clearing at once must not undo the interruption of the wait in progress.
  queue->ClearUnwaitable();
  ASSERT_TRUE(Eventually([&] { return returned.load(); }));
  EXPECT_EQ(waited, Status(Code::kInterrupted));
  // Woken, not timed out: well under the 30 s timeout even on a loaded machine.
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_FALSE(queue->Query().waiter);
  // The queue is waitable again after ClearUnwaitable.
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  DAT_EVENT event{};
  EXPECT_EQ(queue->Wait(0, 1, &event, nullptr), Status::Ok());
}

// Posts into its queue on chosen calls, like a transport's poll finding completions.
class ScriptedHook final : public ProgressHook {
 public:
  ScriptedHook(EventQueue* queue, std::vector<int> post_on_calls)
      : queue_(queue), post_on_calls_(std::move(post_on_calls)) {}

  bool Progress() noexcept override {
    ++calls;
    if (calls <= moving_calls) {  // a transport busy with other work: each call moves, and takes a while
      std::this_thread::sleep_for(call_takes);
      return true;
    }
    for (int call : post_on_calls_) {
      if (call == calls) {
        EXPECT_EQ(queue_->Post(MakeEvent(0, static_cast<std::uint64_t>(calls))), Status::Ok());
        return true;
      }
    }
    if (calls == unwaitable_on_call) queue_->SetUnwaitable();
    return false;
  }
  bool ProgressDue() const noexcept override { return due; }
  std::uint32_t spin_us() const noexcept override { return spin; }
  void Pause() noexcept override {
    ++pauses;
    if (on_pause) on_pause();
  }

  int calls = 0;
  int moving_calls = 0;  // the first calls move the transport without posting
  std::chrono::microseconds call_takes{0};
  bool due = false;  // ProgressDue's answer
  int unwaitable_on_call = -1;
  std::uint32_t spin = 0;  // 0: busy-poll
  std::atomic<int> pauses{0};
  std::function<void()> on_pause;

 private:
  EventQueue* queue_;
  std::vector<int> post_on_calls_;
};

TEST(EventQueue, BusyPollHookProgressesAndDelivers) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  ScriptedHook hook(queue.get(), {3, 6});
  queue->SetProgressHook(&hook);
  DAT_EVENT event{};
  DAT_COUNT nmore = kUntouchedCount;
  // No other thread posts: only the waiter's own polling can deliver, and a sleeping waiter
  // would time out instead.
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 2, &event, &nmore), Status::Ok());
  EXPECT_EQ(hook.calls, 6);  // polled until the threshold was met, and no longer
  EXPECT_EQ(SeqOf(event), 3u);
  EXPECT_EQ(nmore, 1);

  // A zero timeout still polls once in busy-poll mode.
  ScriptedHook first_call_posts(queue.get(), {1});
  queue->SetProgressHook(&first_call_posts);
  EXPECT_EQ(queue->Wait(0, 2, &event, &nmore), Status::Ok());
  EXPECT_EQ(first_call_posts.calls, 1);
  EXPECT_EQ(SeqOf(event), 6u);
  EXPECT_EQ(nmore, 1);
}

// A waiter whose events are already queued takes one without moving the transport, unless the
// transport says Work it holds back is due (a consumer answering each completion with a post over
// many endpoints): then it moves it once, after taking the event.
TEST(EventQueue, AWaiterWithEventsQueuedMovesTheTransportOnlyWhenWorkIsDue) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  ASSERT_EQ(queue->Post(MakeEvent(0, 2)), Status::Ok());
  ScriptedHook hook(queue.get(), {});
  queue->SetProgressHook(&hook);
  DAT_EVENT event{};
  DAT_COUNT nmore = kUntouchedCount;
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, &nmore), Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
  EXPECT_EQ(hook.calls, 0) << "an event was queued and nothing was due";

  hook.due = true;
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, &nmore), Status::Ok());
  EXPECT_EQ(SeqOf(event), 2u) << "the queued event is still the one returned";
  EXPECT_EQ(nmore, 0);
  EXPECT_EQ(hook.calls, 1) << "Work was due: one progress call";
}

// The default mode: a waiter spins on the transport briefly, then hands over (Pause) and sleeps;
// a producer's Post wakes it.
TEST(EventQueue, SpinningWaiterHandsOverThenSleepsUntilPosted) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  ScriptedHook hook(queue.get(), {});
  hook.spin = 1000;
  std::thread producer;
  // The producer posts only once the waiter has handed over: whatever the timing, the event can
  // only reach the waiter by waking it.
  hook.on_pause = [&] {
    producer = std::thread([&] { EXPECT_EQ(queue->Post(MakeEvent(0, 42)), Status::Ok()); });
  };
  queue->SetProgressHook(&hook);
  DAT_EVENT event{};
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, nullptr), Status::Ok());
  producer.join();
  EXPECT_EQ(SeqOf(event), 42u);
  EXPECT_GE(hook.calls, 1) << "it spun before it slept";
  EXPECT_EQ(hook.pauses.load(), 1);
}

TEST(EventQueue, SpinningWaiterThatFindsItsEventNeverHandsOver) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  ScriptedHook hook(queue.get(), {2});
  hook.spin = 60'000'000;  // longer than any test: the event must come from the spin
  queue->SetProgressHook(&hook);
  DAT_EVENT event{};
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, nullptr), Status::Ok());
  EXPECT_EQ(hook.calls, 2);
  EXPECT_EQ(hook.pauses.load(), 0);
}

// Regression (the default mode's 1 MiB stream): the spin ran from the start of the wait, so a
// waiter whose own progress calls were writing a large Send batch by batch ran out of spin while
// the transport was busy, handed over and slept, and its completion cost a wake-up. The spin now
// counts the time the transport sits idle: here each call moves it and takes 1 ms, for three
// times the spin, and the event comes after; the waiter must not hand over meanwhile.
TEST(EventQueue, SpinningWaiterKeepsDrivingATransportThatMoves) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  ScriptedHook hook(queue.get(), {61});
  hook.spin = 20'000;
  hook.moving_calls = 60;
  hook.call_takes = std::chrono::milliseconds(1);
  // Were it to hand over, the event would come from elsewhere, and the test says so.
  hook.on_pause = [&] { EXPECT_EQ(queue->Post(MakeEvent(0, 99)), Status::Ok()); };
  queue->SetProgressHook(&hook);
  DAT_EVENT event{};
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, nullptr), Status::Ok());
  EXPECT_EQ(hook.pauses.load(), 0) << "it handed over while its transport was moving";
  EXPECT_EQ(SeqOf(event), 61u);
  EXPECT_EQ(hook.calls, 61);
}

TEST(EventQueue, BusyPollTimesOutAndIsInterruptible) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  ScriptedHook idle(queue.get(), {});
  queue->SetProgressHook(&idle);
  DAT_EVENT event{};
  const auto start = steady_clock::now();
  EXPECT_EQ(queue->Wait(20'000, 1, &event, nullptr), Status(Code::kTimeout));
  EXPECT_GE(steady_clock::now() - start, std::chrono::milliseconds(20));
  EXPECT_GE(idle.calls, 1);

  ScriptedHook interrupting(queue.get(), {});
  interrupting.unwaitable_on_call = 3;
  queue->SetProgressHook(&interrupting);
  EXPECT_EQ(queue->Wait(kLongTimeoutUs, 1, &event, nullptr), Status(Code::kInterrupted));
  EXPECT_EQ(interrupting.calls, 3);

  queue->ClearUnwaitable();
  // A spin reads the clock every few idle turns, but a zero timeout's after its first: it polls
  // once, in busy-poll and in the default mode alike.
  for (const std::uint32_t spin : {0u, 60'000'000u}) {
    ScriptedHook once(queue.get(), {});
    once.spin = spin;
    queue->SetProgressHook(&once);
    EXPECT_EQ(queue->Wait(0, 1, &event, nullptr), Status(Code::kTimeout));
    EXPECT_EQ(once.calls, 1) << "spin_us " << spin;
    EXPECT_EQ(once.pauses.load(), 0);
  }

  // Back to sleeping waits once the hook is removed.
  queue->SetProgressHook(nullptr);
  EXPECT_EQ(queue->Wait(0, 1, &event, nullptr), Status(Code::kTimeout));
  EXPECT_EQ(interrupting.calls, 3);
}

}  // namespace
}  // namespace softdat::evd

namespace softdat::evd {
namespace {

using testing::Eventually;
using testing::Finally;
using testing::kLongTimeoutUs;
using testing::MakeEvent;
using testing::NewQueue;
using testing::SeqOf;

TEST(EventQueueNotify, QuietEventDoesNotEndAWaitButASignalledOneTakesIt) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  std::atomic<bool> returned{false};
  Status status(Code::kInternal);
  DAT_EVENT event = MakeEvent(0, 0xdead);
  DAT_COUNT nmore = -7;
  std::thread consumer([&] {
    status = queue->Wait(kLongTimeoutUs, 1, &event, &nmore);
    returned = true;
  });
  Finally join([&] {
    queue->SetUnwaitable();
    consumer.join();
  });
  ASSERT_TRUE(Eventually([&] { return queue->Query().waiter; }));
  ASSERT_EQ(queue->Post(MakeEvent(0, 1), EventQueue::Notify::kQuiet), Status::Ok());
  // Deterministic check that the quiet post did not end the wait: the waiter is still inside,
  // and the event it would have taken is still queued.
  EXPECT_TRUE(queue->Query().waiter);
  EXPECT_EQ(QueuedEvents(*queue), 1u);
  ASSERT_EQ(queue->Post(MakeEvent(0, 2)), Status::Ok());
  ASSERT_TRUE(Eventually([&] { return returned.load(); }));
  EXPECT_EQ(status, Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u) << "the oldest event, quiet or not, comes first";
  EXPECT_EQ(nmore, 1);
}

TEST(EventQueueNotify, QuietEventsMeetTheThresholdWhenTheTimeoutExpires) {
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  ASSERT_EQ(queue->Post(MakeEvent(0, 1), EventQueue::Notify::kQuiet), Status::Ok());
  DAT_EVENT event = MakeEvent(0, 0xdead);
  // Already queued when the wait starts: the events are there, so the wait succeeds at once.
  ASSERT_EQ(queue->Wait(0, 1, &event, nullptr), Status::Ok());
  EXPECT_EQ(SeqOf(event), 1u);
}

}  // namespace
}  // namespace softdat::evd
