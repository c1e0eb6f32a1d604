// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Cno: triggers from attached EVDs, the pending trigger, waits and timeouts, the one-shot proxy
// agent, the in-use rule of dat_cno_free, and what does not trigger (disabled EVDs, EVDs with a
// waiter of their own, quiet events).
#include "evd/cno.h"
#include "evd/progress_hook.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "base/deferred_calls.h"
#include "evd/event_queue.h"
#include "evd/test_support.h"

namespace softdat::evd {
namespace {

using testing::Eventually;
using testing::Finally;
using testing::kLongTimeoutUs;
using testing::MakeEvent;
using testing::NewQueue;

struct AgentLog {
  std::atomic<int> calls{0};
  std::atomic<DAT_EVD_HANDLE> last{nullptr};
  static void Record(DAT_PVOID instance, DAT_EVD_HANDLE evd) {
    auto* log = static_cast<AgentLog*>(instance);
    log->last.store(evd);
    log->calls.fetch_add(1);
  }
  DAT_OS_WAIT_PROXY_AGENT Agent() { return DAT_OS_WAIT_PROXY_AGENT{this, &AgentLog::Record}; }
};

DAT_EVD_HANDLE FakeHandle(int n) { return reinterpret_cast<DAT_EVD_HANDLE>(static_cast<std::uintptr_t>(0x1000 * n)); }

TEST(Cno, EventOnAttachedEvdLeavesAPendingTriggerNamingIt) {
  Cno cno;
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  queue->SetOwner(FakeHandle(1));
  queue->SetCno(&cno);
  EXPECT_FALSE(cno.Query().triggered);
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  EXPECT_TRUE(cno.Query().triggered);
  EventQueue* triggered = nullptr;
  ASSERT_EQ(cno.Wait(0, &triggered), Status::Ok());
  EXPECT_EQ(triggered, queue.get());
  EXPECT_EQ(triggered->Query().owner, FakeHandle(1));
  EXPECT_EQ(cno.Wait(0, &triggered), Status(Code::kTimeout)) << "one trigger, one wait";
  queue->SetCno(nullptr);
}

TEST(Cno, WaiterIsReleasedByATriggerFromAnotherThread) {
  Cno cno;
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  queue->SetCno(&cno);
  std::atomic<bool> returned{false};
  Status status(Code::kInternal);
  EventQueue* triggered = nullptr;
  std::thread waiter([&] {
    status = cno.Wait(kLongTimeoutUs, &triggered);
    returned = true;
  });
  Finally join([&] {
    if (!returned) (void)queue->Post(MakeEvent(0, 99));
    waiter.join();
    queue->SetCno(nullptr);
  });
  ASSERT_TRUE(Eventually([&] { return cno.Query().waiters == 1; }));
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  ASSERT_TRUE(Eventually([&] { return returned.load(); }));
  EXPECT_EQ(status, Status::Ok());
  EXPECT_EQ(triggered, queue.get());
}

// A hook that posts an event into `queue` on its `post_on`-th Progress call and otherwise moves
// nothing; counts its calls and Pauses.
class PostingHook final : public ProgressHook {
 public:
  PostingHook(EventQueue* queue, int post_on, std::uint32_t spin) : queue_(queue), post_on_(post_on), spin_(spin) {}
  bool Progress() noexcept override {
    if (++calls != post_on_) return false;
    EXPECT_EQ(queue_->Post(MakeEvent(0, 1)), Status::Ok());
    return true;
  }
  bool ProgressDue() const noexcept override { return false; }
  std::uint32_t spin_us() const noexcept override { return spin_; }
  void Pause() noexcept override { ++pauses; }
  std::atomic<int> calls{0};
  std::atomic<int> pauses{0};

 private:
  EventQueue* queue_;
  int post_on_;
  std::uint32_t spin_;
};

// Regression (progress=poll): dat_cno_wait slept on its condition variable, and with no progress
// thread nothing moved the events that would trigger it: dtest -c waited forever. A waiter with
// the IA's hook drives the progress itself until the trigger comes (busy-poll: spin_us 0).
TEST(Cno, AWaiterDrivesTheProgressThatTriggersIt) {
  Cno cno;
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  queue->SetCno(&cno);
  PostingHook hook(queue.get(), 1000, 0);
  EventQueue* triggered = nullptr;
  EXPECT_EQ(cno.Wait(kLongTimeoutUs, &triggered, &hook), Status::Ok());
  EXPECT_EQ(triggered, queue.get());
  EXPECT_EQ(hook.calls.load(), 1000);
  EXPECT_EQ(hook.pauses.load(), 0) << "busy-poll never hands over";
  queue->SetCno(nullptr);
}

// With a progress thread (spin_us > 0) the waiter spins while the transport moves nothing for
// spin_us, hands over (Pause) and sleeps; a trigger from another thread then releases it. A
// zero timeout polls once and says kTimeout.
TEST(Cno, AWaiterWithAThreadBehindItSpinsBrieflyThenHandsOverAndSleeps) {
  Cno cno;
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  queue->SetCno(&cno);
  PostingHook hook(queue.get(), -1, 50);
  EventQueue* triggered = nullptr;
  EXPECT_EQ(cno.Wait(0, &triggered, &hook), Status(Code::kTimeout));
  EXPECT_EQ(hook.calls.load(), 1);
  std::atomic<bool> returned{false};
  Status status(Code::kInternal);
  std::thread waiter([&] {
    status = cno.Wait(kLongTimeoutUs, &triggered, &hook);
    returned = true;
  });
  Finally join([&] {
    if (!returned) (void)queue->Post(MakeEvent(0, 99));
    waiter.join();
    queue->SetCno(nullptr);
  });
  ASSERT_TRUE(Eventually([&] { return hook.pauses.load() == 1; }));
  ASSERT_EQ(queue->Post(MakeEvent(0, 2)), Status::Ok());
  ASSERT_TRUE(Eventually([&] { return returned.load(); }));
  EXPECT_EQ(status, Status::Ok());
  EXPECT_EQ(triggered, queue.get());
}

TEST(Cno, NoTriggerFromDisabledEvdQuietEventOrEvdWithItsOwnWaiter) {
  Cno cno;
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  queue->SetCno(&cno);
  Finally detach([&] { queue->SetCno(nullptr); });

  queue->Disable();
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  EXPECT_FALSE(cno.Query().triggered) << "a disabled EVD does not notify";
  queue->Enable();
  EXPECT_FALSE(cno.Query().triggered) << "enabling does not notify for queued events";

  ASSERT_EQ(queue->Post(MakeEvent(0, 2), EventQueue::Notify::kQuiet), Status::Ok());
  EXPECT_FALSE(cno.Query().triggered) << "a quiet event does not notify";

  // An EVD with a waiter of its own preempts the CNO.
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    DAT_EVENT event;
    (void)queue->Wait(kLongTimeoutUs, 4, &event, nullptr);
    returned = true;
  });
  Finally join([&] {
    queue->SetUnwaitable();
    waiter.join();
  });
  ASSERT_TRUE(Eventually([&] { return queue->Query().waiter; }));
  ASSERT_EQ(queue->Post(MakeEvent(0, 3)), Status::Ok());
  EXPECT_FALSE(cno.Query().triggered);
  ASSERT_EQ(queue->Post(MakeEvent(0, 4)), Status::Ok());  // meets the waiter's threshold of 4
  ASSERT_TRUE(Eventually([&] { return returned.load(); }));
  EXPECT_FALSE(cno.Query().triggered);
}

TEST(Cno, WaitTimesOutWithoutTouchingTheOutput) {
  Cno cno;
  EventQueue* triggered = reinterpret_cast<EventQueue*>(0x1);
  EXPECT_EQ(cno.Wait(0, &triggered), Status(Code::kTimeout));
  EXPECT_EQ(cno.Wait(1000, &triggered), Status(Code::kTimeout));
  EXPECT_EQ(triggered, reinterpret_cast<EventQueue*>(0x1));
  EXPECT_EQ(cno.Wait(0, nullptr), Status(Code::kInvalidParameter, Detail::kParamEvd));
}

// The agent is consumer code: it runs at the posting thread's next safe point (the end of the DAT
// call, a waiter's poll, between the progress thread's handlers), never inside the post.
TEST(Cno, ProxyAgentRunsOncePerArmingWithTheTriggeringEvdAtTheNextSafePoint) {
  AgentLog log;
  Cno cno(log.Agent());
  auto queue = NewQueue(8);
  ASSERT_NE(queue, nullptr);
  queue->SetOwner(FakeHandle(7));
  queue->SetCno(&cno);
  Finally detach([&] { queue->SetCno(nullptr); });
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  EXPECT_EQ(log.calls.load(), 0) << "the agent ran inside the post";
  EXPECT_TRUE(RunDeferredCalls());
  EXPECT_EQ(log.calls.load(), 1);
  EXPECT_EQ(log.last.load(), FakeHandle(7));
  EventQueue* triggered = nullptr;
  ASSERT_EQ(cno.Wait(0, &triggered), Status::Ok());
  ASSERT_EQ(queue->Post(MakeEvent(0, 2)), Status::Ok());
  EXPECT_FALSE(RunDeferredCalls());
  EXPECT_EQ(log.calls.load(), 1) << "the agent is one-shot until re-armed";
  ASSERT_EQ(cno.Wait(0, &triggered), Status::Ok());
  cno.ModifyAgent(log.Agent());
  EXPECT_EQ(cno.Query().agent.instance_data, &log);
  ASSERT_EQ(queue->Post(MakeEvent(0, 3)), Status::Ok());
  EXPECT_TRUE(RunDeferredCalls());
  EXPECT_EQ(log.calls.load(), 2);
}

TEST(Cno, AgentMayCallBackIntoTheQueueBecauseItRunsAtASafePoint) {
  struct Reentrant {
    EventQueue* queue = nullptr;
    std::atomic<bool> dequeued{false};
    static void Run(DAT_PVOID instance, DAT_EVD_HANDLE) {
      auto* self = static_cast<Reentrant*>(instance);
      DAT_EVENT event;
      self->dequeued = self->queue->Dequeue(&event).ok();
    }
  } reentrant;
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  reentrant.queue = queue.get();
  Cno cno(DAT_OS_WAIT_PROXY_AGENT{&reentrant, &Reentrant::Run});
  queue->SetCno(&cno);
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  EXPECT_TRUE(RunDeferredCalls());  // would deadlock if a lock were held
  EXPECT_TRUE(reentrant.dequeued.load());
  queue->SetCno(nullptr);
}

TEST(Cno, InUseWhileAttachedOrWaitedOnAndDetachDropsItsPendingTrigger) {
  Cno cno;
  EXPECT_EQ(cno.CheckFree(), Status::Ok());
  auto queue = NewQueue(4);
  ASSERT_NE(queue, nullptr);
  queue->SetCno(&cno);
  EXPECT_EQ(cno.CheckFree(), Status(Code::kInvalidState, Detail::kCnoInUse));
  EXPECT_EQ(cno.Query().attached, 1u);
  ASSERT_EQ(queue->Post(MakeEvent(0, 1)), Status::Ok());
  ASSERT_TRUE(cno.Query().triggered);
  queue->SetCno(nullptr);
  EXPECT_FALSE(cno.Query().triggered) << "a detached (maybe freed) EVD must not be handed out";
  EXPECT_EQ(cno.CheckFree(), Status::Ok());

  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    EventQueue* triggered = nullptr;
    (void)cno.Wait(kLongTimeoutUs, &triggered);
    returned = true;
  });
  auto releaser = NewQueue(4);
  Finally join([&] {
    releaser->SetCno(&cno);
    (void)releaser->Post(MakeEvent(0, 2));
    waiter.join();
    releaser->SetCno(nullptr);
  });
  ASSERT_TRUE(Eventually([&] { return cno.Query().waiters == 1; }));
  EXPECT_EQ(cno.CheckFree(), Status(Code::kInvalidState, Detail::kCnoInUse));
}

}  // namespace
}  // namespace softdat::evd

#include <poll.h>

namespace softdat::evd {
namespace {

bool Readable(int fd) {
  pollfd entry{fd, POLLIN, 0};
  return ::poll(&entry, 1, 0) == 1 && (entry.revents & POLLIN);
}

TEST(CnoFd, TriggerMakesTheDescriptorReadableAndTakeClearsIt) {
  Cno cno;
  int fd = -1;
  ASSERT_EQ(cno.EnableFd(fd), Status::Ok());
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(Readable(fd));
  EXPECT_EQ(cno.Take(), nullptr) << "nothing triggered yet";
  auto queue = testing::NewQueue(4);
  ASSERT_NE(queue, nullptr);
  queue->SetCno(&cno);
  ASSERT_EQ(queue->Post(testing::MakeEvent(0, 1)), Status::Ok());
  EXPECT_TRUE(Readable(fd));
  EXPECT_EQ(cno.Take(), queue.get());
  EXPECT_FALSE(Readable(fd));
  ASSERT_EQ(queue->Post(testing::MakeEvent(0, 2)), Status::Ok());
  EXPECT_TRUE(Readable(fd));
  EventQueue* triggered = nullptr;
  ASSERT_EQ(cno.Wait(0, &triggered), Status::Ok()) << "an fd CNO can still be waited on";
  EXPECT_FALSE(Readable(fd));
  queue->SetCno(nullptr);
}

}  // namespace
}  // namespace softdat::evd
