// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A turn: the right to run one serialized path (the transport's progress, or polling one CQ),
// held by at most one thread. Taking it never blocks: a thread that finds it held (by another
// thread, or by itself further up its stack, from inside an event that path reported) goes on
// without it. Nothing is ever run "under" a turn that would need it again: there is no re-entry.
//
// An object whose events that path reports goes away in two steps: it makes itself unfindable
// (clears the contexts that name it, leaves the tables), then WaitUnlessMine: once no other
// thread holds the turn, nothing that found it before is still running. Its own thread needs no
// wait: if it holds the turn, it is inside an event of another object, which finds this one no
// more when it returns.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "base/mutex.h"

namespace softdat::transport::verbs {

class Turn {
 public:
  // seq_cst: whoever waited the turn out (WaitUnlessMine) after a seq_cst store is seen by the
  // next taker's seq_cst loads (VerbsCq's changes_). On x86 a locked cmpxchg either way.
  bool TryTake() {
    pthread_t expected = 0;
    return holder_.compare_exchange_strong(expected, Self(), std::memory_order_seq_cst, std::memory_order_relaxed);
  }

  void Release() {
    holder_.store(0, std::memory_order_seq_cst);
    if (waiters_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard lock(mutex_);
      released_.notify_all();
    }
  }

  bool HeldByMe() const { return holder_.load(std::memory_order_acquire) == Self(); }

  // Returns once no thread but the caller holds the turn (see above).
  void WaitUnlessMine() {
    const pthread_t self = Self();
    if (Free(self)) return;
    std::unique_lock lock(mutex_);
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    released_.wait(lock, [&] { return Free(self); });
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  // pthread_self reads the thread pointer: unlike a thread_local in this dlopen()ed library, no
  // __tls_get_addr call on every CQ poll. glibc never gives a thread 0 (it is its TCB's address).
  static pthread_t Self() { return pthread_self(); }
  bool Free(pthread_t self) const {
    const pthread_t holder = holder_.load(std::memory_order_seq_cst);
    return holder == 0 || holder == self;
  }

  std::atomic<pthread_t> holder_{0};  // the holder's thread, 0 when free
  static_assert(std::atomic<pthread_t>::is_always_lock_free);
  std::atomic<int> waiters_{0};
  softdat::Mutex mutex_;  // only for waiting out a holder; never held while anything else runs
  std::condition_variable_any released_;
};

// Takes a turn for a scope, if it is free.
class TurnGuard {
 public:
  explicit TurnGuard(Turn& turn) : turn_(turn), held_(turn.TryTake()) {}
  ~TurnGuard() {
    if (held_) turn_.Release();
  }
  TurnGuard(const TurnGuard&) = delete;
  TurnGuard& operator=(const TurnGuard&) = delete;
  bool held() const { return held_; }

 private:
  Turn& turn_;
  bool held_;
};

}  // namespace softdat::transport::verbs
