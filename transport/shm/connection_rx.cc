// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Reception on a shared-memory connection: the peer's records, each checked like a received
// FPDU (the ring checked its framing; here MSNs, offsets, lengths against the message and the
// receive buffer, pull descriptors, Read numbers against the IRD and our outstanding Reads), then
// placed. A Send takes its receive buffer when its first record arrives (AcquireRecv); with none
// to take the record stays unconsumed in the ring and nothing behind it is read, until
// RecvBuffersAvailable or the RNR timeout. A pulled Send is copied from the sender's memory
// straight into the buffer. An RDMA Write or Read Request through the ring is checked by core
// (ResolveRemote), as on the wire. Runs with the io lock held, from a poll.
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "transport/remote_atomic.h"
#include "transport/shm/cma.h"
#include "transport/shm/shm_connection.h"

namespace softdat::transport::shm {
namespace {

// Records one poll reads before it lets the poller go on.
constexpr int kRecordBudget = 256;
// Bytes of a pulled Send one poll copies: a large Send takes several polls, so that one
// connection's 32 MiB copy does not hold up the others (and the receive buffer is seen taken
// before the message completes, as over TCP).
constexpr std::uint64_t kPullPerPoll = 4 << 20;

bool IsAtomic(WorkKind kind) { return kind == WorkKind::kFetchAdd || kind == WorkKind::kCompareSwap; }

RecvInfo InfoOf(const RecordHeader& header, std::uint32_t length) {
  RecvInfo info;
  info.length = length;
  info.solicited = (header.flags & kFlagSolicited) != 0;
  info.invalidated = (header.flags & kFlagInvalidate) != 0;
  info.invalidate_key = info.invalidated ? header.key : 0;
  return info;
}

}  // namespace

bool Connection::ReadRecords() {
  bool moved = false;
  for (int i = 0; i < kRecordBudget && !held_.load(std::memory_order_relaxed); ++i) {
    RecordHeader header;
    const std::uint8_t* payload = nullptr;
    const RingReader::Next next = reader_.Peek(header, payload);
    if (next == RingReader::Next::kEmpty) break;
    if (next == RingReader::Next::kCorrupt) {
      (void)Fail("a malformed record in the ring");
      return true;
    }
    Rx rx = Rx::kDone;
    switch (header.opcode) {
      case Opcode::kSend: rx = OnSend(header, payload); break;
      case Opcode::kSendPull: rx = OnPull(header, payload); break;
      case Opcode::kWrite: rx = OnWrite(header, payload); break;
      case Opcode::kReadRequest: rx = OnReadRequest(header); break;
      case Opcode::kReadResponse: rx = OnReadResponse(header, payload); break;
      case Opcode::kImmediate: rx = OnImmediate(header); break;
      case Opcode::kAtomicRequest: rx = OnAtomicRequest(header, payload); break;
      case Opcode::kAtomicResponse: rx = OnAtomicResponse(header, payload); break;
      case Opcode::kPad: rx = Fail("a pad where a record belongs"); break;
    }
    if (rx == Rx::kEnded) return true;
    if (rx == Rx::kPartial) moved = true;
    if (rx == Rx::kHeld || rx == Rx::kPartial) break;
    reader_.Consume(header);
    moved = true;
  }
  head_word_.store(reader_.SizeWord(), std::memory_order_relaxed);
  if (reader_.Publish()) MaybeRing();
  return moved;
}

Connection::Rx Connection::StartMessage(const RecordHeader& header, std::uint32_t places) {
  if (header.msn != expected_msn_ || header.offset != 0) {
    SOFTDAT_LOG(kInfo, "shm: Send MSN %u offset %llu from process %d, expected MSN %u offset 0", header.msn,
                static_cast<unsigned long long>(header.offset), static_cast<int>(peer_pid_), expected_msn_);
    return Fail("a Send out of order");
  }
  RecvTarget target;
  report_pending_ = true;  // a buffer taken may cross a watermark
  // Held from before the question: a RecvBuffersAvailable that comes while core answers "not
  // ready" must find the flag set, or its note would be dropped and the Send stay held. (Core
  // answers under its receive source's lock, which the consumer's post takes before it calls
  // RecvBuffersAvailable: that orders this store before its load.)
  held_.store(true, std::memory_order_release);
  switch (events_->AcquireRecv(header.msn, target)) {
    case RecvAcquire::kTaken:
      break;
    case RecvAcquire::kNotReady:
      ArmRnr();
      return Rx::kHeld;
    case RecvAcquire::kRefused:
      held_.store(false, std::memory_order_relaxed);
      return Fail("a Send that may not take a receive buffer");
  }
  held_.store(false, std::memory_order_relaxed);
  rnr_deadline_ns_ = 0;
  if (places > target.capacity) {
    SOFTDAT_LOG(kInfo, "shm: Send MSN %u of %u bytes is longer than its receive buffer (%llu bytes)", header.msn, places,
                static_cast<unsigned long long>(target.capacity));
    events_->OnRecvDone(header.msn, WorkStatus::kLocalLength, InfoOf(header, 0));
    return Fail("a Send longer than its receive buffer");
  }
  // Field by field: pull_from (1 KiB) is read only below pull_count, and zeroing it per message
  // was most of this function's instructions.
  rx_.active = true;
  rx_.awaiting_resend = false;
  rx_.pulling = false;
  rx_.msn = header.msn;
  rx_.total = header.total;
  rx_.received = 0;
  rx_.target = target;
  rx_.cursor = SegmentCursor{};
  rx_.pull_count = 0;
  return Rx::kDone;
}

Connection::Rx Connection::ReceiveWhole(const RecordHeader& header, const std::uint8_t* payload) {
  if (header.msn != expected_msn_ || header.offset != 0) return StartMessage(header, header.total);  // its log, its end
  report_pending_ = true;  // a buffer taken may cross a watermark
  held_.store(true, std::memory_order_release);  // before the question, as in StartMessage
  switch (events_->ReceiveWhole(header.msn, {payload, header.length}, InfoOf(header, header.length))) {
    case WholeReceive::kPlaced: break;
    case WholeReceive::kNotReady:
      ArmRnr();
      return Rx::kHeld;
    case WholeReceive::kRefused:
      held_.store(false, std::memory_order_relaxed);
      return Fail("a Send that may not take a receive buffer");
    case WholeReceive::kTooLong:
      held_.store(false, std::memory_order_relaxed);
      SOFTDAT_LOG(kInfo, "shm: Send MSN %u of %u bytes is longer than its receive buffer", header.msn, header.total);
      return Fail("a Send longer than its receive buffer");
  }
  held_.store(false, std::memory_order_relaxed);
  rnr_deadline_ns_ = 0;
  ++expected_msn_;
  return Rx::kDone;
}

Connection::Rx Connection::OnSend(const RecordHeader& header, const std::uint8_t* payload) {
  if (!rx_.active) {
    // The usual small Send: one record, the whole message.
    if ((header.flags & kFlagLast) != 0 && header.length == header.total && header.total <= kMaxWholeReceive)
      return ReceiveWhole(header, payload);
    if (Rx rx = StartMessage(header, header.total); rx != Rx::kDone) return rx;
  } else if (header.msn != rx_.msn || header.offset != rx_.received || header.total != rx_.total) {
    return Fail("a Send record that does not continue its message");
  }
  if (header.length > rx_.total - rx_.received) return Fail("a Send record past its message's length");
  rx_.awaiting_resend = false;
  Scatter(rx_.target.segments, rx_.cursor, payload, header.length);
  rx_.received += header.length;
  const bool last = (header.flags & kFlagLast) != 0;
  if (last != (rx_.received == rx_.total)) return Fail("a Send whose last record is not where its length says");
  if (!last) return Rx::kDone;
  rx_.active = false;
  ++expected_msn_;
  events_->OnRecvDone(rx_.msn, WorkStatus::kSuccess, InfoOf(header, rx_.received));
  report_pending_ = true;
  return Rx::kDone;
}

Connection::Rx Connection::OnPull(const RecordHeader& header, const std::uint8_t* payload) {
  if (rx_.active && !rx_.pulling) return Fail("a pull record inside another Send");
  if (!rx_.active) {
    const std::uint16_t count = header.segments;
    if (count == 0 || count > kMaxPullSegments || header.length != count * sizeof(PullSegment) ||
        (header.flags & kFlagLast) == 0)
      return Fail("a malformed pull record");
    PullSegment pieces[kMaxPullSegments];
    std::memcpy(pieces, payload, header.length);  // once: the peer may change the ring under us
    std::uint64_t sum = 0;
    for (std::uint16_t i = 0; i < count; ++i) {
      if (pieces[i].length > header.total) return Fail("a pull record whose pieces exceed its length");
      sum += pieces[i].length;
    }
    if (sum != header.total) return Fail("a pull record whose pieces disagree with its length");
    if (Rx rx = StartMessage(header, header.total); rx != Rx::kDone) return rx;
    rx_.pulling = true;
    rx_.pull_count = count;
    for (std::uint16_t i = 0; i < count; ++i)
      rx_.pull_from[i] = Segment{pieces[i].address, static_cast<std::uint32_t>(pieces[i].length), 0};
  } else if (header.msn != rx_.msn || header.total != rx_.total || header.opcode != Opcode::kSendPull) {
    return Fail("a pull record that changed while it was being copied");
  }
  const std::uint64_t n = std::min<std::uint64_t>(kPullPerPoll, rx_.total - rx_.received);
  CmaResult result = CmaResult::kRefused;
  iovec local[kMaxPullSegments];
  iovec remote[kMaxPullSegments];
  const std::size_t local_count = SegmentIovecs(rx_.target.segments, rx_.received, n, local);
  const std::size_t remote_count =
      SegmentIovecs({rx_.pull_from, rx_.pull_count}, rx_.received, n, remote);
  if (attach_ && ((local_count != 0 && remote_count != 0) || n == 0))
    result = CrossMemoryCopy(peer_pid_, false, {local, local_count}, {remote, remote_count}, n);
  if (result == CmaResult::kFault) return Fail("the sender's memory is not where its pull record says");
  if (result == CmaResult::kRefused) {
    // The bytes come again, whole, through the ring, as kSend records of this MSN; the record is
    // consumed (and our refusal published before the consumed count).
    if (attach_) {
      SOFTDAT_LOG(kInfo, "shm: the kernel refused cross-memory attach to process %d: its Sends come through the ring",
                  static_cast<int>(peer_pid_));
      attach_ = false;
    }
    StoreRelease(&my_control_->pull_refused, header.msn);
    rx_.pulling = false;
    rx_.awaiting_resend = true;
    rx_.received = 0;
    return Rx::kDone;
  }
  rx_.received += static_cast<std::uint32_t>(n);
  if (rx_.received < rx_.total) return Rx::kPartial;
  rx_.active = false;
  rx_.pulling = false;
  ++expected_msn_;
  events_->OnRecvDone(header.msn, WorkStatus::kSuccess, InfoOf(header, header.total));
  report_pending_ = true;
  return Rx::kDone;
}

Connection::Rx Connection::OnWrite(const RecordHeader& header, const std::uint8_t* payload) {
  if (header.length == 0) return Rx::kDone;  // a zero-length Write touches nothing
  const RemoteResolution target = events_->ResolveRemote(header.key, header.offset, header.length, RemoteAccess::kWrite);
  if (target.check != RemoteCheck::kOk) return Fail("the peer's RDMA Write was refused", target.check);
  std::memcpy(target.address, payload, header.length);
  return Rx::kDone;
}

Connection::Rx Connection::OnReadRequest(const RecordHeader& header) {
  if (header.msn != expected_read_msn_ || header.length != 0) return Fail("a Read Request out of order");
  if (responses_count_ == responses_.size()) return Fail("more RDMA Reads outstanding than our IRD");
  const std::uint8_t* source = nullptr;
  if (header.total != 0) {
    const RemoteResolution resolved = events_->ResolveRemote(header.key, header.offset, header.total, RemoteAccess::kRead);
    if (resolved.check != RemoteCheck::kOk) return Fail("the peer's RDMA Read was refused", resolved.check, kReadRefused);
    source = resolved.address;
  }
  responses_[Wrap(responses_head_ + responses_count_, responses_.size())] = Response{source, header.total, 0, header.msn};
  ++responses_count_;
  ++expected_read_msn_;
  return Rx::kDone;
}

Connection::Rx Connection::OnReadResponse(const RecordHeader& header, const std::uint8_t* payload) {
  if (reads_count_ == 0) return Fail("a Read Response with no RDMA Read outstanding");
  RingRead& read = reads_[reads_head_];
  const bool last = (header.flags & kFlagLast) != 0;
  if (IsAtomic(read.work.kind) || header.msn != read.msn || header.offset != read.received ||
      header.length > read.work.length - read.received || last != (read.received + header.length == read.work.length)) {
    const std::uint64_t id = read.work.id;
    reads_head_ = Wrap(reads_head_ + 1, reads_.size());
    --reads_count_;
    events_->OnWorkDone(id, WorkStatus::kBadResponse, 0);
    report_pending_ = true;
    return Fail("a Read Response that does not match the Read outstanding");
  }
  Scatter(read.work.local, read.cursor, payload, header.length);
  read.received += header.length;
  if (!last) return Rx::kDone;
  const std::uint64_t id = read.work.id;
  const auto length = static_cast<std::uint32_t>(read.work.length);
  reads_head_ = Wrap(reads_head_ + 1, reads_.size());
  --reads_count_;
  events_->OnWorkDone(id, WorkStatus::kSuccess, length);
  report_pending_ = true;
  return Rx::kDone;
}

// The second half of an RDMA Write with immediate data (its Write came before): takes a receive
// buffer as a Send does (held, RNR timeout, SRQ accounting by core) and places nothing in it.
Connection::Rx Connection::OnImmediate(const RecordHeader& header) {
  if (rx_.active) return Fail("an Immediate record inside a Send");
  if (header.length != 0 || header.offset != 0 || (header.flags & kFlagLast) == 0) return Fail("a malformed Immediate record");
  if (Rx rx = StartMessage(header, 0); rx != Rx::kDone) return rx;
  rx_.active = false;
  ++expected_msn_;
  RecvInfo info;
  info.solicited = (header.flags & kFlagSolicited) != 0;
  info.extension.immediate = true;
  info.extension.immediate_data = header.key;
  info.extension.written = header.total;
  events_->OnRecvDone(header.msn, WorkStatus::kSuccess, info);
  report_pending_ = true;
  return Rx::kDone;
}

// The peer's Fetch and Add or Compare and Swap: core checks the key (bounds, alignment,
// REMOTE_ATOMIC, association) as for a Read, the shared executor does it on our memory, and the
// original value goes back in Read order (PumpResponse).
Connection::Rx Connection::OnAtomicRequest(const RecordHeader& header, const std::uint8_t* payload) {
  if (header.msn != expected_read_msn_ || header.length != sizeof(AtomicPayload) ||
      header.total != sizeof(std::uint64_t) || (header.flags & kFlagLast) == 0)
    return Fail("an atomic request out of order or malformed");
  if (responses_count_ == responses_.size()) return Fail("more RDMA Reads and atomics outstanding than our IRD");
  AtomicPayload request;
  std::memcpy(&request, payload, sizeof request);  // once: the peer may change the ring under us
  const RemoteResolution target = events_->ResolveRemote(header.key, header.offset, sizeof(std::uint64_t), RemoteAccess::kAtomic);
  if (target.check != RemoteCheck::kOk) return Fail("the peer's atomic was refused", target.check, kReadRefused);
  AtomicOperation op;
  if ((header.flags & kFlagCompareSwap) != 0) {
    op.compare_swap = true;
    op.add_or_swap = request.swap;
    op.add_or_swap_mask = ~std::uint64_t{0};
    op.compare = request.compare_add;
    op.compare_mask = ~std::uint64_t{0};
  } else {
    op.add_or_swap = request.compare_add;
  }
  Response& response = responses_[Wrap(responses_head_ + responses_count_, responses_.size())];
  response = Response{};
  response.atomic = true;
  response.msn = header.msn;
  response.length = sizeof(std::uint64_t);
  response.original = ExecuteAtomic(target.address, op);
  ++responses_count_;
  ++expected_read_msn_;
  return Rx::kDone;
}

Connection::Rx Connection::OnAtomicResponse(const RecordHeader& header, const std::uint8_t* payload) {
  if (reads_count_ == 0) return Fail("an atomic response with no atomic outstanding");
  RingRead& read = reads_[reads_head_];
  const std::uint64_t id = read.work.id;
  reads_head_ = Wrap(reads_head_ + 1, reads_.size());
  --reads_count_;
  if (!IsAtomic(read.work.kind) || header.msn != read.msn || header.length != sizeof(std::uint64_t) ||
      header.offset != 0 || (header.flags & kFlagLast) == 0) {
    events_->OnWorkDone(id, WorkStatus::kBadResponse, 0);
    report_pending_ = true;
    return Fail("an atomic response that does not match the oldest Read or atomic outstanding");
  }
  Scatter(read.work.local, read.cursor, payload, sizeof(std::uint64_t));
  events_->OnWorkDone(id, WorkStatus::kSuccess, sizeof(std::uint64_t));
  report_pending_ = true;
  return Rx::kDone;
}

}  // namespace softdat::transport::shm
