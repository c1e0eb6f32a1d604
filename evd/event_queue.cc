// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EventQueue: the ring, the DAT wait rules and the hand-off to the CNO. See event_queue.h for
// the contract and the lock order.
#include "evd/event_queue.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <thread>
#include <utility>

#include "evd/cno.h"
#include "evd/deadline.h"

namespace softdat::evd {
namespace {

bool ValidQueueLength(DAT_COUNT qlen) {
  return qlen >= 1 && qlen <= EventQueue::kMaxQueueLength;
}

// A power of two lets the ring index with a mask; the caller validated qlen, so this stays
// within kMaxQueueLength.
std::size_t RoundUpToPowerOfTwo(DAT_COUNT qlen) {
  std::size_t capacity = 1;
  while (capacity < static_cast<std::size_t>(qlen)) capacity <<= 1;
  return capacity;
}

// Most completions one poll of a completion source takes: enough to batch what a burst left,
// few enough to keep the ring's room and the stack frame small.
constexpr std::uint32_t kPollBatch = 16;
// A spinning waiter's idle turns per clock read (Wait).
constexpr std::uint32_t kIdleTurnsPerClockRead = 8;

// A consumer's dequeue polling its queue's completion source on this thread: the first event
// that poll Posts to that queue while its ring is empty goes to `into` (see PollSource).
struct Capture {
  const EventQueue* queue;
  DAT_EVENT* into;
  bool taken;
};
// initial-exec: a load relative to the thread pointer, where the default model for a shared
// library calls __tls_get_addr on every Post (~30 instructions per round trip on the same-host
// path, ~66 on a device). Eight bytes of the static TLS glibc keeps for dlopen()ed libraries.
thread_local Capture* t_capture __attribute__((tls_model("initial-exec"))) = nullptr;

// This thread's capture for `queue` into `into` (none when `into` is null) for a scope; the outer
// one (a nested dequeue's) is restored after it.
class CaptureScope {
 public:
  CaptureScope(const EventQueue* queue, DAT_EVENT* into) : capture_{queue, into, false}, outer_(t_capture) {
    t_capture = into != nullptr ? &capture_ : nullptr;
  }
  ~CaptureScope() { t_capture = outer_; }
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
  bool taken() const { return capture_.taken; }

 private:
  Capture capture_;
  Capture* const outer_;
};

// DTO completions (the IB extension's among them) and the rest, as an RNIC's EVD counts them.
bool IsDtoTally(const DAT_EVENT& event) {
  const auto number = static_cast<std::uint32_t>(event.event_number);
  return number == DAT_DTO_COMPLETION_EVENT || number == DAT_RMR_BIND_COMPLETION_EVENT ||
         number == static_cast<std::uint32_t>(DAT_IB_EXTENSION_RANGE_BASE);
}

// Allocation failure is a DAT status (DAT_INSUFFICIENT_RESOURCES), not an exception.
std::unique_ptr<DAT_EVENT[]> AllocateRing(std::size_t capacity) {
  return std::unique_ptr<DAT_EVENT[]>(new (std::nothrow) DAT_EVENT[capacity]);
}

}  // namespace

Status EventQueue::Create(DAT_COUNT min_qlen, std::unique_ptr<EventQueue>* out) {
  if (!ValidQueueLength(min_qlen)) return Status(Code::kInvalidParameter, Detail::kParamQlen);
  const std::size_t capacity = RoundUpToPowerOfTwo(min_qlen);
  std::unique_ptr<DAT_EVENT[]> ring = AllocateRing(capacity);
  if (ring == nullptr) return Status(Code::kInsufficientResources, Detail::kMemory);
  std::unique_ptr<EventQueue> queue(new (std::nothrow) EventQueue(std::move(ring), capacity));
  if (queue == nullptr) return Status(Code::kInsufficientResources, Detail::kMemory);
  *out = std::move(queue);
  return Status::Ok();
}

EventQueue::EventQueue(std::unique_ptr<DAT_EVENT[]> ring, std::size_t capacity)
    : ring_(std::move(ring)), capacity_(capacity), capacity_hint_(capacity) {}

EventQueue::~EventQueue() {
  SetCno(nullptr);
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status EventQueue::SetCompletionSource(CompletionSource* source) {
  if (source != nullptr && wake_fd_ < 0) {
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  bool watched = false;
  {
    std::lock_guard lock(mutex_);
    source_ = source;
    watched = cno_ != nullptr;
  }
  if (source != nullptr && watched) source->SetWatched(true);
  return Status::Ok();
}

bool EventQueue::PollSource(DAT_EVENT* into, std::uint32_t& polled) {
  polled = 0;
  const std::size_t capacity = capacity_hint_.load(std::memory_order_relaxed);
  const std::size_t queued = queued_.load(std::memory_order_acquire);
  std::size_t room = capacity > queued ? capacity - queued : 0;
  if (into != nullptr) ++room;  // the captured event takes no room
  if (room == 0) return false;  // a completion now would overflow the ring: leave it queued below
  const CaptureScope capture(this, into);
  polled = source_->Poll(static_cast<std::uint32_t>(std::min<std::size_t>(room, kPollBatch)));
  return capture.taken();
}

bool EventQueue::ProgressInto(ProgressHook& hook, DAT_EVENT* into, bool& moved) {
  // As PollSource: the consumer takes the first event the progress Posts here while the ring is
  // empty, so it is written where the consumer wants it, not into the ring and out again.
  const CaptureScope capture(this, into);
  moved = hook.Progress();
  return capture.taken();
}

bool EventQueue::PollForWaiter(std::unique_lock<softdat::Mutex>& lock, DAT_COUNT threshold, DAT_EVENT* event,
                               std::uint32_t& polled) {
  // Only a waiter that would take the first event anyway has it written in place.
  DAT_EVENT* const into = threshold == 1 && count_ == 0 ? event : nullptr;
  lock.unlock();
  const bool captured = PollSource(into, polled);
  lock.lock();
  return captured;
}

void EventQueue::SleepOnDescriptors(const Deadline& until) {
  pollfd fds[2] = {{source_->wait_fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  timespec left{};
  timespec* timeout = nullptr;
  if (!until.infinite()) {
    const auto rest = std::max(until.at() - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{});
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(rest).count();
    left.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    left.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    timeout = &left;
  }
  if (ppoll(fds, 2, timeout, nullptr) <= 0) return;  // timed out or interrupted: the caller looks again
  if (fds[0].revents != 0) source_->TakeNotifications();
  if (fds[1].revents != 0) {
    std::uint64_t count;
    [[maybe_unused]] const ssize_t n = read(wake_fd_, &count, sizeof count);
  }
}

Status EventQueue::Post(const DAT_EVENT& event, Notify notify) {
  return PostInternal(event, OnFull::kOverflow, notify);
}

Status EventQueue::PostSoftware(const DAT_EVENT& event) {
  if (event.event_number != DAT_SOFTWARE_EVENT)
    return Status(Code::kInvalidParameter, Detail::kParamEvent);
  return PostInternal(event, OnFull::kRefuse, Notify::kSignal);
}

Status EventQueue::PostInternal(const DAT_EVENT& event, OnFull on_full, Notify notify) {
  // A post may wake a waiter and trigger a CNO: nothing of softdat may be locked around it
  // (docs/ARCHITECTURE.md, "Threads and locks").
  AssertNoLocksHeld("an EVD post");
  // The consumer of this queue polls its completion source on this thread and the ring was empty:
  // the event is the one its dequeue returns. Nothing queued can precede it (the ring is empty,
  // and an endpoint's events are posted by one deliverer at a time), and it needs no wakeup or
  // CNO trigger: it is being taken.
  // A queue with a CNO takes the ring's path: its signalled events trigger the CNO even when the
  // consumer dequeues them at once.
  if (Capture* capture = t_capture; capture != nullptr && capture->queue == this && !capture->taken &&
                                    on_full == OnFull::kOverflow && !has_cno_.load(std::memory_order_relaxed) &&
                                    queued_.load(std::memory_order_acquire) == 0) {
    *capture->into = event;
    capture->taken = true;
    (IsDtoTally(event) ? captured_dto_ : captured_other_).fetch_add(1, std::memory_order_relaxed);
    return Status::Ok();
  }
  Cno::AgentCall agent_call;
  bool wake = false;
  bool wake_fd = false;
  {
    std::lock_guard lock(mutex_);
    if (count_ == capacity_) {
      if (on_full == OnFull::kOverflow) {
        overflowed_ = true;
        if (!in_overflow_episode_) {
          in_overflow_episode_ = true;
          overflow_unreported_ = true;
        }
      }
      return Status(Code::kQueueFull);
    }
    in_overflow_episode_ = false;  // there was room again: a later drop is a new episode
    ++(IsDtoTally(event) ? tally_.dto_posted : tally_.other_posted);
    ring_[(head_ + count_) & (capacity_ - 1)] = event;
    ++count_;
    queued_.store(count_, std::memory_order_release);
    if (notify == Notify::kQuiet) {
      // Queued only: no wakeup, no CNO trigger.
    } else if (waiting_) {
      // DAT: an EVD with a waiter does not trigger its CNO; the waiter is told directly, and only
      // once its threshold is met so a threshold wait is not woken per event, and only if it
      // sleeps: a spinning waiter sees the event on its own.
      wake = waiter_sleeps_ && count_ >= static_cast<std::size_t>(waiter_threshold_);
      tally_.wakeups += wake ? 1 : 0;
      wake_fd = wake && waiter_on_fd_;
    } else if (enabled_ && cno_ != nullptr) {
      agent_call = cno_->Trigger(this, owner_);
    }
  }
  // After the lock: the woken waiter does not run into it still held.
  if (wake_fd) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof one);
  } else if (wake) {
    wakeup_.notify_one();
  }
  agent_call.Defer();  // application code: at this thread's next safe point
  return Status::Ok();
}

bool EventQueue::TakeOverflow() {
  std::lock_guard lock(mutex_);
  return std::exchange(overflow_unreported_, false);
}

void EventQueue::PopLocked(DAT_EVENT* event) {
  *event = ring_[head_];
  head_ = (head_ + 1) & (capacity_ - 1);
  --count_;
  queued_.store(count_, std::memory_order_relaxed);
}

Status EventQueue::Dequeue(DAT_EVENT* event) {
  if (event == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvent);
  // Empty: no lock. An event posted meanwhile is found by the next dequeue, as if it had come
  // just after this one. A device's completions are polled here, the first straight into `event`.
  if (queued_.load(std::memory_order_acquire) == 0) {
    std::uint32_t polled = 0;
    if (source_ != nullptr && PollSource(event, polled)) return Status::Ok();
    if (queued_.load(std::memory_order_acquire) == 0) return Status(Code::kQueueEmpty);
  }
  std::lock_guard lock(mutex_);
  if (count_ == 0) return Status(Code::kQueueEmpty);
  PopLocked(event);
  return Status::Ok();
}

Status EventQueue::Wait(DAT_TIMEOUT timeout_us, DAT_COUNT threshold, DAT_EVENT* event,
                        DAT_COUNT* nmore) {
  // The timeout runs from the call, not from the lock. A wait that finds its events queued reads
  // no clock at all: in a Send ping-pong the Send's completion waits so, and its two clock reads
  // were about a tenth of the default mode's round trip (perf).
  const bool queued_enough = threshold >= 1 && queued_.load(std::memory_order_acquire) >= static_cast<std::size_t>(threshold);
  std::chrono::steady_clock::time_point start{};
  if (!queued_enough) start = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  if (threshold < 1 || static_cast<std::size_t>(threshold) > capacity_)
    return Status(Code::kInvalidParameter, Detail::kParamThreshold);
  if (event == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvent);
  if (waiting_) return Status(Code::kInvalidState, Detail::kEvdWaiter);
  if (!waitable_) return Status(Code::kInvalidState, Detail::kEvdUnwaitable);

  waiting_ = true;
  // waiter_interrupted_ is false here: SetUnwaitable sets it only during a wait, and every wait
  // clears it as it ends. Not stored again: a sequentially consistent store is a full barrier
  // (xchg), and the instruction after it held about a tenth of this function's samples in the
  // busy 8 B rate test (perf annotate).
  waiter_threshold_ = threshold;
  ProgressHook* const hook = hook_;
  CompletionSource* const source = source_;
  // With a hook the waiter spins on the transport's progress (and polls its completion source):
  // until its timeout (busy-poll), or until the transport has moved nothing for spin_us, then
  // hands over and sleeps (the default mode: a blocking wake-up costs more than a short spin).
  // Time its own progress calls spend moving the transport (writing a large Send batch by batch)
  // does not count: a waiter that handed over then would pay a wake-up for the completion it was
  // itself producing.
  const std::uint32_t spin_us = hook != nullptr ? hook->spin_us() : 0;
  // Queued when looked at, but not now (another thread dequeued meanwhile): the clock after all.
  if (queued_enough && count_ < static_cast<std::size_t>(threshold)) start = std::chrono::steady_clock::now();
  // Not read when the events are queued: the loop's first turn takes them and uses neither.
  const Deadline deadline(timeout_us, start);
  Deadline spin_until(spin_us, start);
  bool spinning = hook != nullptr;
  bool paused = false;  // Pause was called: Resume as the wait returns (ProgressHook)
  bool polled = false;  // a waiter with a hook polls at least once, even for a zero timeout
  // The spin reads the clock after a turn that moved the transport (it may have taken long, and
  // the spin restarts from its end), and every kIdleTurnsPerClockRead idle turns otherwise, and
  // after the first turn of a zero timeout (which polls once): a read cost about 25 ns on the
  // development VM, a quarter of a default-mode waiter's samples at two reads a turn (perf;
  // PERFORMANCE.md, "Progress"). The timeout and the spin's end are late by that many idle turns
  // at most.
  bool clock_due = timeout_us == 0;
  bool moved_before = false;  // the turn before this clock read moved the transport
  std::uint32_t idle_turns = 0;
  Status status;
  for (;;) {
    // An interruption wins over events that arrived with it: set_unwaitable is the consumer
    // telling this thread to stop waiting.
    if (waiter_interrupted_) {
      status = Status(Code::kInterrupted);
      break;
    }
    if (count_ >= static_cast<std::size_t>(threshold)) {
      PopLocked(event);
      if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(count_);
      if (hook != nullptr && hook->ProgressDue()) {
        // Events were queued, but the transport holds back much Work posted while they were
        // reaped: move it now, while it is in cache (ProgressHook::ProgressDue).
        lock.unlock();
        (void)hook->Progress();
        lock.lock();
      }
      break;
    }
    if (spinning) {
      bool spin_over = false;
      if (polled && (clock_due || idle_turns >= kIdleTurnsPerClockRead)) {
        const auto now = std::chrono::steady_clock::now();
        if (deadline.ExpiredAt(now)) {
          status = Status(Code::kTimeout);
          break;
        }
        if (spin_us != 0 && moved_before) spin_until = Deadline(spin_us, now);
        spin_over = spin_us != 0 && spin_until.ExpiredAt(now);
        clock_due = false;
        moved_before = false;
        idle_turns = 0;
      }
      if (!spin_over) {
        std::uint32_t completions = 0;
        if (source != nullptr && PollForWaiter(lock, threshold, event, completions)) {
          if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(count_);
          break;
        }
        // Unlocked: the hook Posts into this queue. No yield: the spin is what is asked for. A
        // waiter that would take the first event anyway has it written in place.
        DAT_EVENT* const into = threshold == 1 && count_ == 0 ? event : nullptr;
        lock.unlock();
        bool captured = false;
        bool moved = false;
        // Idle turns run on without the queue's lock, up to the next clock read: a Post wakes no
        // spinning waiter, so nothing but the queue's count and an interruption (both atomics)
        // can end the spin meanwhile. A completion source is polled under the lock's protocol
        // (PollForWaiter), one turn at a time.
        for (;;) {
          bool progressed = false;
          captured = ProgressInto(*hook, into, progressed);
          moved = progressed || completions > 0;
          if (captured || moved) break;
          // Counted before the source's break: a waiter with a completion source turns once per
          // pass, and its idle turns must bring the clock (the timeout, the spin's end) all the same.
          if (clock_due || ++idle_turns >= kIdleTurnsPerClockRead) break;
          if (source != nullptr || queued_.load(std::memory_order_acquire) >= static_cast<std::size_t>(threshold) ||
              waiter_interrupted_.load(std::memory_order_relaxed))
            break;
        }
        lock.lock();
        if (captured) {
          if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(count_);
          break;
        }
        polled = true;
        if (moved) clock_due = moved_before = true;
        continue;
      }
      // The spin is over: hand the transport to whoever else drives it, then look once more
      // before sleeping (an event may have come meanwhile).
      spinning = false;
      paused = true;
      lock.unlock();
      hook->Pause();
      lock.lock();
      continue;
    }
    if (deadline.Expired()) {
      status = Status(Code::kTimeout);
      break;
    }
    if (source != nullptr && source->wait_fd() >= 0) {
      // Armed first, then polled: a completion that came before the arm is found by the poll, one
      // after it makes the descriptor readable.
      lock.unlock();
      source->Arm();
      lock.lock();
      std::uint32_t completions = 0;
      if (PollForWaiter(lock, threshold, event, completions)) {
        if (nmore != nullptr) *nmore = static_cast<DAT_COUNT>(count_);
        break;
      }
      if (completions > 0 || count_ >= static_cast<std::size_t>(threshold) || waiter_interrupted_) continue;
      waiter_sleeps_ = true;
      waiter_on_fd_ = true;
      ++tally_.sleeps;
      lock.unlock();
      SleepOnDescriptors(deadline);
      lock.lock();
      waiter_sleeps_ = false;
      waiter_on_fd_ = false;
      continue;
    }
    waiter_sleeps_ = true;
    ++tally_.sleeps;
    deadline.SleepOn(wakeup_, lock);
    waiter_sleeps_ = false;
  }
  waiting_ = false;
  if (waiter_interrupted_.load(std::memory_order_relaxed)) waiter_interrupted_ = false;  // only if set (above)
  waiter_threshold_ = 0;
  const bool watched = cno_ != nullptr;
  lock.unlock();
  if (paused) hook->Resume();
  if (source != nullptr && watched) {
    // A waiter may have taken the notification the transport's progress armed for the CNO:
    // arm again and bring in what came meanwhile, which now triggers the CNO (no waiter).
    source->Arm();
    std::uint32_t completions = 0;
    (void)PollSource(nullptr, completions);
  }
  return status;
}

void EventQueue::Enable() {
  std::lock_guard lock(mutex_);
  enabled_ = true;
}

void EventQueue::Disable() {
  std::lock_guard lock(mutex_);
  enabled_ = false;
}

void EventQueue::SetUnwaitable() {
  std::lock_guard lock(mutex_);
  waitable_ = false;
  // A flag of the current wait, not just waitable_: a ClearUnwaitable before the waiter runs
  // must not undo its interruption.
  if (waiting_) {
    waiter_interrupted_ = true;
    wakeup_.notify_all();
    if (waiter_on_fd_) {
      const std::uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = write(wake_fd_, &one, sizeof one);
    }
  }
}

void EventQueue::ClearUnwaitable() {
  std::lock_guard lock(mutex_);
  waitable_ = true;
}

Status EventQueue::Resize(DAT_COUNT qlen) {
  if (!ValidQueueLength(qlen)) return Status(Code::kInvalidParameter, Detail::kParamQlen);
  const std::size_t capacity = RoundUpToPowerOfTwo(qlen);
  // Allocated before taking the lock so producers are not stalled behind the allocator.
  std::unique_ptr<DAT_EVENT[]> ring = AllocateRing(capacity);
  if (ring == nullptr) return Status(Code::kInsufficientResources, Detail::kMemory);
  {
    std::lock_guard lock(mutex_);
    if (waiting_) return Status(Code::kInvalidState, Detail::kEvdWaiter);
    if (count_ > static_cast<std::size_t>(qlen)) return Status(Code::kInvalidState);
    for (std::size_t i = 0; i < count_; ++i) ring[i] = ring_[(head_ + i) & (capacity_ - 1)];
    ring_.swap(ring);
    capacity_ = capacity;
    capacity_hint_.store(capacity, std::memory_order_relaxed);
    head_ = 0;
  }
  return Status::Ok();  // the old ring is freed here, outside the lock
}

Status EventQueue::Grow(DAT_COUNT qlen) {
  if (!ValidQueueLength(qlen)) return Status(Code::kInvalidParameter, Detail::kParamQlen);
  const std::size_t capacity = RoundUpToPowerOfTwo(qlen);
  {
    std::lock_guard lock(mutex_);
    if (capacity_ >= capacity) return Status::Ok();
  }
  std::unique_ptr<DAT_EVENT[]> ring = AllocateRing(capacity);
  if (ring == nullptr) return Status(Code::kInsufficientResources, Detail::kMemory);
  {
    std::lock_guard lock(mutex_);
    if (capacity_ >= capacity) return Status::Ok();  // grown meanwhile
    for (std::size_t i = 0; i < count_; ++i) ring[i] = ring_[(head_ + i) & (capacity_ - 1)];
    ring_.swap(ring);
    capacity_ = capacity;
    capacity_hint_.store(capacity, std::memory_order_relaxed);
    head_ = 0;
  }
  return Status::Ok();  // the old ring is freed here, outside the lock
}

void EventQueue::SetCno(Cno* cno) {
  CompletionSource* source = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (cno == cno_) return;
    if (cno_ != nullptr) cno_->Detach(this);
    if (cno != nullptr) cno->Attach();
    const bool changed = (cno_ == nullptr) != (cno == nullptr);
    cno_ = cno;
    has_cno_.store(cno != nullptr, std::memory_order_relaxed);
    if (changed) source = source_;
  }
  // A CNO hears of completions nobody polls: the transport's progress must watch the source.
  if (source != nullptr) source->SetWatched(cno != nullptr);
}

void EventQueue::SetOwner(DAT_EVD_HANDLE owner) {
  std::lock_guard lock(mutex_);
  owner_ = owner;
}

void EventQueue::SetProgressHook(ProgressHook* hook) {
  std::lock_guard lock(mutex_);
  hook_ = hook;
}

Status EventQueue::CheckFree() const {
  std::lock_guard lock(mutex_);
  if (waiting_) return Status(Code::kInvalidState, Detail::kEvdInUse);
  return Status::Ok();
}

EventQueueTally EventQueue::Tally(bool reset) {
  std::lock_guard lock(mutex_);
  EventQueueTally tally = tally_;
  // Events written straight into a consumer's dequeue were posted too.
  tally.dto_posted += reset ? captured_dto_.exchange(0) : captured_dto_.load();
  tally.other_posted += reset ? captured_other_.exchange(0) : captured_other_.load();
  if (reset) tally_ = EventQueueTally{};
  return tally;
}

EventQueueInfo EventQueue::Query() const {
  std::lock_guard lock(mutex_);
  EventQueueInfo info;
  info.qlen = static_cast<DAT_COUNT>(capacity_);
  info.count = static_cast<DAT_COUNT>(count_);
  info.enabled = enabled_;
  info.waitable = waitable_;
  info.overflowed = overflowed_;
  info.waiter = waiting_;
  info.cno = cno_;
  info.owner = owner_;
  return info;
}

}  // namespace softdat::evd
