// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The RDMAP extensions of RFC 7306 on a connection, both ways: an RDMA Write with immediate data
// (the Write, then an Immediate Data message on the Send queue that takes a receive buffer like a
// Send and completes it with the immediate and the Write's length), and 64-bit atomics (an Atomic
// Request on queue 3, done where it arrives on the consumer's memory with std::atomic_ref, its
// Atomic Response queued in request order with the Read Responses; the requester's outstanding
// atomics share the ORD with its Reads). docs/WIRE.md has the formats; the data path of Sends,
// Writes and Reads does not pass through here.
#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "transport/remote_atomic.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/rx_stream.h"
#include "transport/tcp/tx_stream.h"

namespace softdat::transport::tcp {
namespace {

constexpr auto kFetchAdd = static_cast<std::uint8_t>(wire::AtomicOperation::kFetchAdd);
constexpr auto kCompareSwap = static_cast<std::uint8_t>(wire::AtomicOperation::kCompareSwap);

// Performs the request (core checked the alignment, the bounds and REMOTE_ATOMIC) through the
// executor every software path shares: atomic against atomics from any connection, TCP or shared
// memory, and the consumer's own; returns the value before.
std::uint64_t Execute(std::uint8_t* at, const wire::AtomicRequestBody& request) {
  AtomicOperation op;
  op.compare_swap = request.operation == kCompareSwap;
  op.add_or_swap = request.add_or_swap;
  op.add_or_swap_mask = request.add_or_swap_mask;
  op.compare = request.compare;
  op.compare_mask = request.compare_mask;
  return ExecuteAtomic(at, op);
}

// Copies the 8 bytes of `value` into `segments` (an atomic's local buffer: 8 bytes in all).
void Store(std::span<const Segment> segments, std::uint64_t value) {
  const auto* from = reinterpret_cast<const std::uint8_t*>(&value);
  std::size_t left = sizeof(value);
  for (const Segment& s : segments) {
    const std::size_t n = std::min<std::size_t>(left, s.length);
    std::memcpy(reinterpret_cast<void*>(s.address), from, n);
    from += n;
    left -= n;
    if (left == 0) return;
  }
}

bool IsAtomic(WorkKind kind) { return kind == WorkKind::kFetchAdd || kind == WorkKind::kCompareSwap; }

}  // namespace

// Transmission.

void TxStream::TakeWriteImmediate(Message& m, const PostQueue::Posted& posted) {
  m.kind = Kind::kWriteImmediate;  // its Immediate Data message follows (FinishFramed)
  m.stag = posted.work.remote_key;
  m.tagged_offset = posted.work.remote_address;
  m.msn = posted.msn;  // the Immediate Data message's, on the Send queue, taken at post
}

void TxStream::TakeAtomicRequest(Message& m, const Work& work) {
  m.kind = Kind::kAtomicRequest;
  m.msn = atomic_msn_++;
  // The identifier comes from the Read sink STags' counter: an Atomic Response and a Read
  // Response are each checked against the oldest outstanding entry, whose number is unique.
  const std::uint32_t id = next_sink_stag_++;
  if (next_sink_stag_ == 0) next_sink_stag_ = 1;
  wire::AtomicRequestBody& body = m.atomic;
  body.request_id = id;
  body.stag = work.remote_key;
  body.offset = work.remote_address;
  if (work.kind == WorkKind::kFetchAdd) {
    body.operation = kFetchAdd;
    body.add_or_swap = work.compare_add;  // masks 0: one 64-bit add
  } else {
    body.operation = kCompareSwap;
    body.add_or_swap = work.swap;
    body.add_or_swap_mask = ~std::uint64_t{0};
    body.compare = work.compare_add;
    body.compare_mask = ~std::uint64_t{0};
  }
  OutboundRead& entry = c_.reads_out_.back_slot();
  entry = OutboundRead{};
  entry.work = work;
  entry.sink_stag = id;
  c_.reads_out_.Push();
}

void TxStream::TakeAtomicResponse(Message& m, const InboundRead& read) {
  m.kind = Kind::kAtomicResponse;
  m.source = nullptr;
  m.length = 0;
  m.msn = atomic_msn_++;
  m.atomic_response = read.atomic_response;
}

bool TxStream::PlanExtension(const Message& m, wire::FpduHeader& header) const {
  header.last = true;
  header.msn = m.msn;
  if (m.kind == Kind::kImmediate) {
    header.opcode = m.work.solicited ? wire::Opcode::kImmediateSolicited : wire::Opcode::kImmediate;
    header.queue = wire::kQueueSend;
  } else {
    header.opcode = m.kind == Kind::kAtomicRequest ? wire::Opcode::kAtomicRequest : wire::Opcode::kAtomicResponse;
    header.queue = wire::kQueueAtomic;
  }
  return true;
}

// Reception.

RxStream::Frame RxStream::OnImmediate(const wire::FpduHeader& header, const std::uint8_t* body,
                                      std::uint32_t length) {
  if (header.queue != wire::kQueueSend || header.msn != expected_msn_ || header.message_offset != 0 || !header.last ||
      length != 0 || message_.active) {
    SOFTDAT_LOG(kInfo,
                "tcp %s: Immediate Data on queue %u MSN %u offset %u with %u bytes after it, expected queue 0 MSN "
                "%u offset 0 and nothing after its header",
                c_.Describe().data(), header.queue, header.msn, header.message_offset, length, expected_msn_);
    return Fail(header.queue != wire::kQueueSend                    ? wire::term::kInvalidQueue
                : header.msn != expected_msn_ || message_.active    ? wire::term::kMsnRange
                : header.message_offset != 0                        ? wire::term::kBadMessageOffset
                                                                    : wire::term::kMessageTooLong);
  }
  RecvTarget target;  // taken, as a Send would; nothing is placed in it
  if (const Frame frame = AcquireFor(header, target); frame != Frame::kDone) return frame;
  RecvInfo info;
  info.solicited = header.opcode == wire::Opcode::kImmediateSolicited;
  info.extension.immediate = true;
  info.extension.immediate_data = wire::DecodeImmediate(body);
  info.extension.written = last_write_length_;
  last_write_length_ = 0;  // an Immediate Data message with no Write before it reports 0
  ++expected_msn_;
  c_.events_->OnRecvDone(header.msn, WorkStatus::kSuccess, info);
  c_.Reported();
  return ended() ? Frame::kEnded : Frame::kDone;
}

bool RxStream::AtomicHeaderOk(const wire::FpduHeader& header, std::uint32_t length, const char* what) {
  if (header.queue == wire::kQueueAtomic && header.msn == expected_atomic_msn_ && header.message_offset == 0 &&
      header.last && length == 0)
    return true;
  SOFTDAT_LOG(kInfo,
              "tcp %s: %s on queue %u MSN %u offset %u with %u bytes after it, expected queue 3 MSN %u offset 0 "
              "and nothing after its header",
              c_.Describe().data(), what, header.queue, header.msn, header.message_offset, length,
              expected_atomic_msn_);
  (void)Fail(header.queue != wire::kQueueAtomic    ? wire::term::kInvalidQueue
             : header.msn != expected_atomic_msn_  ? wire::term::kMsnRange
             : header.message_offset != 0          ? wire::term::kBadMessageOffset
                                                   : wire::term::kMessageTooLong);
  return false;
}

RxStream::Frame RxStream::OnAtomicRequest(const wire::FpduHeader& header, const std::uint8_t* body,
                                          std::uint32_t length) {
  if (!AtomicHeaderOk(header, length, "Atomic Request")) return Frame::kEnded;
  if (c_.reads_in_.full()) {
    SOFTDAT_LOG(kInfo, "tcp %s: the peer has more than %zu RDMA Reads and atomics outstanding (our IRD)",
                c_.Describe().data(), c_.reads_in_.capacity());
    return Fail(wire::term::kStreamCatastrophic);
  }
  wire::AtomicRequestBody request;
  wire::DecodeAtomicRequest(body, request);
  if (request.operation != kFetchAdd && request.operation != kCompareSwap) {
    SOFTDAT_LOG(kInfo,
                "tcp %s: Atomic Request with operation %u (softdat does Fetch and Add, 0, and Compare and Swap, 2)",
                c_.Describe().data(), request.operation);
    return Fail(wire::term::kBadOpcode);
  }
  const RemoteResolution target = c_.events_->ResolveRemote(request.stag, request.offset, 8, RemoteAccess::kAtomic);
  if (target.check != RemoteCheck::kOk) return RefuseRemote(target.check, "atomic");
  InboundRead& response = c_.reads_in_.back_slot();
  response = InboundRead{};
  response.atomic = true;
  response.atomic_response.request_id = request.request_id;
  response.atomic_response.original = Execute(target.address, request);
  c_.reads_in_.Push();
  ++expected_atomic_msn_;
  c_.tx_.Pump();
  return ended() ? Frame::kEnded : Frame::kDone;
}

RxStream::Frame RxStream::OnAtomicResponse(const wire::FpduHeader& header, const std::uint8_t* body,
                                           std::uint32_t length) {
  if (!AtomicHeaderOk(header, length, "Atomic Response")) return Frame::kEnded;
  wire::AtomicResponseBody response;
  wire::DecodeAtomicResponse(body, response);
  if (c_.reads_out_.empty() || !IsAtomic(c_.reads_out_.front().work.kind) ||
      c_.reads_out_.front().sink_stag != response.request_id) {
    SOFTDAT_LOG(kInfo, "tcp %s: Atomic Response to request %u does not match the oldest RDMA Read or atomic outstanding",
                c_.Describe().data(), response.request_id);
    if (!c_.reads_out_.empty()) {
      const std::uint64_t id = c_.reads_out_.front().work.id;
      c_.reads_out_.Pop();
      c_.events_->OnWorkDone(id, WorkStatus::kBadResponse, 0);
      c_.Reported();
    }
    return Fail(wire::term::kStreamCatastrophic);
  }
  ++expected_atomic_msn_;
  const OutboundRead& done = c_.reads_out_.front();
  Store(done.work.local, response.original);
  const std::uint64_t id = done.work.id;
  c_.reads_out_.Pop();
  c_.events_->OnWorkDone(id, WorkStatus::kSuccess, 8);
  c_.Reported();
  if (ended()) return Frame::kEnded;
  c_.tx_.Pump();  // a fenced Work, or a Read or atomic held at the ORD, may go now
  return ended() ? Frame::kEnded : Frame::kDone;
}

}  // namespace softdat::transport::tcp
