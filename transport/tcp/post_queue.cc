// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// PostQueue: the ring of posted Work, inline copies, and Sends framed whole at post.
#include "transport/tcp/post_queue.h"

#include <cstring>
#include <iterator>

#include "transport/tcp/crc32c.h"
#include "transport/tcp/gather.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {

namespace {

// By WorkKind, looked up on every post rather than branched on: whether the Work takes a Send MSN
// (a Send; the Immediate Data message after a Write with immediate data), and whether its payload
// is a source copied at post when small (Sends and Writes; a Read's and an atomic's local memory
// is where the answer lands).
constexpr std::uint32_t kTakesSendMsn[] = {1, 0, 0, 1, 0, 0, 0};
constexpr bool kCopiesPayload[] = {true, true, false, true, false, false, false};
static_assert(std::size(kTakesSendMsn) == static_cast<std::size_t>(WorkKind::kSendDatagram) + 1);
static_assert(std::size(kCopiesPayload) == std::size(kTakesSendMsn));

}  // namespace

// A Send framed at post fits one inline allocation and one FPDU.
static_assert(InlineRing::kMaxAllocation >= InlineRing::kMaxInline + wire::kUntaggedHeaderSize + 3 + wire::kCrcSize);
static_assert(InlineRing::kMaxInline <= wire::kMaxFpduPayload);

void PostQueue::EnableFraming(bool crc) {
  std::lock_guard lock(mutex_);
  framing_ = crc ? Framing::kWithCrc : Framing::kWithoutCrc;
}

Status PostQueue::Add(const Work& work) {
  std::lock_guard lock(mutex_);
  const std::uint32_t count = count_.load(std::memory_order_relaxed);
  if (count == slots_.size()) return Status(Code::kInsufficientResources, Detail::kTep);
  // Ring positions wrap by comparison: a division by the ring's size (a runtime value) costs tens
  // of cycles, three of them on every small Send's way to its send().
  std::size_t at = std::size_t{head_} + count;
  if (at >= slots_.size()) at -= slots_.size();
  Posted& slot = slots_[at];
  slot.work = work;
  slot.inline_charged = 0;
  slot.framed = false;
  const auto kind = static_cast<std::size_t>(work.kind);
  slot.msn = send_msn_;
  send_msn_ += kTakesSendMsn[kind];
  if (work.kind == WorkKind::kSend && framing_ != Framing::kNotYet) {
    FrameAtPost(slot, framing_ == Framing::kWithCrc);
  } else if (kCopiesPayload[kind]) {
    CopyInline(slot);
  }
  count_.store(count + 1, std::memory_order_release);
  return Status::Ok();
}

void PostQueue::CopyInline(Posted& slot) {
  const Work& work = slot.work;
  if (work.length == 0 || work.length > InlineRing::kMaxInline) return;
  std::uint32_t charged = 0;
  std::uint8_t* copy = inline_.Allocate(work.length, charged);
  if (copy == nullptr) return;  // the ring is full: read at framing time, like a large one
  (void)Gather(work.local, copy);
  slot.inline_segment = Segment{reinterpret_cast<std::uint64_t>(copy), static_cast<std::uint32_t>(work.length), 0};
  slot.inline_charged = charged;
}

// Everything in the FPDU is known now: Sends are framed in post order, so the MSN is the post's.
void PostQueue::FrameAtPost(Posted& slot, bool crc) {
  const Work& work = slot.work;
  if (work.length == 0 || work.length > InlineRing::kMaxInline) return;  // framed later
  wire::FpduHeader header;
  header.opcode = wire::SendOpcode(work.solicited, work.invalidate);
  header.last = true;
  header.stag = work.invalidate ? work.invalidate_key : 0;
  header.queue = wire::kQueueSend;
  header.msn = slot.msn;
  header.message_offset = 0;
  const std::size_t header_size = wire::HeaderSize(header.opcode);
  const std::size_t ulpdu = header_size - wire::kLengthFieldSize + work.length;
  header.ulpdu_length = static_cast<std::uint16_t>(ulpdu);
  const std::size_t pad = wire::PadSize(ulpdu);
  const std::size_t size = header_size + work.length + pad + wire::kCrcSize;
  std::uint32_t charged = 0;
  std::uint8_t* frame = inline_.Allocate(size, charged);
  if (frame == nullptr) return;  // the ring is full: framed later, like a large one
  (void)wire::EncodeHeader(header, frame);
  std::uint8_t* at = Gather(work.local, frame + header_size);
  std::memset(at, 0, pad);
  // One CRC call over header, payload and pad, all in L1 after the copy: an ISA-L call costs more
  // than the CRC of a few dozen bytes (docs/PERFORMANCE.md, "Small messages").
  wire::StoreLe32(at + pad, crc ? Crc32cFinal(Crc32cUpdate(kCrc32cInit, frame, size - wire::kCrcSize)) : 0);
  slot.inline_segment = Segment{reinterpret_cast<std::uint64_t>(frame), static_cast<std::uint32_t>(size), 0};
  slot.inline_charged = charged;
  slot.framed = true;
}

bool PostQueue::TakeLoneFramed(Posted& out) {
  std::lock_guard lock(mutex_);
  const Posted& slot = slots_[head_];
  if (count_.load(std::memory_order_relaxed) != 1 || !slot.framed) return false;
  PopLocked(out, 1);
  return true;
}

void PostQueue::PopLocked(Posted& out, std::uint32_t count) {
  out = slots_[head_];  // with an inline copy, work.local still names the consumer's memory
  if (++head_ == slots_.size()) head_ = 0;
  count_.store(count - 1, std::memory_order_relaxed);
}

void PostQueue::ReleaseInline(std::uint32_t charged) {
  std::lock_guard lock(mutex_);
  inline_.Release(charged);
}

bool PostQueue::Empty() {
  std::lock_guard lock(mutex_);
  return count_.load(std::memory_order_relaxed) == 0;
}

}  // namespace softdat::transport::tcp
