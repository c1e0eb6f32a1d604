// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Calls that must not run where they are made, run later on the same thread at a safe point: a
// CNO's proxy agent is consumer code that may call straight back into softdat (post, free the
// EP or the PSP whose event triggered it), so it never runs inside softdat's own frames — only
// when the thread is about to leave softdat (every DAT entry point, on return), between the
// progress thread's work items, and between a waiter's polls of the transport. At those points
// no softdat lock is held and no object the call could free is in use on this thread.
#pragma once

namespace softdat {

struct DeferredCall {
  void (*run)(void* function, void* first, void* second);
  void* function;
  void* first;
  void* second;
};

// Queues `call` for this thread's next safe point. Allocates only when this thread has more
// deferred calls queued at once than ever before.
void Defer(const DeferredCall& call);

// A safe point: runs what this thread deferred, oldest first, including calls deferred while it
// runs. Re-entrant (a deferred call that enters softdat reaches a safe point itself). True when
// something ran.
bool RunDeferredCalls();

}  // namespace softdat
