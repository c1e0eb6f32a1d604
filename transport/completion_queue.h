// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A device completion queue bound to one DTO EVD: the transport half of "an EVD is a CQ". core
// makes one per DTO EVD (Transport::CreateCompletionQueue, sized by the EVD's queue length) and
// names it in the EndpointConfig of every endpoint whose send or receive completions go to that
// EVD, so that all of them, and the receives they take from an SRQ, share it: completion memory
// follows EVDs, not endpoints. The consumer's dat_evd_dequeue polls it straight into the event it
// returns; dat_evd_wait arms it and sleeps on wait_fd().
//
// A completion polled here is reported on the polling thread to its endpoint's EndpointEvents
// (OnWorkDone, OnDeviceRecvDone), exactly as a transport's progress reports it otherwise: one
// poller at a time, so an endpoint's completions keep the device's order.
//
// Transports without device completion queues (tcp, the fake device by default) refuse to make
// one (kModelNotSupported) and report completions from their own progress as before.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/status.h"

namespace softdat::transport {

// What a completion queue tells its EVD outside a poll. Implemented by core.
class CompletionQueueEvents {
 public:
  // The device dropped completions: more completed to the queue than it holds (a CQ overflow,
  // which also breaks the connections on it). From the transport's progress context, no lock held.
  virtual void OnOverflow() = 0;

 protected:
  ~CompletionQueueEvents() = default;
};

class CompletionQueue {
 public:
  // Destroyed after every endpoint that names it (core frees an EVD only once no EP uses it).
  virtual ~CompletionQueue() = default;

  // Takes up to `max` completions and reports each to its endpoint on this thread, in the
  // device's order. A call while another thread polls, or from inside an event this queue
  // reported, takes nothing and returns 0. Never blocks, never allocates. Returns how many
  // completions were taken.
  virtual std::uint32_t Poll(std::uint32_t max) noexcept = 0;

  // Waiting: after Arm, the next completion makes wait_fd() readable. A waiter arms, polls once
  // more (a completion that arrived before the arm raises nothing), then sleeps on wait_fd().
  virtual void Arm() noexcept = 0;
  // The descriptor a waiter sleeps on; -1 when there is none (the waiter then sleeps on its own
  // and relies on the transport's progress to poll).
  virtual int wait_fd() const noexcept = 0;
  // Consumes what made wait_fd() readable (non-blocking).
  virtual void TakeNotifications() noexcept = 0;

  // Watched: completions must be noticed while nobody polls or waits (the EVD has a CNO), so the
  // transport's progress arms the queue and polls it on every notification. Control path.
  virtual void SetWatched(bool watched) = 0;

  // dat_evd_resize: holds at least `entries` completions from now on. kModelNotSupported where
  // the device cannot resize a CQ, kInsufficientResources when it refuses.
  virtual Status Resize(std::uint32_t entries) = 0;
  // The completions the device queue holds (what its memory is sized by).
  virtual std::uint32_t capacity() const = 0;

  // Where the queue reports what happens outside a poll; core sets it right after creation.
  void SetEvents(CompletionQueueEvents* events) { events_.store(events, std::memory_order_release); }

 protected:
  // The transport saw the device drop completions of this queue.
  void ReportOverflow() {
    if (CompletionQueueEvents* events = events_.load(std::memory_order_acquire)) events->OnOverflow();
  }

 private:
  std::atomic<CompletionQueueEvents*> events_{nullptr};
};

}  // namespace softdat::transport
