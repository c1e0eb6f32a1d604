// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The per-thread queue of deferred calls.
#include "base/deferred_calls.h"

#include <atomic>
#include <cstddef>
#include <vector>

#include "base/mutex.h"

namespace softdat {
namespace {

struct Queue {
  std::vector<DeferredCall> calls;
  std::size_t next = 0;  // the next to run; shared by nested safe points
};

thread_local Queue queue;
// Threads with calls queued. Every DAT call is a safe point: this global, read relaxed, keeps the
// common case (no CNO agent anywhere) to one load, without a thread-local lookup.
std::atomic<int> threads_pending{0};

}  // namespace

void Defer(const DeferredCall& call) {
  Queue& q = queue;
  if (q.calls.empty()) threads_pending.fetch_add(1, std::memory_order_relaxed);
  q.calls.push_back(call);
}

bool RunDeferredCalls() {
  if (threads_pending.load(std::memory_order_relaxed) == 0) return false;
  Queue& q = queue;  // this thread's own calls: Defer above ordered them before this read
  if (q.calls.empty()) return false;
  AssertNoLocksHeld("a deferred call (a CNO proxy agent)");
  while (q.next < q.calls.size()) {
    const DeferredCall call = q.calls[q.next++];
    call.run(call.function, call.first, call.second);
  }
  if (!q.calls.empty()) {  // a nested safe point may have emptied it already
    q.calls.clear();
    q.next = 0;
    threads_pending.fetch_sub(1, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace softdat
