// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// RxStream, reading: the receive block, recv, FPDU framing and its CRC, and direct placement of
// large payloads (the placement decisions are in rx_stream_place.cc).
#include "transport/tcp/rx_stream.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/crc32c.h"

namespace softdat::transport::tcp {
namespace {

// The largest FPDU: ULPDU_Length, a full ULPDU, pad and CRC. A receive block holds at least one.
constexpr std::size_t kMaxFrame = wire::kLengthFieldSize + wire::kMaxUlpduLength + 3 + wire::kCrcSize;
static_assert(RxStream::kBlockSize >= kMaxFrame + 4096);
// Bytes one turn reads before it lets other connections run.
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

// Copies `length` bytes into `segments` starting at the cursor, advancing it; with a `crc`
// state, checksums them as they are copied. A null `from`: the bytes were read into place.
void Scatter(std::span<const Segment> segments, std::uint32_t& segment, std::uint32_t& offset,
             const std::uint8_t* from, std::size_t length, std::uint32_t* crc = nullptr) {
  while (length > 0 && segment < segments.size()) {
    const Segment& s = segments[segment];
    const std::size_t n = std::min<std::size_t>(length, s.length - offset);
    if (from != nullptr) {
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

}  // namespace

template <class PlacementT>
static void Place(const PlacementT& p, std::uint8_t*& contiguous, const std::uint8_t* from, std::size_t length,
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
  Scatter(p.segments, *p.segment, *p.segment_offset, from, length, crc);
}

RxStream::RxStream(Connection& connection) : c_(connection), rnr_timer_(connection.io_) {}

RxStream::~RxStream() { ReleaseBlock(); }

void RxStream::Enter(RxEvent event) {
  const std::optional<RxState> next = Next(state_, event);
  assert(next.has_value() && "RxStream: a transition its state does not allow");
  if (next) state_ = *next;
}

bool RxStream::ended() const { return c_.setup() == SetupState::kEnded; }

void RxStream::Read() {
  ReadAvailable();
  if (block_ == nullptr) return;
  if (start_ == end_) {
    ReleaseBlock();  // nothing left half-received: an idle connection holds no block
  } else if (held()) {
    Shrink();
  }
}

void RxStream::ResumeIfPosted() {
  if (!buffers_posted_.exchange(false, std::memory_order_acq_rel) || !held()) return;
  Enter(RxEvent::kBufferPosted);
  Read();
}

void RxStream::End() {
  if (state_ != RxState::kEnded) Enter(RxEvent::kEnd);
  rnr_armed_ = false;
  rnr_timer_.cancel();
}

void RxStream::ReleaseBlock() {
  if (block_ == nullptr) return;
  (block_small_ ? c_.options_.buffers->rx_held : c_.options_.buffers->rx).Release(block_);
  block_ = nullptr;
  block_small_ = false;
  start_ = end_ = 0;
}

// A message waiting for an SRQ buffer keeps the bytes read after it; a small remainder moves to
// a small block, so that thousands of connections waiting on one SRQ do not each pin 128 KiB.
void RxStream::Shrink() {
  const std::size_t left = end_ - start_;
  if (block_small_ || left > ConnectionBuffers::kHeldBlock) return;
  std::uint8_t* small = c_.options_.buffers->rx_held.Acquire();
  if (small == nullptr) return;  // keep the large one
  std::memcpy(small, block_ + start_, left);
  c_.options_.buffers->rx.Release(block_);
  block_ = small;
  block_small_ = true;
  start_ = 0;
  end_ = left;
}

bool RxStream::HoldBlock() {
  if (block_ != nullptr && !block_small_) return true;
  std::uint8_t* block = c_.options_.buffers->rx.Acquire();
  if (block == nullptr) return false;
  const std::size_t left = end_ - start_;
  if (block_ != nullptr) {
    std::memcpy(block, block_ + start_, left);
    c_.options_.buffers->rx_held.Release(block_);
  }
  block_ = block;
  block_small_ = false;
  start_ = 0;
  end_ = left;
  return true;
}

void RxStream::ArmRead() {
  if (ended()) return;
  if (c_.poll_.registered) {
    // Level-triggered: the PollSet reports the socket whenever it has bytes; only a stream that
    // stopped reading (held for a buffer) has to ask again.
    c_.SetWatch(PollSet::Watch::kData);
    return;
  }
  if (read_waiting_) return;
  read_waiting_ = true;
  c_.socket_.async_wait(asio::socket_base::wait_read, [self = c_.shared_from_this()](const boost::system::error_code& error) {
    Connection::IoLock lock(*self);
    if (self->detached()) return;
    self->rx_.read_waiting_ = false;
    if (error || self->setup() == SetupState::kEnded || self->rx_.held()) return;
    self->rx_.Read();
  });
}

void RxStream::ReadAvailable() {
  // What Post wrote from the consumer's thread completes before anything read now: the peer's
  // answer to a Send must never be reported ahead of the Send (an RNIC completes it first, and
  // consumers sharing one EVD for both, like dapltest, rely on that order).
  c_.tx_.CompleteWritten();
  std::size_t budget = kReadBudget;
  bool drained = false;  // the last recv came back short: the socket had no more
  while (!ended()) {
    while (true) {
      if (c_.setup() == SetupState::kAwaitReply) {
        if (!c_.ReadMpaReply()) break;  // needs more
        if (ended()) return;
        continue;
      }
      const Frame frame = ProcessFrame();
      if (frame == Frame::kDone) continue;
      if (frame != Frame::kNeedMore) return;  // held for a buffer, or ended
      break;
    }
    if (ended()) return;
    if (drained) {
      // A short read emptied the socket: asking again would only return EAGAIN (one syscall per
      // message the profile counted). The level-triggered PollSet reports it when more arrives.
      ArmRead();
      return;
    }
    if (budget == 0) {
      ArmRead();  // the socket is still readable: the poller brings us back after the others
      return;
    }
    if (state_ == RxState::kDirectPayload) {
      const std::uint32_t before = direct_.placed;
      if (!ReadDirect()) return;
      budget -= std::min<std::size_t>(budget, direct_.placed - before);
      continue;
    }
    if (!HoldBlock()) {
      SOFTDAT_LOG(kError, "tcp %s: no memory for a receive block of %zu bytes; breaking the connection",
                  c_.Describe().data(), kBlockSize);
      c_.End(ConnectionEnd::kBroken);
      return;
    }
    if (start_ == end_) {
      start_ = end_ = 0;
    } else if (kBlockSize - end_ < kMaxFrame) {
      // What is left is less than one FPDU (whole ones were consumed): move it to the front.
      std::memmove(block_, block_ + start_, end_ - start_);
      end_ -= start_;
      start_ = 0;
    }
    const std::size_t want = large_stream_ ? std::min(kFollowingRead, kBlockSize - end_) : kBlockSize - end_;
    const ssize_t n = ::recv(c_.fd(), block_ + end_, want, MSG_DONTWAIT);
    if (n > 0) {
      ++reads_;
      c_.tx_.NoteRead();  // what we send next may be an answer: no coalescing
      end_ += static_cast<std::size_t>(n);
      budget -= std::min<std::size_t>(budget, static_cast<std::size_t>(n));
      drained = static_cast<std::size_t>(n) < want;
      continue;
    }
    if (!RetryRecv(n)) return;
  }
}

bool RxStream::RetryRecv(ssize_t n) {
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
  SOFTDAT_LOG(kInfo, "tcp %s: receive failed: %s", c_.Describe().data(), std::strerror(error));
  c_.End(ConnectionEnd::kBroken);
  return false;
}

bool RxStream::ReadDirect() {
  Direct& d = direct_;
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
  if (room == left && HoldBlock()) {
    pieces[1] = {block_ + end_, std::min<std::size_t>(kBlockSize - end_, kFollowingRead)};
    count = 2;
  }
  msghdr message{};
  message.msg_iov = pieces;
  message.msg_iovlen = static_cast<std::size_t>(count);
  const ssize_t n = ::recvmsg(c_.fd(), &message, MSG_DONTWAIT);
  if (n > 0) {
    ++reads_;
    c_.tx_.NoteRead();
    const std::size_t placed = std::min<std::size_t>(static_cast<std::size_t>(n), room);
    if (c_.crc_) d.crc = Crc32cUpdate(d.crc, to, placed);  // still in cache
    Place(d.placement, d.placement.contiguous, nullptr, placed);
    d.placed += static_cast<std::uint32_t>(placed);
    if (d.placed == d.length) Enter(RxEvent::kPayloadPlaced);
    end_ += static_cast<std::size_t>(n) - placed;
    return true;
  }
  return RetryRecv(n);
}

RxStream::Frame RxStream::ProcessFrame() {
  if (state_ == RxState::kDirectPayload) return Frame::kNeedMore;
  if (state_ == RxState::kDirectTrailer) return FinishDirect();
  const std::size_t available = end_ - start_;
  if (available < 4) return Frame::kNeedMore;
  const std::uint8_t* at = block_ + start_;
  std::size_t header_size = 0;
  if (const wire::ControlError error = wire::DecodeControl(at, header_size); error != wire::ControlError::kNone) {
    SOFTDAT_LOG(kInfo, "tcp %s: bad FPDU control byte %#x/%#x from the peer", c_.Describe().data(), at[2], at[3]);
    return Fail(error == wire::ControlError::kDdpVersion ? wire::term::kDdpVersion : wire::term::kBadOpcode);
  }
  const std::size_t ulpdu = std::size_t{at[0]} << 8 | at[1];
  if (wire::kLengthFieldSize + ulpdu < header_size) {
    SOFTDAT_LOG(kInfo, "tcp %s: FPDU of %zu bytes is shorter than its header", c_.Describe().data(), ulpdu);
    return Fail(wire::term::kBadFraming);
  }
  const std::size_t covered = wire::kLengthFieldSize + ulpdu + wire::PadSize(ulpdu);
  const std::size_t total = covered + wire::kCrcSize;
  if (available < total) {
    if (available >= header_size && total - available >= kDirectMissing && c_.setup() != SetupState::kAwaitRtr &&
        DirectAllowed(static_cast<wire::Opcode>(at[3] & 0x0F))) {
      return StartDirect(at, available, header_size, total);
    }
    return Frame::kNeedMore;
  }
  // Checked whole before anything of it is used, unless it is large and placed privately: then
  // checked as it is copied (one pass over the bytes), and a mismatch fails the message before it
  // completes. A small FPDU, in cache since its recv, is checked whole with one CRC call.
  const bool check_while_placing =
      c_.crc_ && covered > kCheckWholeAtMost && PlacedPrivately(static_cast<wire::Opcode>(at[3] & 0x0F));
  if (c_.crc_ && !check_while_placing && Crc32c(at, covered) != wire::LoadLe32(at + covered)) {
    SOFTDAT_LOG(kInfo, "tcp %s: FPDU CRC mismatch", c_.Describe().data());
    return Fail(wire::term::kCrcError);
  }
  wire::FpduHeader header;
  wire::DecodeHeader(at, header);
  const std::uint8_t* payload = at + header_size;
  const auto length = static_cast<std::uint32_t>(wire::kLengthFieldSize + ulpdu - header_size);
  c_.OnFirstFpdu();  // the ready-to-receive FPDU, or the initiator's first (RFC 5044 rule 4)
  if (ended()) return Frame::kEnded;

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
        Place(placement, placement.contiguous, payload, length, &crc);
        crc = Crc32cUpdate(crc, payload + length, covered - header_size - length);
        if (Crc32cFinal(crc) != wire::LoadLe32(at + covered)) {
          SOFTDAT_LOG(kInfo, "tcp %s: FPDU CRC mismatch", c_.Describe().data());
          return Fail(wire::term::kCrcError);
        }
      } else {
        Place(placement, placement.contiguous, payload, length);
      }
      large_stream_ = length >= kLargePayload && DirectAllowed(header.opcode);
      start_ += total;  // consumed: the completion below may end the connection
      return FinishPayload(header, length);
    }
  }
  if (frame == Frame::kDone) start_ += total;
  return frame;
}

RxStream::Frame RxStream::StartDirect(const std::uint8_t* at, std::size_t available, std::size_t header_size,
                                      std::size_t total) {
  wire::FpduHeader header;
  wire::DecodeHeader(at, header);
  c_.OnFirstFpdu();  // its header is checked: the initiator has spoken (rule 4)
  const auto length = static_cast<std::uint32_t>(wire::kLengthFieldSize + header.ulpdu_length - header_size);
  Placement placement;
  if (const Frame frame = BeginPayload(header, length, placement); frame != Frame::kDone) return frame;
  const std::size_t already = available - header_size;  // less than `length`: the rest is missing
  direct_ = Direct{};
  direct_.header = header;
  direct_.length = length;
  direct_.placed = static_cast<std::uint32_t>(already);
  direct_.trailer = total - header_size - length;
  direct_.placement = placement;
  // With CRC the header is checksummed now (its bytes go with the receive block) and the payload
  // as it lands; the verdict comes with the trailer, before the message completes.
  direct_.crc = c_.crc_ ? Crc32cUpdate(kCrc32cInit, at, header_size) : 0;
  Place(direct_.placement, direct_.placement.contiguous, at + header_size, already,
        c_.crc_ ? &direct_.crc : nullptr);
  large_stream_ = length >= kLargePayload;
  start_ = end_ = 0;
  Enter(RxEvent::kLargePayload);
  return Frame::kNeedMore;
}

RxStream::Frame RxStream::FinishDirect() {
  const std::size_t available = end_ - start_;
  if (available < direct_.trailer) return Frame::kNeedMore;
  if (c_.crc_) {
    // The trailer: pad, then the CRC of everything before it.
    const std::uint8_t* trailer = block_ + start_;
    const std::size_t pad = direct_.trailer - wire::kCrcSize;
    if (Crc32cFinal(Crc32cUpdate(direct_.crc, trailer, pad)) != wire::LoadLe32(trailer + pad)) {
      SOFTDAT_LOG(kWarn, "tcp %s: FPDU CRC mismatch (%u payload bytes placed, not completed); terminating",
                  c_.Describe().data(), direct_.length);
      return Fail(wire::term::kCrcError);
    }
  }
  start_ += direct_.trailer;
  Enter(RxEvent::kTrailerChecked);
  return FinishPayload(direct_.header, direct_.length);
}

bool RxStream::DirectAllowed(wire::Opcode opcode) const {
  // Without CRC every payload may land as it arrives. With CRC only where nobody looks before the
  // completion (a receive buffer, our Read's sink): a bad CRC then fails the message before it
  // completes. An RDMA Write lands where the consumer may be watching: checked whole first.
  return CarriesPayload(opcode) && (!c_.crc_ || PlacedPrivately(opcode));
}

}  // namespace softdat::transport::tcp
