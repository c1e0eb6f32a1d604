// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What every receive source shares (the high-watermark rule, a whole message's three steps) and
// the choice of source for a new EP.
#include "srq/receive_source.h"

#include <algorithm>

#include "base/log.h"
#include "srq/ep_recv_queue.h"
#include "srq/srq_account.h"

namespace softdat::srq {

ReceiveSource::WholeResult ReceiveSource::TakeAndPlace(std::uint32_t msn, std::span<const std::uint8_t> bytes,
                                                       const RecvNotes& notes) {
  RecvBuffer buffer{};
  switch (TakeForMessage(msn, buffer)) {
    case TakeResult::kTaken: break;
    case TakeResult::kNotReady: return WholeResult::kNotReady;
    case TakeResult::kRefused: return WholeResult::kRefused;
  }
  const bool fits = bytes.size() <= buffer.capacity;
  if (fits) CopyIntoSegments({buffer.segments, buffer.num_segments}, bytes.data(), bytes.size());
  // Taken just now, so it holds this message: a refusal here is this source's own inconsistency,
  // and the transport ends the connection on kRefused (the buffer is flushed with it).
  if (Status placed = Place(msn, fits ? bytes.size() : 0, fits ? DAT_DTO_SUCCESS : DAT_DTO_ERR_LOCAL_LENGTH, notes);
      !placed.ok()) {
    SOFTDAT_LOG(kWarn, "receive source %p: message %u, just taken, could not be placed (%s)", static_cast<void*>(this),
                msn, CodeName(placed.code()));
    return WholeResult::kRefused;
  }
  return fits ? WholeResult::kPlaced : WholeResult::kTooLong;
}

ReceiveSource::TakeResult ReceiveSource::CompleteDeviceChosenAndPop(std::uint64_t recv_id, std::uint64_t length,
                                                                    DAT_DTO_COMPLETION_STATUS status,
                                                                    const RecvNotes& notes, RecvCompletion& out,
                                                                    bool& popped) {
  std::uint32_t msn = 0;
  const TakeResult taken = CompleteDeviceChosen(recv_id, length, status, notes, msn);
  popped = taken == TakeResult::kTaken && PopCompletion(out);
  return taken;
}

Status ReceiveSource::SetHighWatermarks(DAT_COUNT soft, DAT_COUNT hard, bool connected, Crossing& crossed) {
  if (soft < 0 && soft != DAT_WATERMARK_INFINITE) return Status(Code::kInvalidParameter, Detail::kParamSoftWatermark);
  if (hard < 0 && hard != DAT_WATERMARK_INFINITE) return Status(Code::kInvalidParameter, Detail::kParamHardWatermark);
  if (soft != DAT_WATERMARK_INFINITE || hard != DAT_WATERMARK_INFINITE) {
    if (Status supported = HighWatermarksSupported(); !supported.ok()) return supported;
  }
  {
    std::lock_guard lock(watermark_mutex_);
    soft_high_watermark_ = soft;
    hard_high_watermark_ = hard;
    soft_armed_ = soft != DAT_WATERMARK_INFINITE;
    UpdateArmedLocked();
  }
  // The count is read after armed_ is set: a buffer taken concurrently is seen either here or by
  // its taker's CheckHighWatermarks, which then finds armed_ set (held() takes the lock the taker
  // counts under). A crossing one of them reports is disarmed for the other.
  const std::uint32_t now = held();
  std::lock_guard lock(watermark_mutex_);
  crossed = CrossingLocked(now, connected);
  return Status::Ok();
}

ReceiveSource::Crossing ReceiveSource::CheckHighWatermarks(bool connected) {
  if (!watermarks_armed()) return Crossing{};  // the usual case: no lock, no count
  const std::uint32_t now = held();
  std::lock_guard lock(watermark_mutex_);
  return CrossingLocked(now, connected);
}

void ReceiveSource::UpdateArmedLocked() {
  armed_.store(soft_armed_ || (hard_high_watermark_ != DAT_WATERMARK_INFINITE && !hard_tripped_));
}

ReceiveSource::Crossing ReceiveSource::CrossingLocked(std::uint32_t held, bool connected) {
  Crossing crossed;
  // "Above" the watermark: more buffers held than its value.
  if (soft_armed_ && held > static_cast<std::uint32_t>(soft_high_watermark_)) {
    soft_armed_ = false;  // one event per setting
    crossed.soft = true;
  }
  if (hard_high_watermark_ != DAT_WATERMARK_INFINITE && !hard_tripped_ && connected &&
      held > static_cast<std::uint32_t>(hard_high_watermark_)) {
    hard_tripped_ = true;  // one break per connection
    crossed.hard = true;
  }
  if (crossed.soft || crossed.hard) UpdateArmedLocked();
  return crossed;
}

void ReceiveSource::RearmHardWatermark() {
  std::lock_guard lock(watermark_mutex_);
  hard_tripped_ = false;
  UpdateArmedLocked();
}

Status CreateReceiveSource(const ReceiveSourceConfig& config, std::unique_ptr<ReceiveSource>& out) {
  if (config.pool != nullptr) {
    std::unique_ptr<SrqAccount> account;
    if (Status status = SrqAccount::Create(*config.pool, config.waiter, config.device_model, account);
        !status.ok())
      return status;
    out = std::move(account);
    return Status::Ok();
  }
  std::unique_ptr<EpRecvQueue> queue;
  if (Status status = EpRecvQueue::Create(config.max_recv_dtos, config.max_recv_iov, queue); !status.ok())
    return status;
  out = std::move(queue);
  return Status::Ok();
}

const char* RefusedReceiveAttribute(const ReceiveSourceConfig& config, DAT_COUNT max_recv_dtos,
                                    DAT_COUNT max_recv_iov, DAT_COMPLETION_FLAGS recv_completion_flags,
                                    std::uint32_t max_recv_work, std::uint32_t max_segments) {
  const bool shared = config.pool != nullptr;
  const auto in_range = [](DAT_COUNT value, std::uint32_t max) {
    return value >= 0 && static_cast<std::uint32_t>(value) <= max;
  };
  if (!shared && !in_range(max_recv_dtos, std::min(max_recv_work, EpRecvQueue::kMaxRecvDtos)))
    return "max_recv_dtos";
  if (!in_range(max_recv_iov, std::min(max_segments, EpRecvQueue::kMaxRecvIov))) return "max_recv_iov";
  if (!shared && (recv_completion_flags & DAT_COMPLETION_EVD_THRESHOLD_FLAG) &&
      (recv_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG))
    return "recv_completion_flags";
  return nullptr;
}

}  // namespace softdat::srq
