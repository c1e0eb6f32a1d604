// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Cno: one pending trigger, its waiters and its proxy agent. See cno.h for the contract.
#include "evd/cno.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "base/deferred_calls.h"
#include "evd/deadline.h"
#include "evd/progress_hook.h"

namespace softdat::evd {

Cno::~Cno() {
  if (fd_ >= 0) ::close(fd_);
}

Status Cno::EnableFd(int& fd) {
  std::lock_guard lock(mutex_);
  if (fd_ < 0) {
    fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd_ < 0) return Status(Code::kInsufficientResources, Detail::kMemory);
    if (pending_ != nullptr) {
      const std::uint64_t one = 1;
      (void)!::write(fd_, &one, sizeof one);
    }
  }
  fd = fd_;
  return Status::Ok();
}

EventQueue* Cno::Take() {
  std::lock_guard lock(mutex_);
  EventQueue* taken = pending_;
  pending_ = nullptr;
  if (fd_ >= 0) {
    std::uint64_t count;
    (void)!::read(fd_, &count, sizeof count);  // EAGAIN when not readable: nothing to clear
  }
  return taken;
}

Status Cno::Wait(DAT_TIMEOUT timeout_us, EventQueue** triggered, ProgressHook* hook) {
  if (triggered == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvd);
  const Deadline deadline(timeout_us);
  // Declared before the lock, so it runs after the lock is released: a Pause is paired with a
  // Resume however the wait returns (ProgressHook).
  struct ResumeOnReturn {
    ProgressHook* hook = nullptr;
    ~ResumeOnReturn() {
      if (hook != nullptr) hook->Resume();
    }
  } resume;
  std::unique_lock lock(mutex_);
  ++waiters_;
  if (hook != nullptr) {
    const std::uint32_t spin_us = hook->spin_us();  // 0: until the timeout
    Deadline spin_until(spin_us);
    bool polled = false;  // at least one pass, even for a zero timeout
    while (pending_ == nullptr) {
      if (polled) {
        const auto now = std::chrono::steady_clock::now();
        if (deadline.ExpiredAt(now)) {
          --waiters_;
          return Status(Code::kTimeout);
        }
        if (spin_us != 0 && spin_until.ExpiredAt(now)) break;
      }
      // Unlocked: the progress triggers this CNO (EventQueue's lock, then this one's).
      lock.unlock();
      const bool moved = hook->Progress();
      lock.lock();
      polled = true;
      if (moved && spin_us != 0) spin_until = Deadline(spin_us);
    }
    if (pending_ == nullptr) {
      lock.unlock();
      hook->Pause();
      resume.hook = hook;
      lock.lock();
    }
  }
  // The trigger is checked before the deadline, so a waiter woken by a trigger at the moment it
  // times out still takes it rather than leaving it to nobody.
  while (pending_ == nullptr) {
    if (deadline.Expired()) {
      --waiters_;
      return Status(Code::kTimeout);
    }
    deadline.SleepOn(wakeup_, lock);
  }
  --waiters_;
  *triggered = pending_;
  pending_ = nullptr;
  if (fd_ >= 0) {
    std::uint64_t count;
    (void)!::read(fd_, &count, sizeof count);
  }
  return Status::Ok();
}

void Cno::ModifyAgent(const DAT_OS_WAIT_PROXY_AGENT& agent) {
  std::lock_guard lock(mutex_);
  agent_ = agent;
}

Status Cno::CheckFree() const {
  std::lock_guard lock(mutex_);
  if (attached_ > 0 || waiters_ > 0) return Status(Code::kInvalidState, Detail::kCnoInUse);
  return Status::Ok();
}

CnoInfo Cno::Query() const {
  std::lock_guard lock(mutex_);
  CnoInfo info;
  info.agent = agent_;
  info.attached = attached_;
  info.waiters = waiters_;
  info.triggered = pending_ != nullptr;
  return info;
}

Cno::AgentCall Cno::Trigger(EventQueue* source, DAT_EVD_HANDLE owner) {
  std::lock_guard lock(mutex_);
  // Already triggered: the pending trigger keeps the first EVD. A CNO says "look at your EVDs",
  // and the consumer drains all of them, so a second name would add nothing.
  if (pending_ != nullptr) return AgentCall{};
  pending_ = source;
  if (fd_ >= 0) {
    const std::uint64_t one = 1;
    (void)!::write(fd_, &one, sizeof one);  // never blocks: an eventfd counter, non-blocking
  }
  AgentCall call{agent_, owner};
  agent_ = DAT_OS_WAIT_PROXY_AGENT{};  // one-shot, re-armed with ModifyAgent
  if (waiters_ > 0) wakeup_.notify_one();
  return call;
}

void Cno::Attach() {
  std::lock_guard lock(mutex_);
  ++attached_;
}

void Cno::Detach(const EventQueue* source) {
  std::lock_guard lock(mutex_);
  --attached_;
  // The detached queue may be freed next; a later Wait must not hand it out.
  if (pending_ == source) pending_ = nullptr;
}

void Cno::AgentCall::Defer() const {
  if (agent.proxy_agent_func == nullptr) return;
  softdat::Defer(DeferredCall{
      [](void* function, void* instance, void* evd) {
        reinterpret_cast<DAT_AGENT_FUNC>(function)(instance, static_cast<DAT_EVD_HANDLE>(evd));
      },
      reinterpret_cast<void*>(agent.proxy_agent_func), agent.instance_data, evd});
}

}  // namespace softdat::evd
