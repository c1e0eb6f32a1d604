// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Reception: reads the socket into a staging buffer and checks each FPDU's header (framing,
// version, queue, MSN, message offset, STag and bounds) before anything of it is placed. A large
// FPDU (more than 8 KiB still to come) has its payload read from the socket straight into its
// destination (no staging copy) when it may be: always without CRC; with CRC only where nobody
// looks before the completion (a receive buffer, our Read's sink), checksumming the bytes as
// they land, so a bad CRC fails the message before it completes. An RDMA Write with CRC is
// placed from the staging buffer once whole and checked: its target may be watched. A Send goes into the receive
// buffer core hands out when its first FPDU arrives (the SRQ decision lives in srq/), an RDMA
// Write or Read Response where the STag says, a Read Request into the response queue. A Send
// with no buffer to take holds the stream (TCP back-pressure on this connection only) until
// RecvBuffersAvailable, or until the RNR timeout breaks the connection.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/crc32c.h"
#include "transport/tcp/poll_set.h"
#include "transport/tcp/tcp_connection.h"

namespace softdat::transport::tcp {
namespace {

// The largest FPDU: ULPDU_Length, a full ULPDU, pad and CRC. A receive block holds at least one.
constexpr std::size_t kMaxFrame = wire::kLengthFieldSize + wire::kMaxUlpduLength + 3 + wire::kCrcSize;
static_assert(Connection::kRxBlock >= kMaxFrame + 4096);
// Bytes one handler reads before it lets other connections run.
constexpr std::size_t kReadBudget = 1u << 20;
// An FPDU with at least this much payload makes the stream "large": reads into the receive block
// are then short (kFollowingRead), so that the next payload mostly lands in place. And an FPDU is
// placed directly when at least this much of it has not arrived yet.
constexpr std::uint32_t kLargePayload = 16 * 1024;
constexpr std::size_t kDirectMissing = 8 * 1024;
// What a large stream reads past a payload placed in place: the next header and the head of its
// payload (copied from the receive block; the rest lands in place).
constexpr std::size_t kFollowingRead = 8 * 1024;
// FPDUs this small are CRC-checked whole before placement, even where they could be checked
// while placed (see ProcessFrame).
constexpr std::size_t kCheckWholeAtMost = 4096;

std::uint32_t GetCrc(const std::uint8_t* at) {
  return std::uint32_t{at[0]} | std::uint32_t{at[1]} << 8 | std::uint32_t{at[2]} << 16 | std::uint32_t{at[3]} << 24;
}

// Copies `length` bytes into `segments` starting at the cursor, advancing it; with a `crc`
// state, checksums them as they are copied.
void Scatter(std::span<const Segment> segments, std::uint32_t& segment, std::uint32_t& offset,
             const std::uint8_t* from, std::size_t length, std::uint32_t* crc = nullptr) {
  while (length > 0 && segment < segments.size()) {
    const Segment& s = segments[segment];
    const std::size_t n = std::min<std::size_t>(length, s.length - offset);
    if (from != nullptr) {  // null: the bytes were read into place already
      std::uint8_t* to = reinterpret_cast<std::uint8_t*>(s.address) + offset;
      if (crc != nullptr) {
        *crc = Crc32cCopy(*crc, to, from, n);
      } else {
        std::memcpy(to, from, n);
      }
      from += n;
    }
    length -= n;
    offset += static_cast<std::uint32_t>(n);
    if (offset == s.length) {
      ++segment;
      offset = 0;
    }
  }
}

// RDMA Writes, Read Responses and Sends; not a Read Request, a Terminate or the RFC 7306 messages
// (their headers say everything; they carry no payload to place).
bool CarriesPayload(wire::Opcode opcode) {
  return opcode != wire::Opcode::kReadRequest && opcode < wire::Opcode::kTerminate;
}

void Place(const std::span<const Segment> segments, std::uint8_t*& contiguous, std::uint32_t* segment,
           std::uint32_t* segment_offset, const std::uint8_t* from, std::size_t length,
           std::uint32_t* crc = nullptr) {
  if (length == 0) return;
  if (contiguous != nullptr) {
    if (from != nullptr) {
      if (crc != nullptr) {
        *crc = Crc32cCopy(*crc, contiguous, from, length);
      } else {
        std::memcpy(contiguous, from, length);
      }
    }
    contiguous += length;
    return;
  }
  Scatter(segments, *segment, *segment_offset, from, length, crc);
}

// Whether an FPDU of this opcode lands in memory only this side sees before its completion (a
// receive buffer, the sink of our own Read): then it may be checked while it is copied there.
// An RDMA Write lands where the consumer may be watching: checked before anything is placed.
bool PlacedPrivately(wire::Opcode opcode) {
  switch (opcode) {
    case wire::Opcode::kSend:
    case wire::Opcode::kSendInvalidate:
    case wire::Opcode::kSendSolicited:
    case wire::Opcode::kSendSolicitedInvalidate:
    case wire::Opcode::kReadResponse:
      return true;
    default:
      return false;
  }
}

wire::TerminateCode RemoteTerminate(RemoteCheck check) {
  switch (check) {
    case RemoteCheck::kBounds: return wire::term::kBaseBounds;
    case RemoteCheck::kAccessRights: return wire::term::kAccessRights;
    case RemoteCheck::kNotAssociated: return wire::term::kStagNotAssociated;
    default: return wire::term::kInvalidStag;
  }
}

}  // namespace

void Connection::ArmRead() {
  if (phase_ == Phase::kEnded) return;
  if (polled_) {
    // Level-triggered: the PollSet reports the socket whenever it has bytes; only a connection
    // that stopped reading (a message held for a buffer) has to ask again.
    if (!reading_) {
      reading_ = true;
      options_.poll_set->SetReading(socket_.native_handle(), poll_token_, true);
    }
    return;
  }
  if (read_waiting_) return;
  read_waiting_ = true;
  socket_.async_wait(asio::socket_base::wait_read, [self = shared_from_this()](const boost::system::error_code& error) {
    IoLock lock(*self);
    if (self->detached_) return;
    self->read_waiting_ = false;
    if (error || self->phase_ == Phase::kEnded || self->rx_held_) return;
    self->ReadLoop();
  });
}


void Connection::ReadLoop() {
  ReadAvailable();
  if (rx_ == nullptr) return;
  if (rx_start_ == rx_end_) {
    ReleaseRx();  // nothing left half-received: an idle connection holds no block
  } else if (rx_held_) {
    ShrinkRx();
  }
}

void Connection::ReleaseRx() {
  if (rx_ == nullptr) return;
  (rx_small_ ? options_.buffers->rx_held : options_.buffers->rx).Release(rx_);
  rx_ = nullptr;
  rx_small_ = false;
  rx_start_ = rx_end_ = 0;
}

// A message waiting for an SRQ buffer keeps the bytes read after it; a small remainder moves to
// a small block, so that thousands of connections waiting on one SRQ do not each pin 128 KiB.
void Connection::ShrinkRx() {
  const std::size_t left = rx_end_ - rx_start_;
  if (rx_small_ || left > ConnectionBuffers::kHeldBlock) return;
  std::uint8_t* small = options_.buffers->rx_held.Acquire();
  if (small == nullptr) return;  // keep the large one
  std::memcpy(small, rx_ + rx_start_, left);
  options_.buffers->rx.Release(rx_);
  rx_ = small;
  rx_small_ = true;
  rx_start_ = 0;
  rx_end_ = left;
}

bool Connection::HoldRxBlock() {
  if (rx_ != nullptr && !rx_small_) return true;
  std::uint8_t* block = options_.buffers->rx.Acquire();
  if (block == nullptr) return false;
  const std::size_t left = rx_end_ - rx_start_;
  if (rx_ != nullptr) {
    std::memcpy(block, rx_ + rx_start_, left);
    options_.buffers->rx_held.Release(rx_);
  }
  rx_ = block;
  rx_small_ = false;
  rx_start_ = 0;
  rx_end_ = left;
  return true;
}

void Connection::ReadAvailable() {
  // What Post wrote from the consumer's thread completes before anything read now: the peer's
  // answer to a Send must never be reported ahead of the Send (an RNIC completes it first, and
  // consumers sharing one EVD for both, like dapltest, rely on that order).
  CompleteWritten();
  std::size_t budget = kReadBudget;
  bool drained = false;  // the last recv came back short: the socket had no more
  while (phase_ != Phase::kEnded) {
    while (true) {
      const Frame frame = phase_ == Phase::kAwaitReply ? ReadMpaReply() : ProcessFrame();
      if (frame == Frame::kDone) continue;
      if (frame != Frame::kNeedMore) return;  // held for a buffer, or ended
      break;
    }
    if (phase_ == Phase::kEnded) return;
    if (drained) {
      // A short read emptied the socket: asking again would only return EAGAIN (one syscall per
      // message the profile counted). The level-triggered PollSet reports it when more arrives.
      ArmRead();
      return;
    }
    if (budget == 0) {
      ArmRead();  // the socket is still readable: the reactor brings us back after the others
      return;
    }
    if (direct_.active && !direct_.payload_done) {
      const std::uint32_t before = direct_.placed;
      if (!ReadDirect()) return;
      budget -= std::min<std::size_t>(budget, direct_.placed - before);
      continue;
    }
    if (!HoldRxBlock()) {
      SOFTDAT_LOG(kError, "tcp %s: no memory for a receive block of %zu bytes; breaking the connection", Describe().data(),
                  kRxBlock);
      End(ConnectionEnd::kBroken);
      return;
    }
    if (rx_start_ == rx_end_) {
      rx_start_ = rx_end_ = 0;
    } else if (kRxBlock - rx_end_ < kMaxFrame) {
      // What is left is less than one FPDU (whole ones were consumed): move it to the front.
      std::memmove(rx_, rx_ + rx_start_, rx_end_ - rx_start_);
      rx_end_ -= rx_start_;
      rx_start_ = 0;
    }
    const std::size_t want = large_stream_ ? std::min(kFollowingRead, kRxBlock - rx_end_) : kRxBlock - rx_end_;
    const ssize_t n = ::recv(socket_.native_handle(), rx_ + rx_end_, want, MSG_DONTWAIT);
    if (n > 0) {
      ++rx_reads_;
      writes_without_read_ = 0;  // what we send next may be an answer: no coalescing
      rx_end_ += static_cast<std::size_t>(n);
      budget -= std::min<std::size_t>(budget, static_cast<std::size_t>(n));
      drained = static_cast<std::size_t>(n) < want;
      continue;
    }
    if (!RetryRecv(n)) return;
  }
}

bool Connection::RetryRecv(ssize_t n) {
  if (n == 0) {
    OnPeerClosed();
    return false;
  }
  if (errno == EINTR) return true;
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    ArmRead();
    return false;
  }
  const int error = errno;  // before Describe, which may touch errno
  SOFTDAT_LOG(kInfo, "tcp %s: receive failed: %s", Describe().data(), std::strerror(error));
  End(ConnectionEnd::kBroken);
  return false;
}

bool Connection::ReadDirect() {
  DirectRx& d = direct_;
  const std::size_t left = d.length - d.placed;
  std::uint8_t* to = nullptr;
  std::size_t room = left;
  if (d.placement.contiguous != nullptr) {
    to = d.placement.contiguous;
  } else {
    // The current segment's free part (skipping empty segments).
    while (*d.placement.segment < d.placement.segments.size() &&
           d.placement.segments[*d.placement.segment].length == *d.placement.segment_offset) {
      ++*d.placement.segment;
      *d.placement.segment_offset = 0;
    }
    const Segment& s = d.placement.segments[*d.placement.segment];
    to = reinterpret_cast<std::uint8_t*>(s.address) + *d.placement.segment_offset;
    room = std::min<std::size_t>(left, s.length - *d.placement.segment_offset);
  }
  // The payload's last piece is read together with what follows it (the trailer, the next
  // header and a little of its payload) into the receive block: one syscall where reading them
  // apart took two or three, which on a machine with costly syscalls is more than the copy saved.
  iovec pieces[2] = {{to, room}, {nullptr, 0}};
  int count = 1;
  if (room == left && HoldRxBlock()) {
    pieces[1] = {rx_ + rx_end_, std::min<std::size_t>(kRxBlock - rx_end_, kFollowingRead)};
    count = 2;
  }
  msghdr message{};
  message.msg_iov = pieces;
  message.msg_iovlen = static_cast<std::size_t>(count);
  const ssize_t n = ::recvmsg(socket_.native_handle(), &message, MSG_DONTWAIT);
  if (n > 0) {
    ++rx_reads_;
    writes_without_read_ = 0;
    const std::size_t placed = std::min<std::size_t>(static_cast<std::size_t>(n), room);
    if (crc_) d.crc = Crc32cUpdate(d.crc, to, placed);  // still in cache
    Place(d.placement.segments, d.placement.contiguous, d.placement.segment, d.placement.segment_offset, nullptr,
          placed);
    d.placed += static_cast<std::uint32_t>(placed);
    d.payload_done = d.placed == d.length;
    rx_end_ += static_cast<std::size_t>(n) - placed;
    return true;
  }
  return RetryRecv(n);
}

Connection::Frame Connection::ProcessFrame() {
  if (direct_.active) return direct_.payload_done ? FinishDirect() : Frame::kNeedMore;
  const std::size_t available = rx_end_ - rx_start_;
  if (available < 4) return Frame::kNeedMore;
  const std::uint8_t* at = rx_ + rx_start_;
  std::size_t header_size = 0;
  if (const wire::ControlError error = wire::DecodeControl(at, header_size); error != wire::ControlError::kNone) {
    SOFTDAT_LOG(kInfo, "tcp %s: bad FPDU control byte %#x/%#x from the peer", Describe().data(), at[2], at[3]);
    return Fail(error == wire::ControlError::kDdpVersion ? wire::term::kDdpVersion : wire::term::kBadOpcode);
  }
  const std::size_t ulpdu = std::size_t{at[0]} << 8 | at[1];
  if (wire::kLengthFieldSize + ulpdu < header_size) {
    SOFTDAT_LOG(kInfo, "tcp %s: FPDU of %zu bytes is shorter than its header", Describe().data(), ulpdu);
    return Fail(wire::term::kBadFraming);
  }
  const std::size_t covered = wire::kLengthFieldSize + ulpdu + wire::PadSize(ulpdu);
  const std::size_t total = covered + wire::kCrcSize;
  if (available < total) {
    if (available >= header_size && total - available >= kDirectMissing && phase_ != Phase::kAwaitRtr &&
        Direct(static_cast<wire::Opcode>(at[3] & 0x0F))) {
      return StartDirect(at, available, header_size, total);
    }
    return Frame::kNeedMore;
  }
  // Checked whole before anything of it is used, unless it is large and placed privately: then
  // checked as it is copied (one pass over the bytes), and a mismatch fails the message before it
  // completes. A small FPDU, in cache since its recv, is checked whole with one CRC call: three
  // (header, payload, pad) were a fifth of an 8 B Send's reception.
  const bool check_while_placing =
      crc_ && covered > kCheckWholeAtMost && PlacedPrivately(static_cast<wire::Opcode>(at[3] & 0x0F));
  if (crc_ && !check_while_placing && Crc32c(at, covered) != GetCrc(at + covered)) {
    SOFTDAT_LOG(kInfo, "tcp %s: FPDU CRC mismatch", Describe().data());
    return Fail(wire::term::kCrcError);
  }
  wire::FpduHeader header;
  wire::DecodeHeader(at, header);
  const std::uint8_t* payload = at + header_size;
  const auto length = static_cast<std::uint32_t>(wire::kLengthFieldSize + ulpdu - header_size);
  if (awaiting_first_fpdu_) {
    // The initiator's first FPDU: what we hold may go now (rule 4, see tcp_connection.h).
    awaiting_first_fpdu_ = false;
    Kick();
  }

  if (phase_ == Phase::kAwaitRtr) {
    // The first FPDU after our Reply is the peer's ready-to-receive: the connection is up.
    timer_.cancel();
    Establish({});
    if (phase_ == Phase::kEnded) return Frame::kEnded;
  }

  Frame frame = Frame::kDone;
  switch (header.opcode) {
    case wire::Opcode::kReadRequest:
      frame = OnReadRequest(header, at + wire::kUntaggedHeaderSize);
      break;
    case wire::Opcode::kTerminate:
      frame = OnTerminate(payload, length);
      break;
    case wire::Opcode::kImmediate:
    case wire::Opcode::kImmediateSolicited:
      frame = OnImmediate(header, at + wire::kUntaggedHeaderSize, length);
      break;
    case wire::Opcode::kAtomicRequest:
      frame = OnAtomicRequest(header, at + wire::kUntaggedHeaderSize, length);
      break;
    case wire::Opcode::kAtomicResponse:
      frame = OnAtomicResponse(header, at + wire::kUntaggedHeaderSize, length);
      break;
    default: {
      Placement placement;
      frame = BeginPayload(header, length, placement);
      if (frame != Frame::kDone) return frame;
      if (check_while_placing) {
        std::uint32_t crc = Crc32cUpdate(kCrc32cInit, at, header_size);
        Place(placement.segments, placement.contiguous, placement.segment, placement.segment_offset, payload, length,
              &crc);
        crc = Crc32cUpdate(crc, payload + length, covered - header_size - length);
        if (Crc32cFinal(crc) != GetCrc(at + covered)) {
          SOFTDAT_LOG(kInfo, "tcp %s: FPDU CRC mismatch", Describe().data());
          return Fail(wire::term::kCrcError);
        }
      } else {
        Place(placement.segments, placement.contiguous, placement.segment, placement.segment_offset, payload, length);
      }
      large_stream_ = length >= kLargePayload && Direct(header.opcode);
      rx_start_ += total;  // consumed: the completion below may end the connection
      return FinishPayload(header, length);
    }
  }
  if (frame == Frame::kDone) rx_start_ += total;
  return frame;
}

Connection::Frame Connection::StartDirect(const std::uint8_t* at, std::size_t available, std::size_t header_size,
                                          std::size_t total) {
  wire::FpduHeader header;
  wire::DecodeHeader(at, header);
  if (awaiting_first_fpdu_) {  // its header is checked: the initiator has spoken (rule 4)
    awaiting_first_fpdu_ = false;
    Kick();
  }
  const auto length = static_cast<std::uint32_t>(wire::kLengthFieldSize + header.ulpdu_length - header_size);
  Placement placement;
  if (const Frame frame = BeginPayload(header, length, placement); frame != Frame::kDone) return frame;
  const std::size_t already = available - header_size;  // less than `length`: the rest is missing
  direct_ = DirectRx{};
  direct_.active = true;
  direct_.header = header;
  direct_.length = length;
  direct_.placed = static_cast<std::uint32_t>(already);
  direct_.trailer = total - header_size - length;
  direct_.placement = placement;
  // With CRC the header is checksummed now (its bytes go with the staging buffer) and the
  // payload as it lands; the verdict comes with the trailer, before the message completes.
  direct_.crc = crc_ ? Crc32cUpdate(kCrc32cInit, at, header_size) : 0;
  Place(direct_.placement.segments, direct_.placement.contiguous, direct_.placement.segment,
        direct_.placement.segment_offset, at + header_size, already, crc_ ? &direct_.crc : nullptr);
  large_stream_ = length >= kLargePayload;
  rx_start_ = rx_end_ = 0;
  return Frame::kNeedMore;
}

Connection::Frame Connection::FinishDirect() {
  const std::size_t available = rx_end_ - rx_start_;
  if (available < direct_.trailer) return Frame::kNeedMore;
  if (crc_) {
    // The trailer: pad, then the CRC of everything before it.
    const std::uint8_t* trailer = rx_ + rx_start_;
    const std::size_t pad = direct_.trailer - wire::kCrcSize;
    if (Crc32cFinal(Crc32cUpdate(direct_.crc, trailer, pad)) != GetCrc(trailer + pad)) {
      SOFTDAT_LOG(kWarn, "tcp %s: FPDU CRC mismatch (%u payload bytes placed, not completed); terminating",
                  Describe().data(), direct_.length);
      direct_.active = false;
      return Fail(wire::term::kCrcError);
    }
  }
  rx_start_ += direct_.trailer;
  direct_.active = false;
  return FinishPayload(direct_.header, direct_.length);
}

bool Connection::Direct(wire::Opcode opcode) const {
  // Without CRC every payload may land as it arrives. With CRC only where nobody looks before the
  // completion (a receive buffer, our Read's sink): a bad CRC then fails the message before it
  // completes. An RDMA Write lands where the consumer may be watching: checked whole first.
  return CarriesPayload(opcode) && (!crc_ || PlacedPrivately(opcode));
}

Connection::Frame Connection::BeginPayload(const wire::FpduHeader& header, std::uint32_t length, Placement& out) {
  switch (header.opcode) {
    case wire::Opcode::kRdmaWrite: return BeginWrite(header, length, out);
    case wire::Opcode::kReadResponse: return BeginReadResponse(header, length, out);
    default: return BeginSend(header, length, out);
  }
}

Connection::Frame Connection::FinishPayload(const wire::FpduHeader& header, std::uint32_t length) {
  if (header.opcode == wire::Opcode::kRdmaWrite) {
    // The length an Immediate Data message right after it reports (OnImmediate); no branch.
    const std::uint64_t total = write_bytes_ + length;
    last_write_length_ = static_cast<std::uint32_t>(total);
    write_bytes_ = header.last ? 0 : total;
    return Frame::kDone;
  }
  if (header.opcode == wire::Opcode::kReadResponse) {
    OutstandingRead& read = reads_[reads_head_];
    read.received += length;
    if (!header.last) return Frame::kDone;
    const std::uint64_t id = read.work.id;
    const auto total = static_cast<std::uint32_t>(read.received);
    PopRead();
    events_->OnWorkDone(id, WorkStatus::kSuccess, total);
    report_pending_ = true;
    if (phase_ == Phase::kEnded) return Frame::kEnded;
    PumpTx();  // a fenced Work or a Read held at the ORD may go now
    return phase_ == Phase::kEnded ? Frame::kEnded : Frame::kDone;
  }
  RxMessage& m = rx_message_;
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
  events_->OnRecvDone(m.msn, WorkStatus::kSuccess, info);
  report_pending_ = true;
  return phase_ == Phase::kEnded ? Frame::kEnded : Frame::kDone;
}

Connection::Frame Connection::BeginSend(const wire::FpduHeader& header, std::uint32_t length, Placement& out) {
  if (header.queue != wire::kQueueSend) {
    return Fail(wire::term::kInvalidQueue);
  }
  RxMessage& m = rx_message_;
  if (!m.active) {
    if (header.msn != expected_msn_ || header.message_offset != 0) {
      SOFTDAT_LOG(kInfo, "tcp %s: Send MSN %u offset %u, expected MSN %u offset 0", Describe().data(), header.msn, header.message_offset,
                  expected_msn_);
      return Fail(header.msn != expected_msn_ ? wire::term::kMsnRange : wire::term::kBadMessageOffset);
    }
    RecvTarget target;
    if (const Frame frame = AcquireFor(header, target); frame != Frame::kDone) return frame;
    m = RxMessage{};
    m.active = true;
    m.msn = header.msn;
    m.target = target;
  } else if (header.msn != m.msn || header.message_offset != m.received) {
    SOFTDAT_LOG(kInfo, "tcp %s: Send MSN %u offset %u, expected MSN %u offset %llu", Describe().data(), header.msn, header.message_offset,
                m.msn, static_cast<unsigned long long>(m.received));
    return Fail(header.msn != m.msn ? wire::term::kMsnRange : wire::term::kBadMessageOffset);
  }
  if (m.received + length > m.target.capacity) {
    SOFTDAT_LOG(kInfo, "tcp %s: Send MSN %u is longer than its receive buffer (%llu bytes)", Describe().data(), m.msn,
                static_cast<unsigned long long>(m.target.capacity));
    m.active = false;
    RecvInfo info;
    info.length = static_cast<std::uint32_t>(m.received);
    events_->OnRecvDone(m.msn, WorkStatus::kLocalLength, info);
    report_pending_ = true;
    return Fail(wire::term::kMessageTooLong);
  }
  out.segments = m.target.segments;
  out.segment = &m.segment;
  out.segment_offset = &m.segment_offset;
  return Frame::kDone;
}

Connection::Frame Connection::AcquireFor(const wire::FpduHeader& header, RecvTarget& target) {
  report_pending_ = true;  // a buffer taken may cross a watermark
  switch (events_->AcquireRecv(header.msn, target)) {
    case RecvAcquire::kTaken:
      break;
    case RecvAcquire::kNotReady:
      rx_held_ = true;
      StopReading();
      StartRnrTimer();
      return Frame::kHeld;
    case RecvAcquire::kRefused:
      SOFTDAT_LOG(kInfo, "tcp %s: message MSN %u may not take a receive buffer", Describe().data(), header.msn);
      return Fail(wire::term::kMsnRange);
  }
  if (rnr_armed_) {
    rnr_armed_ = false;
    rnr_timer_.cancel();
  }
  return Frame::kDone;
}

void Connection::StartRnrTimer() {
  if (options_.rnr_timeout_ms == 0 || rnr_armed_) return;
  rnr_armed_ = true;
  const std::uint32_t generation = ++rnr_generation_;
  rnr_timer_.expires_after(std::chrono::milliseconds(options_.rnr_timeout_ms));
  rnr_timer_.async_wait([self = shared_from_this(), generation](const boost::system::error_code& error) {
    IoLock lock(*self);
    if (error || self->detached_ || generation != self->rnr_generation_ || !self->rnr_armed_) return;
    self->rnr_armed_ = false;
    if (!self->rx_held_ || self->phase_ == Phase::kEnded) return;
    SOFTDAT_LOG(kInfo, "tcp %s: no receive buffer for Send MSN %u within the RNR timeout of %u ms", self->Describe().data(),
                self->expected_msn_, self->options_.rnr_timeout_ms);
    (void)self->Fail(wire::term::kNoBuffer);
  });
}

Connection::Frame Connection::Fail(wire::TerminateCode code) {
  Terminate(code);
  End(ConnectionEnd::kBroken);
  return Frame::kEnded;
}

void Connection::PopRead() {
  reads_head_ = (reads_head_ + 1) % reads_.size();
  --reads_count_;
}

Connection::Frame Connection::RefuseRemote(RemoteCheck check, const char* what) {
  const wire::TerminateCode code = RemoteTerminate(check);
  SOFTDAT_LOG(kInfo, "tcp %s: the peer's %s was refused: %s", Describe().data(), what, wire::DescribeTerminate(code));
  return Fail(code);
}

Connection::Frame Connection::BeginWrite(const wire::FpduHeader& header, std::uint32_t length, Placement& out) {
  if (length == 0) return Frame::kDone;  // a zero-length Write (ready-to-receive) touches nothing
  const RemoteResolution target = events_->ResolveRemote(header.stag, header.tagged_offset, length, RemoteAccess::kWrite);
  if (target.check != RemoteCheck::kOk) return RefuseRemote(target.check, "RDMA Write");
  out.contiguous = target.address;
  return Frame::kDone;
}

Connection::Frame Connection::OnReadRequest(const wire::FpduHeader& header, const std::uint8_t* body) {
  if (header.queue != wire::kQueueReadRequest || header.msn != expected_read_msn_ || header.message_offset != 0) {
    SOFTDAT_LOG(kInfo, "tcp %s: Read Request on queue %u MSN %u offset %u, expected queue 1 MSN %u", Describe().data(), header.queue,
                header.msn, header.message_offset, expected_read_msn_);
    return Fail(header.queue != wire::kQueueReadRequest ? wire::term::kInvalidQueue
              : header.msn != expected_read_msn_     ? wire::term::kMsnRange
                                                     : wire::term::kBadMessageOffset);
  }
  if (responses_count_ == responses_.size()) {
    SOFTDAT_LOG(kInfo, "tcp %s: the peer has more than %zu RDMA Reads outstanding (our IRD)", Describe().data(), responses_.size());
    return Fail(wire::term::kStreamCatastrophic);
  }
  wire::ReadRequestBody request;
  wire::DecodeReadRequest(body, request);
  const std::uint8_t* source = nullptr;
  if (request.size != 0) {
    const RemoteResolution resolved =
        events_->ResolveRemote(request.source_stag, request.source_offset, request.size, RemoteAccess::kRead);
    if (resolved.check != RemoteCheck::kOk) return RefuseRemote(resolved.check, "RDMA Read");
    source = resolved.address;
  }
  ReadResponse& response = responses_[(responses_head_ + responses_count_) % responses_.size()];
  response = ReadResponse{source, request.size, request.sink_stag, request.sink_offset, false, {}};
  ++responses_count_;
  ++expected_read_msn_;
  PumpTx();
  return phase_ == Phase::kEnded ? Frame::kEnded : Frame::kDone;
}

Connection::Frame Connection::BeginReadResponse(const wire::FpduHeader& header, std::uint32_t length,
                                                Placement& out) {
  if (reads_count_ == 0) {
    SOFTDAT_LOG(kInfo, "tcp %s: Read Response with no RDMA Read outstanding", Describe().data());
    return Fail(wire::term::kDdpTaggedInvalidStag);
  }
  OutstandingRead& read = reads_[reads_head_];
  const bool matches = header.stag == read.sink_stag && header.tagged_offset == read.received;
  if (!matches || read.received + length > read.work.length ||
      (header.last && read.received + length != read.work.length)) {
    SOFTDAT_LOG(kInfo, "tcp %s: Read Response (STag %#x offset %llu, %u bytes) does not match the Read outstanding", Describe().data(),
                header.stag, static_cast<unsigned long long>(header.tagged_offset), length);
    const std::uint64_t id = read.work.id;
    PopRead();
    events_->OnWorkDone(id, WorkStatus::kBadResponse, 0);
    report_pending_ = true;
    return Fail(matches ? wire::term::kDdpTaggedBounds : wire::term::kDdpTaggedInvalidStag);
  }
  out.segments = read.work.local;
  out.segment = &read.segment;
  out.segment_offset = &read.segment_offset;
  return Frame::kDone;
}

Connection::Frame Connection::OnTerminate(const std::uint8_t* payload, std::uint32_t length) {
  wire::TerminateCode code;
  if (length >= 4) code = wire::DecodeTerminateControl(payload);
  SOFTDAT_LOG(kWarn, "tcp %s: the peer terminated the connection: %s (layer %u, type %u, code %#x)", Describe().data(),
              wire::DescribeTerminate(code), static_cast<unsigned>(code.layer), code.etype, code.code);
  if (reads_count_ > 0 && code.layer == wire::TermLayer::kRdmap && code.etype == 1) {
    // Our oldest Read was refused by the peer's memory checks.
    const std::uint64_t id = reads_[reads_head_].work.id;
    PopRead();
    events_->OnWorkDone(id, WorkStatus::kRemoteAccess, 0);
    report_pending_ = true;
  }
  End(ConnectionEnd::kBroken);
  return Frame::kEnded;
}

void Connection::OnPeerClosed() {
  switch (phase_) {
    case Phase::kAwaitReply:
      SOFTDAT_LOG(kInfo, "tcp %s: the peer closed the connection before its MPA Reply", Describe().data());
      End(ConnectionEnd::kNonPeerRejected);
      return;
    case Phase::kAwaitRtr:
      End(ConnectionEnd::kAcceptFailed);
      return;
    default:
      break;
  }
  if (rx_start_ != rx_end_ || rx_message_.active || direct_.active) {
    SOFTDAT_LOG(kInfo, "tcp %s: the peer closed the connection in the middle of a message", Describe().data());
    End(ConnectionEnd::kBroken);
    return;
  }
  End(ConnectionEnd::kDisconnected);
}

}  // namespace softdat::transport::tcp
