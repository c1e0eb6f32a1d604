// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// RxStream, placing: where each FPDU's payload goes (a Send into the buffer core hands out, an
// RDMA Write or Read Response where its STag says), Read Requests and Terminates, the completions
// reported to core, and holding a Send that finds no receive buffer.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/rx_stream.h"

namespace softdat::transport::tcp {
namespace {

wire::TerminateCode RemoteTerminate(RemoteCheck check) {
  switch (check) {
    case RemoteCheck::kBounds: return wire::term::kBaseBounds;
    case RemoteCheck::kAccessRights: return wire::term::kAccessRights;
    case RemoteCheck::kNotAssociated: return wire::term::kStagNotAssociated;
    default: return wire::term::kInvalidStag;
  }
}

}  // namespace

RxStream::Frame RxStream::BeginPayload(const wire::FpduHeader& header, std::uint32_t length, Placement& out) {
  switch (header.opcode) {
    case wire::Opcode::kRdmaWrite: return BeginWrite(header, length, out);
    case wire::Opcode::kReadResponse: return BeginReadResponse(header, length, out);
    default: return BeginSend(header, length, out);
  }
}

RxStream::Frame RxStream::FinishPayload(const wire::FpduHeader& header, std::uint32_t length) {
  if (header.opcode == wire::Opcode::kRdmaWrite) {
    // The length an Immediate Data message right after it reports (OnImmediate); no branch.
    const std::uint64_t total = write_bytes_ + length;
    last_write_length_ = static_cast<std::uint32_t>(total);
    write_bytes_ = header.last ? 0 : total;
    return Frame::kDone;
  }
  if (header.opcode == wire::Opcode::kReadResponse) {
    OutboundRead& read = c_.reads_out_.front();
    read.received += length;
    if (!header.last) return Frame::kDone;
    const std::uint64_t id = read.work.id;
    const auto total = static_cast<std::uint32_t>(read.received);
    c_.reads_out_.Pop();
    c_.events_->OnWorkDone(id, WorkStatus::kSuccess, total);
    c_.Reported();
    if (ended()) return Frame::kEnded;
    c_.tx_.Pump();  // a fenced Work or a Read held at the ORD may go now
    return ended() ? Frame::kEnded : Frame::kDone;
  }
  Message& m = message_;
  m.received += length;
  if (!header.last) return Frame::kDone;
  RecvInfo info;
  info.length = static_cast<std::uint32_t>(m.received);
  info.solicited = header.opcode == wire::Opcode::kSendSolicited ||
                   header.opcode == wire::Opcode::kSendSolicitedInvalidate;
  info.invalidated = header.opcode == wire::Opcode::kSendInvalidate ||
                     header.opcode == wire::Opcode::kSendSolicitedInvalidate;
  info.invalidate_key = info.invalidated ? header.stag : 0;
  m.active = false;
  ++expected_msn_;
  c_.events_->OnRecvDone(m.msn, WorkStatus::kSuccess, info);
  c_.Reported();
  return ended() ? Frame::kEnded : Frame::kDone;
}

RxStream::Frame RxStream::BeginSend(const wire::FpduHeader& header, std::uint32_t length, Placement& out) {
  if (header.queue != wire::kQueueSend) return Fail(wire::term::kInvalidQueue);
  Message& m = message_;
  if (!m.active) {
    if (header.msn != expected_msn_ || header.message_offset != 0) {
      SOFTDAT_LOG(kInfo, "tcp %s: Send MSN %u offset %u, expected MSN %u offset 0", c_.Describe().data(), header.msn,
                  header.message_offset, expected_msn_);
      return Fail(header.msn != expected_msn_ ? wire::term::kMsnRange : wire::term::kBadMessageOffset);
    }
    RecvTarget target;
    if (const Frame frame = AcquireFor(header, target); frame != Frame::kDone) return frame;
    m = Message{};
    m.active = true;
    m.msn = header.msn;
    m.target = target;
  } else if (header.msn != m.msn || header.message_offset != m.received) {
    SOFTDAT_LOG(kInfo, "tcp %s: Send MSN %u offset %u, expected MSN %u offset %llu", c_.Describe().data(), header.msn,
                header.message_offset, m.msn, static_cast<unsigned long long>(m.received));
    return Fail(header.msn != m.msn ? wire::term::kMsnRange : wire::term::kBadMessageOffset);
  }
  if (m.received + length > m.target.capacity) {
    SOFTDAT_LOG(kInfo, "tcp %s: Send MSN %u is longer than its receive buffer (%llu bytes)", c_.Describe().data(),
                m.msn, static_cast<unsigned long long>(m.target.capacity));
    m.active = false;
    RecvInfo info;
    info.length = static_cast<std::uint32_t>(m.received);
    c_.events_->OnRecvDone(m.msn, WorkStatus::kLocalLength, info);
    c_.Reported();
    return Fail(wire::term::kMessageTooLong);
  }
  out.segments = m.target.segments;
  out.segment = &m.segment;
  out.segment_offset = &m.segment_offset;
  return Frame::kDone;
}

RxStream::Frame RxStream::AcquireFor(const wire::FpduHeader& header, RecvTarget& target) {
  c_.Reported();  // a buffer taken may cross a watermark, whose event the delivery posts
  switch (c_.events_->AcquireRecv(header.msn, target)) {
    case RecvAcquire::kTaken:
      break;
    case RecvAcquire::kNotReady:
      Hold();
      return Frame::kHeld;
    case RecvAcquire::kRefused:
      SOFTDAT_LOG(kInfo, "tcp %s: message MSN %u may not take a receive buffer", c_.Describe().data(), header.msn);
      return Fail(wire::term::kMsnRange);
  }
  if (rnr_armed_) {
    rnr_armed_ = false;
    rnr_timer_.cancel();
  }
  return Frame::kDone;
}

// No receive buffer for the message starting now: the stream stops reading this connection (the
// bytes wait in the socket, back-pressure on this connection only) until a buffer is posted, or
// the RNR timeout breaks it. The socket is still watched for the peer's end meanwhile.
void RxStream::Hold() {
  Enter(RxEvent::kNoBuffer);
  c_.SetWatch(PollSet::Watch::kEnd);
  StartRnrTimer();
}

void RxStream::StartRnrTimer() {
  if (rnr_armed_) return;
  if (peer_closed()) return ArmRnrTimer(hold_until_);
  if (c_.options_.rnr_timeout_ms == 0) return;
  ArmRnrTimer(std::chrono::steady_clock::now() + std::chrono::milliseconds(c_.options_.rnr_timeout_ms));
}

void RxStream::HoldAfterPeerClosed() {
  if (peer_closed()) return;
  hold_until_ = std::chrono::steady_clock::now() + kCloseLinger;
  SOFTDAT_LOG(kInfo, "tcp %s: the peer closed its side while Send MSN %u waits for a receive buffer; the waiting "
              "messages get %lld ms to find buffers", c_.Describe().data(), expected_msn_,
              static_cast<long long>(kCloseLinger.count()));
  // An RNR timeout that ends sooner stands; otherwise the linger bounds the wait.
  if (!rnr_armed_ || rnr_timer_.expiry() > hold_until_) ArmRnrTimer(hold_until_);
}

void RxStream::ArmRnrTimer(std::chrono::steady_clock::time_point until) {
  rnr_armed_ = true;
  const std::uint32_t generation = ++rnr_generation_;
  rnr_timer_.expires_at(until);
  rnr_timer_.async_wait([self = c_.shared_from_this(), generation](const boost::system::error_code& error) {
    Connection::IoLock lock(*self);
    RxStream& rx = self->rx_;
    if (error || self->detached() || generation != rx.rnr_generation_ || !rx.rnr_armed_) return;
    rx.rnr_armed_ = false;
    if (!rx.held() || self->setup() == SetupState::kEnded) return;
    if (rx.peer_closed()) {
      // No Terminate: the peer closed its side and waits only for ours (which the end sends).
      SOFTDAT_LOG(kInfo, "tcp %s: no receive buffer for Send MSN %u within %lld ms of the peer's close; the "
                  "waiting messages are discarded", self->Describe().data(), rx.expected_msn_,
                  static_cast<long long>(kCloseLinger.count()));
      self->End(ConnectionEnd::kBroken);
      return;
    }
    SOFTDAT_LOG(kInfo, "tcp %s: no receive buffer for Send MSN %u within the RNR timeout of %u ms",
                self->Describe().data(), rx.expected_msn_, self->options_.rnr_timeout_ms);
    (void)rx.Fail(wire::term::kNoBuffer);
  });
}

RxStream::Frame RxStream::Fail(wire::TerminateCode code) {
  c_.Terminate(code);
  c_.End(ConnectionEnd::kBroken);
  return Frame::kEnded;
}

RxStream::Frame RxStream::RefuseRemote(RemoteCheck check, const char* what) {
  const wire::TerminateCode code = RemoteTerminate(check);
  SOFTDAT_LOG(kInfo, "tcp %s: the peer's %s was refused: %s", c_.Describe().data(), what,
              wire::DescribeTerminate(code));
  return Fail(code);
}

RxStream::Frame RxStream::BeginWrite(const wire::FpduHeader& header, std::uint32_t length, Placement& out) {
  if (length == 0) return Frame::kDone;  // a zero-length Write (ready-to-receive) touches nothing
  const RemoteResolution target =
      c_.events_->ResolveRemote(header.stag, header.tagged_offset, length, RemoteAccess::kWrite);
  if (target.check != RemoteCheck::kOk) return RefuseRemote(target.check, "RDMA Write");
  out.contiguous = target.address;
  return Frame::kDone;
}

RxStream::Frame RxStream::OnReadRequest(const wire::FpduHeader& header, const std::uint8_t* body) {
  if (header.queue != wire::kQueueReadRequest || header.msn != expected_read_msn_ || header.message_offset != 0) {
    SOFTDAT_LOG(kInfo, "tcp %s: Read Request on queue %u MSN %u offset %u, expected queue 1 MSN %u",
                c_.Describe().data(), header.queue, header.msn, header.message_offset, expected_read_msn_);
    return Fail(header.queue != wire::kQueueReadRequest ? wire::term::kInvalidQueue
              : header.msn != expected_read_msn_     ? wire::term::kMsnRange
                                                     : wire::term::kBadMessageOffset);
  }
  if (c_.reads_in_.full()) {
    SOFTDAT_LOG(kInfo, "tcp %s: the peer has more than %zu RDMA Reads outstanding (our IRD)", c_.Describe().data(),
                c_.reads_in_.capacity());
    return Fail(wire::term::kStreamCatastrophic);
  }
  wire::ReadRequestBody request;
  wire::DecodeReadRequest(body, request);
  const std::uint8_t* source = nullptr;
  if (request.size != 0) {
    const RemoteResolution resolved =
        c_.events_->ResolveRemote(request.source_stag, request.source_offset, request.size, RemoteAccess::kRead);
    if (resolved.check != RemoteCheck::kOk) return RefuseRemote(resolved.check, "RDMA Read");
    source = resolved.address;
  }
  c_.reads_in_.back_slot() = InboundRead{source, request.size, request.sink_stag, request.sink_offset, false, {}};
  c_.reads_in_.Push();
  ++expected_read_msn_;
  c_.tx_.Pump();
  return ended() ? Frame::kEnded : Frame::kDone;
}

RxStream::Frame RxStream::BeginReadResponse(const wire::FpduHeader& header, std::uint32_t length, Placement& out) {
  if (c_.reads_out_.empty()) {
    SOFTDAT_LOG(kInfo, "tcp %s: Read Response with no RDMA Read outstanding", c_.Describe().data());
    return Fail(wire::term::kDdpTaggedInvalidStag);
  }
  OutboundRead& read = c_.reads_out_.front();
  const bool matches = header.stag == read.sink_stag && header.tagged_offset == read.received;
  if (!matches || read.received + length > read.work.length ||
      (header.last && read.received + length != read.work.length)) {
    SOFTDAT_LOG(kInfo, "tcp %s: Read Response (STag %#x offset %llu, %u bytes) does not match the Read outstanding",
                c_.Describe().data(), header.stag, static_cast<unsigned long long>(header.tagged_offset), length);
    const std::uint64_t id = read.work.id;
    c_.reads_out_.Pop();
    c_.events_->OnWorkDone(id, WorkStatus::kBadResponse, 0);
    c_.Reported();
    return Fail(matches ? wire::term::kDdpTaggedBounds : wire::term::kDdpTaggedInvalidStag);
  }
  out.segments = read.work.local;
  out.segment = &read.segment;
  out.segment_offset = &read.segment_offset;
  return Frame::kDone;
}

RxStream::Frame RxStream::OnTerminate(const std::uint8_t* payload, std::uint32_t length) {
  wire::TerminateCode code;
  if (length >= 4) code = wire::DecodeTerminateControl(payload);
  SOFTDAT_LOG(kWarn, "tcp %s: the peer terminated the connection: %s (layer %u, type %u, code %#x)",
              c_.Describe().data(), wire::DescribeTerminate(code), static_cast<unsigned>(code.layer), code.etype,
              code.code);
  if (!c_.reads_out_.empty() && code.layer == wire::TermLayer::kRdmap && code.etype == 1) {
    // Our oldest Read (or atomic) was refused by the peer's memory checks.
    const std::uint64_t id = c_.reads_out_.front().work.id;
    c_.reads_out_.Pop();
    c_.events_->OnWorkDone(id, WorkStatus::kRemoteAccess, 0);
    c_.Reported();
  }
  c_.End(ConnectionEnd::kBroken);
  return Frame::kEnded;
}

void RxStream::OnPeerClosed() {
  switch (c_.setup()) {
    case SetupState::kAwaitReply:
      SOFTDAT_LOG(kInfo, "tcp %s: the peer closed the connection before its MPA Reply", c_.Describe().data());
      c_.End(ConnectionEnd::kNonPeerRejected);
      return;
    case SetupState::kAwaitRtr:
      c_.End(ConnectionEnd::kAcceptFailed);
      return;
    default:
      break;
  }
  if (start_ != end_ || message_.active || state_ == RxState::kDirectPayload || state_ == RxState::kDirectTrailer) {
    SOFTDAT_LOG(kInfo, "tcp %s: the peer closed the connection in the middle of a message", c_.Describe().data());
    c_.End(ConnectionEnd::kBroken);
    return;
  }
  c_.End(ConnectionEnd::kDisconnected);
}

}  // namespace softdat::transport::tcp
