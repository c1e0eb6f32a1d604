// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// An endpoint's account on a shared SRQ: the ReceiveSource (receive_source.h) of an EP created
// with dat_ep_create_with_srq. It holds one MsnWindow per connection (sized here from the SRQ:
// the window bounds how far ahead of the oldest open message a connection may take buffers, and
// an SRQ never lends one EP more than it has), takes buffers from the pool in arrival order, makes
// its EP wait (BufferWaiter) when the SRQ is empty, and in the device model maps the device's
// completions, which name pool slots, to this connection's MSNs in completion order.
//
// Created with its EP and destroyed with it; it is one of the pool's users from creation on, so
// dat_srq_free is refused while the EP exists.
#pragma once

#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>

#include "base/mutex.h"
#include "srq/buffer_waiter.h"
#include "srq/msn_window.h"
#include "srq/receive_source.h"
#include "srq/srq_pool.h"

namespace softdat::srq {

class SrqAccount final : public ReceiveSource {
 public:
  // `waiter` (may be null) hears when a message of this EP found no buffer and one was posted.
  static Status Create(SrqPool& pool, BufferWaiter* waiter, bool device_model,
                       std::unique_ptr<SrqAccount>& out);
  ~SrqAccount() override;

  // The MSN window a connection gets on an SRQ of `srq_size` buffers.
  static std::uint32_t WindowFor(std::uint32_t srq_size);

  // ReceiveSource.
  Status CanPost() const override;
  Status Post(DAT_DTO_COOKIE cookie, std::span<const RecvSegment> segments, DAT_COMPLETION_FLAGS flags,
              Posted& out) override;
  void Withdraw() override {}
  Status BeginConnection() override;
  void Close() override;
  TakeResult TakeForMessage(std::uint32_t msn, RecvBuffer& out) override;
  TakeResult TakeDeviceChosen(std::uint64_t recv_id, std::uint32_t& msn, RecvBuffer& out) override;
  TakeResult CompleteDeviceChosen(std::uint64_t recv_id, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                                  const RecvNotes& notes, std::uint32_t& msn) override;
  Status Place(std::uint32_t msn, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
               const RecvNotes& notes) override;
  // The pool's one step, and one look at the account.
  TakeResult CompleteDeviceChosenAndPop(std::uint64_t recv_id, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                                        const RecvNotes& notes, RecvCompletion& out, bool& popped) override;
  bool PopCompletion(RecvCompletion& out) override;
  std::uint32_t held() const override;
  // On a device while a connection is live: DAT_VALUE_UNKNOWN for both (the NIC takes SRQ buffers
  // without telling anyone until it completes them; once the connection ends it holds none).
  void RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const override;
  bool announces_flush() const override { return true; }
  void StopWaking() override;

 protected:
  // A device hands SRQ buffers to an EP unseen: a finite high watermark could never fire.
  Status HighWatermarksSupported() const override;

 private:
  SrqAccount(SrqPool& pool, BufferWaiter* waiter, bool device_model);
  // What a popped completion carries from here, and the window's room for a waiting message.
  void AfterPop(RecvCompletion& out);
  // The device model's next completion on this connection: `step(window, slot)` takes it in the
  // pool under the next MSN (`msn`), which counts as completed once the pool has it.
  template <typename PoolStep>
  TakeResult TakeNextDeviceMsn(std::uint64_t recv_id, std::uint32_t& msn, PoolStep&& step);

  SrqPool& pool_;
  BufferWaiter* waiter_;
  const bool device_model_;

  // The window of the current (or last) connection, replaced by BeginConnection. Callers copy the
  // pointer under mu_ and call the pool without it: the pool may run the low-watermark listener,
  // which may reach consumer code (a CNO agent) that calls back into this account.
  std::shared_ptr<MsnWindow> Window() const;

  mutable softdat::Mutex mu_;
  std::shared_ptr<MsnWindow> window_;
  bool live_ = false;                 // a connection began and has not closed
  std::uint32_t device_completed_ = 0;  // device model: messages of this connection completed
  bool waking_ = true;
  // A message waits for room in the window (TakeForMessage met kWindowFull): the next pop wakes
  // the waiter. Sequentially consistent with the pool lock around both (see TakeForMessage).
  std::atomic<bool> window_wait_{false};
};

}  // namespace softdat::srq
