// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The async events of one RDMA device context (SRQ limit reached, QP errors, communication
// established), routed to the IA they belong to.
//
// librdmacm opens each device once per process, so every IA of a process on one device shares one
// ibv_context and thus one async event fd: whichever IA's progress reads an event may be reading
// another IA's. One AsyncEventRouter per device context reads them all (from any IA's progress)
// and queues each for the transport that owns the QP or SRQ it names, waking that transport; each
// transport then delivers its own from its progress, under its own dispatch lock.
//
// A QP's or SRQ's context pointer names its AsyncTarget (null once the object is going away);
// the router reads and clears it only under its lock, so an event never reaches a destroyed
// object. Lock order: a transport's dispatch lock, then the router's.
#pragma once

#include <infiniband/verbs.h>

#include <deque>
#include <memory>
#include <mutex>

#include "base/mutex.h"

namespace softdat::transport::verbs {

// A transport whose progress delivers async events (VerbsTransport).
class AsyncSink {
 public:
  // Called with the router's lock held: must not block.
  virtual void WakeForAsyncEvents() = 0;

 protected:
  ~AsyncSink() = default;
};

// What a QP's qp_context or an SRQ's srq_context points to.
class AsyncTarget {
 public:
  explicit AsyncTarget(AsyncSink& sink) : sink_(sink) {}
  AsyncSink& sink() const { return sink_; }
  // In the sink's progress context, with no router lock held.
  virtual void OnAsyncEvent(ibv_event_type type) = 0;

 protected:
  ~AsyncTarget() = default;

 private:
  AsyncSink& sink_;
};

class AsyncEventRouter {
 public:
  // The one router of `context` in this process, made on first use (and its async fd made
  // non-blocking); null with errno set if that fails.
  static std::shared_ptr<AsyncEventRouter> For(ibv_context* context);

  explicit AsyncEventRouter(ibv_context* context) : context_(context) {}
  AsyncEventRouter(const AsyncEventRouter&) = delete;
  AsyncEventRouter& operator=(const AsyncEventRouter&) = delete;

  int fd() const { return context_->async_fd; }

  // Reads every event the device has (acking each at once: a destroy waits for the ack) and
  // queues those that name a live target for the target's sink, waking it. True if it read any.
  bool Read();
  // The next event queued for `sink`, oldest first; false when none is.
  bool Next(const AsyncSink& sink, AsyncTarget*& target, ibv_event_type& type);
  // `target` gets no more events: clears `*context` (its QP's qp_context or its SRQ's
  // srq_context; `context` may be null) and drops what is queued for it.
  void Detach(AsyncTarget* target, void** context);

 private:
  struct Entry {
    AsyncTarget* target;
    ibv_event_type type;
  };

  ibv_context* const context_;
  softdat::Mutex mutex_;
  std::deque<Entry> queue_;  // guarded by mutex_
};

}  // namespace softdat::transport::verbs
