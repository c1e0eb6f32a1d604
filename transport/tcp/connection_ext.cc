// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The RDMAP extensions of RFC 7306 on a connection, both ways: an RDMA Write with immediate data
// (the Write, then an Immediate Data message on the Send queue that takes a receive buffer like a
// Send and completes it with the immediate and the Write's length), and 64-bit atomics (an Atomic
// Request on queue 3, done where it arrives on the consumer's memory with std::atomic_ref, its
// Atomic Response queued in request order with the Read Responses; the requester's outstanding
// atomics share the ORD with its Reads). docs/WIRE.md has the formats; the data path of Sends,
// Writes and Reads does not pass through here.
#include <atomic>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/tcp_connection.h"

namespace softdat::transport::tcp {
namespace {

// RFC 7306 masked Fetch and Add: a set bit of `mask` ends a field, so no carry leaves that bit
// (mask 0 is the plain 64-bit add softdat sends).
std::uint64_t MaskedAdd(std::uint64_t a, std::uint64_t b, std::uint64_t mask) {
  std::uint64_t sum = 0, carry = 0;
  for (int bit = 0; bit < 64; ++bit) {
    const std::uint64_t x = a >> bit & 1, y = b >> bit & 1;
    sum |= (x ^ y ^ carry) << bit;
    carry = (x & y) | (carry & (x ^ y));
    if (mask >> bit & 1) carry = 0;
  }
  return sum;
}

// Performs the request on the 8 naturally aligned bytes at `at` (core checked the alignment, the
// bounds and REMOTE_ATOMIC) in one step against every other atomic on them, from any connection
// or the consumer's own atomics; returns the value before.
std::uint64_t Execute(std::uint8_t* at, const wire::AtomicRequestBody& request) {
  std::atomic_ref<std::uint64_t> word(*reinterpret_cast<std::uint64_t*>(at));
  if (request.operation == static_cast<std::uint8_t>(wire::AtomicOperation::kFetchAdd)) {
    if (request.add_or_swap_mask == 0) return word.fetch_add(request.add_or_swap);
    std::uint64_t old = word.load();
    while (!word.compare_exchange_weak(old, MaskedAdd(old, request.add_or_swap, request.add_or_swap_mask))) {
    }
    return old;
  }
  // Compare and Swap: where the compare mask's bits agree, the swap mask's bits are replaced.
  std::uint64_t old = word.load();
  do {
    if ((old & request.compare_mask) != (request.compare & request.compare_mask)) return old;
  } while (!word.compare_exchange_weak(old, (old & ~request.add_or_swap_mask) |
                                                (request.add_or_swap & request.add_or_swap_mask)));
  return old;
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

void Connection::BeginWriteImmediate(TxMessage& m, const PostedWork& slot) {
  m.kind = TxKind::kWriteImmediate;  // its Immediate Data message follows (FinishFramed)
  m.stag = slot.work.remote_key;
  m.tagged_offset = slot.work.remote_address;
  m.msn = slot.msn;  // the Immediate Data message's, on the Send queue, taken at post
}

void Connection::BeginAtomicRequest(TxMessage& m, const Work& work) {
  m.kind = TxKind::kAtomicRequest;
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
    body.operation = static_cast<std::uint8_t>(wire::AtomicOperation::kFetchAdd);
    body.add_or_swap = work.compare_add;  // masks 0: one 64-bit add
  } else {
    body.operation = static_cast<std::uint8_t>(wire::AtomicOperation::kCompareSwap);
    body.add_or_swap = work.swap;
    body.add_or_swap_mask = ~std::uint64_t{0};
    body.compare = work.compare_add;
    body.compare_mask = ~std::uint64_t{0};
  }
  OutstandingRead& entry = reads_[(reads_head_ + reads_count_) % reads_.size()];
  entry = OutstandingRead{};
  entry.work = work;
  entry.sink_stag = id;
  ++reads_count_;
}

void Connection::BeginAtomicResponse(TxMessage& m, const ReadResponse& response) {
  m.kind = TxKind::kAtomicResponse;
  m.source = nullptr;
  m.length = 0;
  m.msn = atomic_msn_++;
  m.atomic_response = response.atomic_response;
}

bool Connection::PlanExtension(const TxMessage& m, wire::FpduHeader& header) const {
  header.last = true;
  header.msn = m.msn;
  if (m.kind == TxKind::kImmediate) {
    header.opcode = m.work.solicited ? wire::Opcode::kImmediateSolicited : wire::Opcode::kImmediate;
    header.queue = wire::kQueueSend;
  } else {
    header.opcode = m.kind == TxKind::kAtomicRequest ? wire::Opcode::kAtomicRequest : wire::Opcode::kAtomicResponse;
    header.queue = wire::kQueueAtomic;
  }
  return true;
}

Connection::Frame Connection::OnImmediate(const wire::FpduHeader& header, const std::uint8_t* body,
                                          std::uint32_t length) {
  if (header.queue != wire::kQueueSend || header.msn != expected_msn_ || header.message_offset != 0 || !header.last ||
      length != 0 || rx_message_.active) {
    SOFTDAT_LOG(kInfo, "tcp %s: Immediate Data on queue %u MSN %u offset %u with %u bytes after it, expected queue 0 "
                "MSN %u offset 0 and nothing after its header",
                Describe().data(), header.queue, header.msn, header.message_offset, length, expected_msn_);
    return Fail(header.queue != wire::kQueueSend                        ? wire::term::kInvalidQueue
                : header.msn != expected_msn_ || rx_message_.active     ? wire::term::kMsnRange
                : header.message_offset != 0                            ? wire::term::kBadMessageOffset
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
  events_->OnRecvDone(header.msn, WorkStatus::kSuccess, info);
  report_pending_ = true;
  return phase_ == Phase::kEnded ? Frame::kEnded : Frame::kDone;
}

bool Connection::AtomicHeaderOk(const wire::FpduHeader& header, std::uint32_t length, const char* what) {
  if (header.queue == wire::kQueueAtomic && header.msn == expected_atomic_msn_ && header.message_offset == 0 &&
      header.last && length == 0)
    return true;
  SOFTDAT_LOG(kInfo, "tcp %s: %s on queue %u MSN %u offset %u with %u bytes after it, expected queue 3 MSN %u "
              "offset 0 and nothing after its header",
              Describe().data(), what, header.queue, header.msn, header.message_offset, length, expected_atomic_msn_);
  (void)Fail(header.queue != wire::kQueueAtomic       ? wire::term::kInvalidQueue
             : header.msn != expected_atomic_msn_     ? wire::term::kMsnRange
             : header.message_offset != 0             ? wire::term::kBadMessageOffset
                                                      : wire::term::kMessageTooLong);
  return false;
}

Connection::Frame Connection::OnAtomicRequest(const wire::FpduHeader& header, const std::uint8_t* body,
                                              std::uint32_t length) {
  if (!AtomicHeaderOk(header, length, "Atomic Request")) return Frame::kEnded;
  if (responses_count_ == responses_.size()) {
    SOFTDAT_LOG(kInfo, "tcp %s: the peer has more than %zu RDMA Reads and atomics outstanding (our IRD)",
                Describe().data(), responses_.size());
    return Fail(wire::term::kStreamCatastrophic);
  }
  wire::AtomicRequestBody request;
  wire::DecodeAtomicRequest(body, request);
  if (request.operation != static_cast<std::uint8_t>(wire::AtomicOperation::kFetchAdd) &&
      request.operation != static_cast<std::uint8_t>(wire::AtomicOperation::kCompareSwap)) {
    SOFTDAT_LOG(kInfo, "tcp %s: Atomic Request with operation %u (softdat does Fetch and Add, 0, and Compare and "
                "Swap, 2)", Describe().data(), request.operation);
    return Fail(wire::term::kBadOpcode);
  }
  const RemoteResolution target = events_->ResolveRemote(request.stag, request.offset, 8, RemoteAccess::kAtomic);
  if (target.check != RemoteCheck::kOk) return RefuseRemote(target.check, "atomic");
  ReadResponse& response = responses_[(responses_head_ + responses_count_) % responses_.size()];
  response = ReadResponse{};
  response.atomic = true;
  response.atomic_response.request_id = request.request_id;
  response.atomic_response.original = Execute(target.address, request);
  ++responses_count_;
  ++expected_atomic_msn_;
  PumpTx();
  return phase_ == Phase::kEnded ? Frame::kEnded : Frame::kDone;
}

Connection::Frame Connection::OnAtomicResponse(const wire::FpduHeader& header, const std::uint8_t* body,
                                               std::uint32_t length) {
  if (!AtomicHeaderOk(header, length, "Atomic Response")) return Frame::kEnded;
  wire::AtomicResponseBody response;
  wire::DecodeAtomicResponse(body, response);
  if (reads_count_ == 0 || !IsAtomic(reads_[reads_head_].work.kind) ||
      reads_[reads_head_].sink_stag != response.request_id) {
    SOFTDAT_LOG(kInfo, "tcp %s: Atomic Response to request %u does not match the oldest RDMA Read or atomic "
                "outstanding", Describe().data(), response.request_id);
    if (reads_count_ > 0) {
      const std::uint64_t id = reads_[reads_head_].work.id;
      PopRead();
      events_->OnWorkDone(id, WorkStatus::kBadResponse, 0);
      report_pending_ = true;
    }
    return Fail(wire::term::kStreamCatastrophic);
  }
  ++expected_atomic_msn_;
  const OutstandingRead& done = reads_[reads_head_];
  Store(done.work.local, response.original);
  const std::uint64_t id = done.work.id;
  PopRead();
  events_->OnWorkDone(id, WorkStatus::kSuccess, 8);
  report_pending_ = true;
  if (phase_ == Phase::kEnded) return Frame::kEnded;
  PumpTx();  // a fenced Work, or a Read or atomic held at the ORD, may go now
  return phase_ == Phase::kEnded ? Frame::kEnded : Frame::kDone;
}

}  // namespace softdat::transport::tcp
