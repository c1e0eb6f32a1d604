// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsCq: one ibv_cq behind one DTO EVD (transport/completion_queue.h), shared by every QP whose
// send or receive completions go to that EVD, SRQ receives included. A completion names its QP
// (qp_num, looked up in this queue's table of endpoints) and its request (wr_id: the endpoint's
// send or receive ring entry, or the SRQ slot); the endpoint turns it into the EndpointEvents
// call, so every srq/ step for a receive happens on the thread that polled it, in one pass.
//
// Default mode: the queue has its own completion channel, which the EVD's waiter sleeps on; the
// transport's progress thread also watches it while the EVD has a CNO. Busy-poll: no channel.
//
// Threads: Poll takes the queue's turn (turn.h), so one thread reports its completions at a time;
// Add and Remove (the endpoints' QPs coming and going) take the table's mutex, which is never
// held while an event runs. Remove returns once no other thread is inside a poll that may have
// found the endpoint. A poll finds a completion's endpoint first in its hints (QPs it found
// lately, under the turn), which every change of the table makes stale, so only the first find
// of a QP after a change takes the mutex.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/mutex.h"
#include "transport/completion_queue.h"
#include "transport/verbs/async_events.h"
#include "transport/verbs/turn.h"

namespace softdat::transport::verbs {

class VerbsEndpoint;
class VerbsTransport;

class VerbsCq final : public CompletionQueue, public AsyncTarget {
 public:
  static Status Create(VerbsTransport& transport, std::uint32_t entries, std::unique_ptr<VerbsCq>& out);
  ~VerbsCq() override;

  std::uint32_t Poll(std::uint32_t max) noexcept override;
  void Arm() noexcept override;
  int wait_fd() const noexcept override { return channel_ != nullptr ? channel_->fd : -1; }
  void TakeNotifications() noexcept override;
  void SetWatched(bool watched) override;
  Status Resize(std::uint32_t entries) override;
  std::uint32_t capacity() const override { return capacity_.load(std::memory_order_relaxed); }

  // The device's CQ error (an overflow: the EVD was shorter than what completed to it).
  void OnAsyncEvent(ibv_event_type type) override;

  ibv_cq* cq() const { return cq_; }
  // The QP `qp_num` of `endpoint` reports here from now on; Remove: no more (see above).
  void Add(std::uint32_t qp_num, VerbsEndpoint* endpoint);
  void Remove(std::uint32_t qp_num);
  // Progress: polls until the queue is empty, if no other thread polls it now; false if one does.
  bool TryDrain();
  // The progress thread took a notification of this (watched) queue: re-arm and poll it.
  void OnNotification();

 private:
  explicit VerbsCq(VerbsTransport& transport);
  std::uint32_t PollTurnHeld(std::uint32_t max);
  VerbsEndpoint* Find(std::uint32_t qp_num);

  VerbsTransport& transport_;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::atomic<std::uint32_t> capacity_{0};
  Turn turn_;
  bool watched_ = false;  // control path only
  softdat::Mutex table_mutex_;
  std::unordered_map<std::uint32_t, VerbsEndpoint*> endpoints_;  // by qp_num, under table_mutex_
  // Bumped by every Add and Remove, under the mutex; a hint taken before is stale. seq_cst with
  // the turn's taking (turn.h): a poll that takes the turn after Remove waited for it sees it.
  std::atomic<std::uint64_t> changes_{0};
  struct Hint {
    std::uint32_t qp_num = 0;
    std::uint64_t changes = 0;
    VerbsEndpoint* endpoint = nullptr;
  };
  static constexpr std::uint32_t kHints = 64;  // direct-mapped by qp_num
  Hint hints_[kHints];                         // under turn_
};

}  // namespace softdat::transport::verbs
