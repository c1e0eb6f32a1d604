// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// SrqAccount: an EP's receive source on a shared SRQ.
#include "srq/srq_account.h"

#include <algorithm>
#include <bit>
#include <new>

#include "base/log.h"

namespace softdat::srq {

Status SrqAccount::Create(SrqPool& pool, BufferWaiter* waiter, bool device_model,
                          std::unique_ptr<SrqAccount>& out) {
  if (Status status = pool.AddUser(); !status.ok()) return status;
  try {
    out.reset(new SrqAccount(pool, waiter, device_model));
  } catch (const std::bad_alloc&) {
    pool.RemoveUser();
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  return Status::Ok();
}

SrqAccount::SrqAccount(SrqPool& pool, BufferWaiter* waiter, bool device_model)
    : pool_(pool), waiter_(waiter), device_model_(device_model) {}

SrqAccount::~SrqAccount() {
  StopWaking();
  if (std::shared_ptr<MsnWindow> window = Window(); window != nullptr) {
    (void)pool_.Close(*window);
    RecvCompletion flushed;
    // Whatever the EP did not deliver goes back to the SRQ's books as completed and reaped, so
    // the pool never counts a buffer of a gone EP as outstanding.
    while (pool_.PopCompletion(*window, flushed)) (void)pool_.Reaped(flushed.slot);
    (void)pool_.Detach(*window);
  }
  pool_.RemoveUser();
}

std::uint32_t SrqAccount::WindowFor(std::uint32_t srq_size) {
  return std::bit_ceil(std::clamp<std::uint32_t>(srq_size, 16, 4096));
}

std::shared_ptr<MsnWindow> SrqAccount::Window() const {
  std::lock_guard lock(mu_);
  return window_;
}

Status SrqAccount::CanPost() const {
  SOFTDAT_LOG(kWarn, "dat_ep_post_recv: this EP takes its receive buffers from an SRQ (dat_srq_post_recv)");
  return Status(Code::kInvalidState, Detail::kEpNotReady);
}

Status SrqAccount::Post(DAT_DTO_COOKIE, std::span<const RecvSegment>, DAT_COMPLETION_FLAGS, Posted&) {
  return CanPost();
}

Status SrqAccount::BeginConnection() {
  std::shared_ptr<MsnWindow> old = Window();
  // The previous connection's window is closed and empty (its flush is delivered).
  if (old != nullptr) {
    if (Status status = pool_.Detach(*old); !status.ok()) return status;
  }
  std::unique_ptr<MsnWindow> window;
  if (Status status = MsnWindow::Create(WindowFor(pool_.Query().max_recv_dtos), 1, window); !status.ok())
    return status;
  if (Status status = pool_.Attach(*window); !status.ok()) return status;
  {
    std::lock_guard lock(mu_);
    window_ = std::move(window);
    live_ = true;
    device_completed_ = 0;
  }
  RearmHardWatermark();
  return Status::Ok();
}

void SrqAccount::Close() {
  std::shared_ptr<MsnWindow> window;
  BufferWaiter* waiter = nullptr;
  {
    std::lock_guard lock(mu_);
    live_ = false;
    window = window_;
    if (waking_) waiter = waiter_;
  }
  // The window takes no more buffers: a wake-up the waiter had not used goes to the next EP.
  if (window != nullptr) (void)pool_.Close(*window, waiter);
}

ReceiveSource::TakeResult SrqAccount::TakeForMessage(std::uint32_t msn, RecvBuffer& out) {
  std::shared_ptr<MsnWindow> window;
  BufferWaiter* waiter = nullptr;
  {
    std::lock_guard lock(mu_);
    window = window_;
    if (waking_) waiter = waiter_;
  }
  if (window == nullptr) return TakeResult::kRefused;
  for (int attempt = 0;; ++attempt) {
    switch (pool_.Take(*window, msn, out, waiter)) {
      case SrqPool::TakeResult::kTaken: return TakeResult::kTaken;
      case SrqPool::TakeResult::kEmpty: return TakeResult::kNotReady;
      case SrqPool::TakeResult::kRefused: return TakeResult::kRefused;
      case SrqPool::TakeResult::kWindowFull: break;
    }
    // Completions before this message are placed but not delivered yet (the transport delivers
    // once its poll has released its locks). Say so, then look once more: a pop between the first
    // look and the flag saw no flag, so without the second look nobody would wake this message.
    if (attempt == 1) return TakeResult::kNotReady;
    window_wait_.store(true, std::memory_order_seq_cst);
  }
}

ReceiveSource::TakeResult SrqAccount::TakeDeviceChosen(std::uint64_t recv_id, std::uint32_t& msn,
                                                       RecvBuffer& out) {
  // The device completes one connection's messages in the peer's send order, so the next
  // completion is the next MSN. Only a completion that names a buffer moves the count on: a
  // stray one must not open a gap that in-order delivery would wait on forever.
  return TakeNextDeviceMsn(recv_id, msn, [&](MsnWindow& window, std::uint32_t slot) {
    return pool_.TakePosted(window, msn, slot, out);
  });
}

template <typename PoolStep>
ReceiveSource::TakeResult SrqAccount::TakeNextDeviceMsn(std::uint64_t recv_id, std::uint32_t& msn, PoolStep&& step) {
  std::shared_ptr<MsnWindow> window;
  {
    std::lock_guard lock(mu_);
    window = window_;
    msn = device_completed_ + 1;
  }
  if (window == nullptr || recv_id > UINT32_MAX) return TakeResult::kRefused;
  if (step(*window, static_cast<std::uint32_t>(recv_id)) != SrqPool::TakeResult::kTaken) return TakeResult::kRefused;
  std::lock_guard lock(mu_);
  device_completed_ = msn;
  return TakeResult::kTaken;
}

ReceiveSource::TakeResult SrqAccount::CompleteDeviceChosen(std::uint64_t recv_id, std::uint64_t length,
                                                           DAT_DTO_COMPLETION_STATUS status, const RecvNotes& notes,
                                                           std::uint32_t& msn) {
  // As TakeDeviceChosen, with the placement in the pool's same locked step.
  return TakeNextDeviceMsn(recv_id, msn, [&](MsnWindow& window, std::uint32_t slot) {
    return pool_.CompletePosted(window, msn, slot, length, status, notes);
  });
}

Status SrqAccount::Place(std::uint32_t msn, std::uint64_t length, DAT_DTO_COMPLETION_STATUS status,
                         const RecvNotes& notes) {
  std::shared_ptr<MsnWindow> window = Window();
  if (window == nullptr) return Status(Code::kInvalidState);
  return pool_.Place(*window, msn, length, status, notes);
}

ReceiveSource::TakeResult SrqAccount::CompleteDeviceChosenAndPop(std::uint64_t recv_id, std::uint64_t length,
                                                                 DAT_DTO_COMPLETION_STATUS status,
                                                                 const RecvNotes& notes, RecvCompletion& out,
                                                                 bool& popped) {
  popped = false;
  std::uint32_t msn = 0;
  const TakeResult taken = TakeNextDeviceMsn(recv_id, msn, [&](MsnWindow& window, std::uint32_t slot) {
    return pool_.CompletePostedAndPop(window, msn, slot, length, status, notes, out, popped);
  });
  if (popped) AfterPop(out);
  return taken;
}

bool SrqAccount::PopCompletion(RecvCompletion& out) {
  std::shared_ptr<MsnWindow> window = Window();
  if (window == nullptr || !pool_.PopCompletion(*window, out)) return false;
  AfterPop(out);
  return true;
}

void SrqAccount::AfterPop(RecvCompletion& out) {
  out.from_srq = true;
  if (window_wait_.load(std::memory_order_seq_cst) && window_wait_.exchange(false, std::memory_order_seq_cst)) {
    // The window has room again for the message that waits for it.
    BufferWaiter* waiter = nullptr;
    {
      std::lock_guard lock(mu_);
      if (waking_) waiter = waiter_;
    }
    if (waiter != nullptr) waiter->OnBuffersPosted();
  }
}

std::uint32_t SrqAccount::held() const {
  std::shared_ptr<MsnWindow> window = Window();
  if (window == nullptr) return 0;
  DAT_COUNT held = 0;
  (void)pool_.RecvQuery(*window, &held, nullptr);
  return static_cast<std::uint32_t>(held);
}

void SrqAccount::RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const {
  std::shared_ptr<MsnWindow> window;
  bool unknown = false;
  {
    std::lock_guard lock(mu_);
    window = window_;
    unknown = device_model_ && live_;
  }
  if (unknown) {
    if (nbufs_allocated != nullptr) *nbufs_allocated = DAT_VALUE_UNKNOWN;
    if (bufs_alloc_span != nullptr) *bufs_alloc_span = DAT_VALUE_UNKNOWN;
    return;
  }
  if (window == nullptr) {
    if (nbufs_allocated != nullptr) *nbufs_allocated = 0;
    if (bufs_alloc_span != nullptr) *bufs_alloc_span = 0;
    return;
  }
  (void)pool_.RecvQuery(*window, nbufs_allocated, bufs_alloc_span);
}

void SrqAccount::StopWaking() {
  {
    std::lock_guard lock(mu_);
    if (!waking_) return;
    waking_ = false;
  }
  if (waiter_ != nullptr) pool_.CancelWait(waiter_);
}

Status SrqAccount::HighWatermarksSupported() const {
  if (!device_model_) return Status::Ok();
  SOFTDAT_LOG(kWarn, "dat_ep_set_watermark: this device cannot count the buffers an SRQ EP holds "
                     "(srq_watermarks_supported has no EP high watermark bits)");
  return Status(Code::kModelNotSupported);
}

}  // namespace softdat::srq
