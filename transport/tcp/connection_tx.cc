// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Transmission: turns posted Sends, RDMA Writes and Reads, the Read Responses the peer asked for
// and the ready-to-receive FPDU into MPA FPDUs, as one gather list per batch (headers and CRC
// trailers from a pooled arena; payload from registered memory, checksummed in place, except a
// Read Response's and an unsignaled Send's or Write's with CRC, checksummed from a snapshot: see
// NeedsSnapshot), writes it without
// blocking, and completes Sends and Writes once their last byte is on the socket.
//
// One message is framed whole before the next starts. Read Responses go before new posted work
// (the peer is waiting for them); a fenced Work waits for our outstanding Reads, and Reads stop
// at the ORD the peer granted.
#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/crc32c.h"
#include "transport/tcp/kick_queue.h"
#include "transport/tcp/mono_clock.h"
#include "transport/tcp/tcp_connection.h"

namespace softdat::transport::tcp {
namespace {

// What one handler may write before it lets other connections run: this many batches, and about
// this many payload bytes.
constexpr int kBatchesPerTurn = 8;
constexpr std::size_t kTurnBytes = 2 * 1024 * 1024;
// Payload bytes per batch (one sendmsg). On loopback a stream of 64 KiB Sends moved 20-35% more
// in 1 MiB batches than in 256 KiB ones (8 messages per sendmsg instead of 3.2; the sender's
// system time per byte fell by a third), and a stream of 1 MiB Sends 2-19% more (8 of 9 rounds,
// in both modes once a waiter's spin stopped counting the time its own writes take). Few enough
// bytes that completions of small messages behind a large one are not held back long.
constexpr std::size_t kBatchBytes = 1024 * 1024;
// Below this much room left in a batch a new FPDU of a longer message waits for the next batch,
// so large messages go out in large FPDUs.
constexpr std::size_t kMinChunk = 4096;
// Arena bytes one FPDU needs at most: the longest header, pad and CRC.
constexpr std::size_t kFpduArena = wire::kMaxHeaderSize + 3 + wire::kCrcSize;
// A Send framed at post fits one inline allocation and one FPDU.
static_assert(InlineRing::kMaxAllocation >= InlineRing::kMaxInline + wire::kUntaggedHeaderSize + 3 + wire::kCrcSize);
static_assert(InlineRing::kMaxInline <= wire::kMaxFpduPayload);

void PutCrc(std::uint8_t* at, std::uint32_t crc) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::uint8_t>(crc >> (8 * i));
}

// Writes an FPDU's zero pad and its CRC field at `at`, finishing the CRC `state` of the bytes
// before it (without CRC the field is zero).
void WriteTrailer(std::uint8_t* at, std::size_t pad, std::uint32_t state, bool crc) {
  std::memset(at, 0, pad);
  PutCrc(at + pad, crc ? Crc32cFinal(Crc32cUpdate(state, at, pad)) : 0);
}

// By WorkKind, looked up on every post rather than branched on: whether the Work takes a Send MSN
// (a Send; the Immediate Data after a Write with immediate data), and whether its payload is a
// source copied at post when small (Sends and Writes; a Read's and an atomic's local memory is
// where the answer lands).
constexpr std::uint32_t kTakesSendMsn[] = {1, 0, 0, 1, 0, 0, 0};
constexpr bool kCopiesPayload[] = {true, true, false, true, false, false, false};
static_assert(std::size(kTakesSendMsn) == static_cast<std::size_t>(WorkKind::kSendDatagram) + 1);
static_assert(std::size(kCopiesPayload) == std::size(kTakesSendMsn));

// Work that waits for the peer's answer and so takes one of the ORD the peer granted.
bool AwaitsResponse(WorkKind kind) {
  return kind == WorkKind::kRdmaRead || kind == WorkKind::kFetchAdd || kind == WorkKind::kCompareSwap;
}

wire::Opcode SendOpcode(const Work& work) {
  if (work.solicited) return work.invalidate ? wire::Opcode::kSendSolicitedInvalidate : wire::Opcode::kSendSolicited;
  return work.invalidate ? wire::Opcode::kSendInvalidate : wire::Opcode::kSend;
}

}  // namespace

Status Connection::Post(const Work& work) {
  // The connection ended and its OnEnded is on its way (core holds the EP's state lock around
  // this call, so it has not run yet): the Work is accepted and left for that end to flush, as
  // core promises (the end flushes the request, or the request sees the end).
  if (ended_.load(std::memory_order_acquire)) return Status::Ok();
  {
    std::lock_guard lock(post_mutex_);
    const std::uint32_t count = posted_count_.load(std::memory_order_relaxed);
    if (count == posted_.size()) return Status(Code::kInsufficientResources, Detail::kTep);
    // Ring positions wrap by comparison: a division by the ring's size (a runtime value) costs
    // tens of cycles, three of them on every small Send's way to its send().
    std::size_t at = std::size_t{posted_head_} + count;
    if (at >= posted_.size()) at -= posted_.size();
    PostedWork& slot = posted_[at];
    slot.work = work;
    slot.inline_charged = 0;
    slot.framed = false;
    const auto kind = static_cast<std::size_t>(work.kind);
    slot.msn = send_msn_;
    send_msn_ += kTakesSendMsn[kind];
    const PostFraming framing = post_framing_.load(std::memory_order_acquire);
    if (work.kind == WorkKind::kSend && framing != PostFraming::kNotYet) {
      FrameAtPost(slot, framing == PostFraming::kWithCrc);
    } else if (kCopiesPayload[kind]) {
      CopyInline(slot);
    }
    posted_count_.store(count + 1, std::memory_order_release);
  }
  // The latency path: when nobody else is at this connection, write the Work from this thread now
  // (one sendmsg, non-blocking). Its completion, and anything else, waits for the next poll.
  // Coalescing: while an earlier write's completion is still unreported (the consumer has not
  // polled since), or while a send-only stream (two writes or more since the last read) wrote
  // within the coalescing window (coalesce_us, 16 µs unless the IA says otherwise), or any
  // connection of this IA did, this Work stays queued, and a later poll writes everything queued
  // on a connection with one sendmsg: a stream of small Sends costs a syscall per window, not one
  // each.
  // A stream's Work also waits while other connections wait for the next drain (kicks queued): a
  // stream over many connections is written one sendmsg per connection and drain, where writing
  // each Work alone would split the batches every drain builds.
  // Request-response traffic (a read since the last write), like every ping-pong message, and an
  // occasional Send go out at once.
  // Post reports nothing (in_post_: failures wait for the next poll), so it takes io_mutex_
  // plainly; core holds its EP locks around this call, and a delivery here would post under them.
  if (io_mutex_.try_lock()) {
    std::lock_guard lock(io_mutex_, std::adopt_lock);
    if (!detached_ && (phase_ == Phase::kEstablished || phase_ == Phase::kClosing) && !write_waiting_ &&
        written_count_ == 0 && TxDue(options_.buffers->last_write_ns.load(std::memory_order_relaxed)) &&
        !(Streaming() && options_.kicks != nullptr && options_.kicks->queued())) {
      in_post_ = true;
      if (!WriteFramedAtPost()) PumpTx();
      in_post_ = false;
    }
  }
  Kick();
  return Status::Ok();
}

// The latency path's shortest form (from Post, io_mutex_ held): a Send framed whole at post, the
// only Work queued on an idle connection, goes out with one send() straight from its frame in the
// inline ring. Through the batch machinery (a pooled gather block, the framing loop, a second
// look at the queue) an 8 B ping-pong's post took 2,690 instructions, with this 1,920
// (callgrind), most of the difference before the send(), on the round trip. What the socket
// does not take at once becomes a batch, as if PumpTx had framed it.
bool Connection::WriteFramedAtPost() {
  if (phase_ != Phase::kEstablished || !tx_.empty() || tx_message_.kind != TxKind::kNone || rtr_pending_ ||
      responses_count_ != 0 || tx_failed_ || awaiting_first_fpdu_ || written_count_ != 0)
    return false;
  Segment frame;
  {
    std::lock_guard lock(post_mutex_);
    const PostedWork& slot = posted_[posted_head_];
    if (posted_count_.load(std::memory_order_relaxed) != 1 || !slot.framed) return false;
    frame = slot.inline_segment;
    written_ids_[0] = slot.work.id;
    written_lengths_[0] = static_cast<std::uint32_t>(slot.work.length);
    written_inline_[0] = slot.inline_charged;
    if (++posted_head_ == posted_.size()) posted_head_ = 0;
    posted_count_.store(0, std::memory_order_relaxed);
  }
  written_count_ = 1;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(frame.address);
  const ssize_t n = ::send(socket_.native_handle(), bytes, frame.length, MSG_NOSIGNAL | MSG_DONTWAIT);
  options_.buffers->sendmsg_calls.fetch_add(1, std::memory_order_relaxed);
  // The clock is read after the write: the peer has the frame already.
  last_write_ns_ = MonotonicNs();
  options_.buffers->last_write_ns.store(last_write_ns_, std::memory_order_relaxed);
  if (writes_without_read_ < 2) ++writes_without_read_;
  if (n == static_cast<ssize_t>(frame.length)) {
    written_sent_ = 1;  // completed at the next poll (CompleteWritten)
    return true;
  }
  // Blocked, partial or failed: the rest is a batch, and FlushTx deals with it as with any.
  if (!tx_.Hold()) {
    FailTx(ENOMEM);
    return true;
  }
  const std::size_t done = n > 0 ? static_cast<std::size_t>(n) : 0;
  tx_.AddExternal(bytes + done, frame.length - done);
  PumpTx();
  return true;
}

void Connection::CopyInline(PostedWork& slot) {
  const Work& work = slot.work;
  if (work.length == 0 || work.length > InlineRing::kMaxInline) return;
  std::uint32_t charged = 0;
  std::uint8_t* copy = inline_.Allocate(work.length, charged);
  if (copy == nullptr) return;
  std::size_t at = 0;
  for (const Segment& segment : work.local) {
    if (segment.length == 0) continue;
    std::memcpy(copy + at, reinterpret_cast<const void*>(segment.address), segment.length);
    at += segment.length;
  }
  slot.inline_segment = Segment{reinterpret_cast<std::uint64_t>(copy), static_cast<std::uint32_t>(work.length), 0};
  slot.inline_charged = charged;
}

void Connection::SetCrc(bool crc) {
  crc_ = crc;
  post_framing_.store(crc ? PostFraming::kWithCrc : PostFraming::kWithoutCrc, std::memory_order_release);
}

// A small Send is framed whole here, into the inline ring: header, payload copied, pad, and the
// CRC over them while they are in cache. Framing it later read the copy again, cold by then:
// with 1,000 connections coalescing, a drain frames thousands of Sends posted milliseconds before
// (the SRQ fan-in client: 10.7% of its samples in the CRC of 4 KiB payloads, besides the copy).
// Everything in the FPDU is known now: Sends are framed in post order, so the MSN is the post's.
void Connection::FrameAtPost(PostedWork& slot, bool crc) {
  const Work& work = slot.work;
  if (work.length == 0 || work.length > InlineRing::kMaxInline) return;  // framed later
  wire::FpduHeader header;
  header.opcode = SendOpcode(work);
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
  if (frame == nullptr) return;  // the ring is full: read at framing time, like a large one
  (void)wire::EncodeHeader(header, frame);
  std::uint8_t* at = frame + header_size;
  for (const Segment& segment : work.local) {
    if (segment.length == 0) continue;
    std::memcpy(at, reinterpret_cast<const void*>(segment.address), segment.length);
    at += segment.length;
  }
  std::memset(at, 0, pad);
  // One CRC call over header, payload and pad, all in L1 after the copy: each ISA-L call costs
  // more than the CRC of a few dozen bytes, and one per piece (header, each segment, pad) was
  // 40% of framing an 8 B Send.
  PutCrc(at + pad, crc ? Crc32cFinal(Crc32cUpdate(kCrc32cInit, frame, size - wire::kCrcSize)) : 0);
  slot.inline_segment = Segment{reinterpret_cast<std::uint64_t>(frame), static_cast<std::uint32_t>(size), 0};
  slot.inline_charged = charged;
  slot.framed = true;
}

bool Connection::NeedsSnapshot(const TxMessage& m) const {
  // The CRC must cover exactly the bytes sent. A Send's or Write's buffer is not the consumer's
  // to change until the Work completes (DAT), and it completes only after sendmsg copied it:
  // checksummed in place, no copy (a small one is our inline copy anyway). A Read Response's
  // source is the responder's memory, open to concurrent writes as on an RNIC (stock dtest
  // rewrites it while the peer reads): checksummed from a snapshot. So is an unsignaled Send's or
  // Write's: no completion tells the consumer when it is free, and stock dtest -w rewrites the
  // source of its unsignaled Writes while they are in flight (signaled ones stay in place).
  return crc_ && (m.kind == TxKind::kReadResponse ||
                  (m.work.unsignaled && m.inline_charged == 0 &&
                   (m.kind == TxKind::kSend || m.kind == TxKind::kWrite || m.kind == TxKind::kWriteImmediate)));
}

void Connection::WriteRaw(const std::uint8_t* bytes, std::size_t length) {
  if (length == 0) return;  // after a Reserve: the frames block is held
  std::memcpy(tx_.Reserve(length), bytes, length);
}

void Connection::PumpTx() {
  if (TxIdle()) return;
  PumpBatches();
  // Everything is on the socket: the send blocks go back to the pool until there is more.
  if (tx_.empty()) tx_.Drop();
}

// Nothing to write or complete, and no close to move on: a read-side poll (PollIo, after every
// read) then skips the batch machinery, which cost about 450 instructions on the receive path of
// every ping-pong message before the consumer saw it.
bool Connection::TxIdle() {
  if (phase_ != Phase::kEstablished || tx_.held() || written_count_ != 0 || tx_message_.kind != TxKind::kNone ||
      rtr_pending_ || responses_count_ != 0 || tx_failed_ || write_waiting_ || awaiting_first_fpdu_)
    return false;
  // Without post_mutex_: a Work posted meanwhile is seen by the Kick its Post makes.
  return posted_count_.load(std::memory_order_acquire) == 0;
}

void Connection::FailTx(int error) {
  if (in_post_) {
    tx_failed_ = true;  // Post may not report events: the next poll ends the connection
    tx_errno_ = error;
    Kick();
    return;
  }
  SOFTDAT_LOG(kWarn, "tcp %s: send failed: %s; breaking the connection", Describe().data(), std::strerror(error));
  End(ConnectionEnd::kBroken);
}

void Connection::PumpBatches() {
  if (write_waiting_ || phase_ == Phase::kEnded) return;
  if (tx_failed_ && !in_post_) {
    // A write from Post failed; the connection ends here, where events may be reported.
    SOFTDAT_LOG(kWarn, "tcp %s: send failed: %s; breaking the connection", Describe().data(), std::strerror(tx_errno_));
    End(ConnectionEnd::kBroken);
    return;
  }
  if (!tx_.Hold()) return FailTx(ENOMEM);
  std::size_t turn_bytes = 0;
  for (int batch = 0; batch < kBatchesPerTurn && turn_bytes < kTurnBytes; ++batch) {
    if (!FlushTx()) return;
    tx_.Reset();
    if (!in_post_) CompleteWritten();
    if (phase_ == Phase::kEnded) return;
    if (phase_ != Phase::kEstablished && phase_ != Phase::kClosing) return;
    if (awaiting_first_fpdu_) {  // held until the initiator's first FPDU (OnFirstFpdu)
      MaybeFinishClose();
      return;
    }
    bool framed = false;
    while (true) {
      if (tx_message_.kind == TxKind::kNone && !NextTxMessage()) break;
      const std::size_t before = tx_.bytes();
      FrameOne();
      if (tx_.bytes() == before) break;  // no room: write this batch first
      framed = true;
    }
    if (!framed) {
      MaybeFinishClose();
      return;
    }
    turn_bytes += tx_.bytes();
  }
  // Still more to send: come back after the other connections had a turn.
  Kick();
}

bool Connection::Streaming() const { return writes_without_read_ >= 2 && options_.coalesce_ns != 0; }

bool Connection::TxDue(std::uint64_t ia_last_write_ns) const {
  if (!Streaming()) return true;
  const std::uint64_t last = std::max(last_write_ns_, ia_last_write_ns);
  const std::uint64_t now = MonotonicNs();
  return now > last && now - last >= options_.coalesce_ns;
}

bool Connection::FlushTx() {
  if (!tx_.empty()) {
    last_write_ns_ = MonotonicNs();
    options_.buffers->last_write_ns.store(last_write_ns_, std::memory_order_relaxed);
    if (writes_without_read_ < 2) ++writes_without_read_;
  }
  switch (tx_.WriteTo(socket_.native_handle())) {
    case TxBatch::Write::kDone:
      written_sent_ = written_count_;  // everything framed is on the socket now
      return true;
    case TxBatch::Write::kBlocked:
      write_waiting_ = true;
      socket_.async_wait(asio::socket_base::wait_write, [self = shared_from_this()](const boost::system::error_code& error) {
        IoLock lock(*self);
        if (self->detached_) return;
        self->write_waiting_ = false;
        if (error || self->phase_ == Phase::kEnded) return;
        self->PumpTx();
      });
      return false;
    case TxBatch::Write::kError:
      break;
  }
  FailTx(errno != 0 ? errno : EPIPE);
  return false;
}

// Completes the Sends and Writes whose bytes are all on the socket, in order. Those framed into a
// batch that waits for room stay: their payload (an inline copy, a snapshot) is still referenced
// by the batch, and a completion would free it for reuse before it left.
void Connection::CompleteWritten() {
  const std::size_t count = written_sent_;
  if (count == 0) return;
  std::uint32_t inline_done = 0;
  for (std::size_t i = 0; i < count; ++i) inline_done += written_inline_[i];
  if (inline_done != 0) {
    std::lock_guard lock(post_mutex_);
    inline_.Release(inline_done);
  }
  for (std::size_t i = 0; i < count && events_ != nullptr; ++i) {
    events_->OnWorkDone(written_ids_[i], WorkStatus::kSuccess, written_lengths_[i]);
  }
  report_pending_ = true;
  // The ones still waiting move to the front (a few at most: one batch's worth).
  const std::size_t waiting = written_count_ - count;
  for (std::size_t i = 0; i < waiting; ++i) {
    written_ids_[i] = written_ids_[count + i];
    written_lengths_[i] = written_lengths_[count + i];
    written_inline_[i] = written_inline_[count + i];
  }
  written_count_ = waiting;
  written_sent_ = 0;
}

bool Connection::NextTxMessage() {
  TxMessage& m = tx_message_;
  if (rtr_pending_) {
    rtr_pending_ = false;
    m = TxMessage{};
    m.kind = TxKind::kRtr;
    return true;
  }
  if (responses_count_ > 0) {
    const ReadResponse& r = responses_[responses_head_];
    m = TxMessage{};
    m.kind = TxKind::kReadResponse;
    m.source = r.source;
    m.length = r.length;
    m.stag = r.sink_stag;
    m.tagged_offset = r.sink_offset;
    if (r.atomic) BeginAtomicResponse(m, r);
    responses_head_ = (responses_head_ + 1) % responses_.size();
    --responses_count_;
    return true;
  }
  std::lock_guard lock(post_mutex_);
  const std::uint32_t count = posted_count_.load(std::memory_order_relaxed);
  if (count == 0) return false;
  const PostedWork& slot = posted_[posted_head_];
  const Work& work = slot.work;
  if (work.fence && reads_count_ > 0) return false;
  if (AwaitsResponse(work.kind) && reads_count_ >= std::min<std::size_t>(ord_, reads_.size())) return false;
  m = TxMessage{};
  m.work = work;
  m.length = work.length;
  if (slot.inline_charged != 0) {
    m.inline_segment = slot.inline_segment;
    m.inline_charged = slot.inline_charged;
    m.framed = slot.framed;
    m.work.local = std::span<const Segment>(&m.inline_segment, 1);
  }
  if (++posted_head_ == posted_.size()) posted_head_ = 0;
  posted_count_.store(count - 1, std::memory_order_relaxed);
  switch (work.kind) {
    case WorkKind::kSend:
      m.kind = TxKind::kSend;
      m.msn = slot.msn;
      m.stag = work.invalidate ? work.invalidate_key : 0;
      break;
    case WorkKind::kRdmaWrite:
      m.kind = TxKind::kWrite;
      m.stag = work.remote_key;
      m.tagged_offset = work.remote_address;
      break;
    case WorkKind::kRdmaRead: {
      m.kind = TxKind::kReadRequest;
      m.msn = read_request_msn_++;
      // The sink STag only has to match our own Read Responses: a per-connection counter.
      const std::uint32_t sink = next_sink_stag_++;
      if (next_sink_stag_ == 0) next_sink_stag_ = 1;
      m.read = wire::ReadRequestBody{sink, 0, static_cast<std::uint32_t>(work.length), work.remote_key,
                                     work.remote_address};
      OutstandingRead& read = reads_[(reads_head_ + reads_count_) % reads_.size()];
      read = OutstandingRead{};
      read.work = work;
      read.sink_stag = sink;
      ++reads_count_;
      break;
    }
    case WorkKind::kRdmaWriteImmediate:
      BeginWriteImmediate(m, slot);
      break;
    case WorkKind::kFetchAdd:
    case WorkKind::kCompareSwap:
      BeginAtomicRequest(m, work);
      break;
    case WorkKind::kSendDatagram:
      break;  // refused by TcpEndpoint::Post: a connection carries no datagram
  }
  return true;
}

// How many payload bytes the next FPDU of `m` carries: what is left, at most one FPDU and what the
// batch may still take, and as much as the snapshot room or the free gather pieces allow.
// Returns false when it is better to send what is batched first (a tiny chunk, or no room).
bool Connection::ChunkFor(const TxMessage& m, std::uint32_t& chunk) const {
  const std::uint64_t remaining = m.length - m.offset;
  const std::size_t budget = kBatchBytes > tx_.bytes() ? kBatchBytes - tx_.bytes() : 0;
  chunk = static_cast<std::uint32_t>(std::min<std::uint64_t>({remaining, wire::kMaxFpduPayload, budget}));
  if (NeedsSnapshot(m)) {
    chunk = static_cast<std::uint32_t>(std::min<std::size_t>(chunk, tx_.staging_room()));
  } else if (m.kind != TxKind::kReadResponse) {
    // As much as the free pieces can gather, header and trailer aside.
    std::size_t pieces = tx_.piece_room() - 2, fits = 0;
    for (std::size_t s = m.segment, offset = m.segment_offset; s < m.work.local.size() && pieces > 0 && fits < chunk;
         ++s, offset = 0, --pieces) {
      fits += m.work.local[s].length - offset;
    }
    chunk = static_cast<std::uint32_t>(std::min<std::size_t>(chunk, fits));
  }
  if (chunk < remaining && chunk < kMinChunk && tx_.bytes() != 0) return false;
  return chunk != 0 || remaining == 0;
}

// The header of the next FPDU of `m` and its payload size; false when nothing is framed now.
bool Connection::PlanFpdu(const TxMessage& m, wire::FpduHeader& header, std::uint32_t& chunk) const {
  header.last = true;
  chunk = 0;
  switch (m.kind) {
    case TxKind::kNone:
      return false;
    case TxKind::kRtr:
      header.opcode = wire::Opcode::kRdmaWrite;  // zero-length, STag 0
      return true;
    case TxKind::kReadRequest:
      header.opcode = wire::Opcode::kReadRequest;
      header.queue = wire::kQueueReadRequest;
      header.msn = m.msn;
      return true;
    case TxKind::kImmediate:
    case TxKind::kAtomicRequest:
    case TxKind::kAtomicResponse:
      return PlanExtension(m, header);
    case TxKind::kSend:
    case TxKind::kWrite:
    case TxKind::kWriteImmediate:
    case TxKind::kReadResponse:
      break;
  }
  if (!ChunkFor(m, chunk)) return false;
  header.opcode = m.kind == TxKind::kSend           ? SendOpcode(m.work)
                  : m.kind == TxKind::kReadResponse ? wire::Opcode::kReadResponse
                                                    : wire::Opcode::kRdmaWrite;
  header.last = m.offset + chunk == m.length;
  header.stag = m.stag;
  if (m.kind == TxKind::kSend) {
    header.queue = wire::kQueueSend;
    header.msn = m.msn;
    header.message_offset = static_cast<std::uint32_t>(m.offset);
  } else {
    header.tagged_offset = m.tagged_offset + m.offset;
  }
  return true;
}

// Appends the header (and a Read Request's or RFC 7306 message's body) to the batch; returns the
// CRC so far.
std::uint32_t Connection::AppendHeader(const TxMessage& m, const wire::FpduHeader& header) {
  const std::size_t header_size = wire::HeaderSize(header.opcode);
  std::uint8_t* head = tx_.Reserve(header_size);
  (void)wire::EncodeHeader(header, head);
  // A Read Request's body, or an RFC 7306 header (a Send's or Write's header is no larger).
  if (header_size > wire::kUntaggedHeaderSize) EncodeBody(m, head + wire::kUntaggedHeaderSize);
  return crc_ ? Crc32cUpdate(kCrc32cInit, head, header_size) : 0;
}

void Connection::EncodeBody(const TxMessage& m, std::uint8_t* body) const {
  switch (m.kind) {
    case TxKind::kReadRequest: return wire::EncodeReadRequest(m.read, body);
    case TxKind::kImmediate: return wire::EncodeImmediate(m.work.immediate, body);
    case TxKind::kAtomicRequest: return wire::EncodeAtomicRequest(m.atomic, body);
    case TxKind::kAtomicResponse: return wire::EncodeAtomicResponse(m.atomic_response, body);
    default: return;
  }
}

// Appends `chunk` payload bytes of `m` and returns the CRC over them, continuing `crc`.
std::uint32_t Connection::AppendPayload(TxMessage& m, std::uint32_t chunk, std::uint32_t crc) {
  if (chunk == 0) return crc;
  if (m.kind == TxKind::kReadResponse) {
    if (!NeedsSnapshot(m)) {
      tx_.AddExternal(m.source + m.offset, chunk);
      return crc;  // no CRC
    }
    // A snapshot, copied and checksummed in one pass (see NeedsSnapshot).
    return Crc32cCopy(crc, tx_.ReserveStaging(chunk), m.source + m.offset, chunk);
  }
  // Gathered in place and checksummed where it lies, or copied and checksummed in one pass (see
  // NeedsSnapshot).
  const bool snapshot = NeedsSnapshot(m);
  for (std::uint32_t left = chunk; left > 0;) {
    const Segment& segment = m.work.local[m.segment];
    const std::uint32_t n = std::min(left, segment.length - m.segment_offset);
    const auto* at = reinterpret_cast<const std::uint8_t*>(segment.address) + m.segment_offset;
    if (snapshot) {
      crc = Crc32cCopy(crc, tx_.ReserveStaging(n), at, n);
    } else {
      tx_.AddExternal(at, n);
      if (crc_) crc = Crc32cUpdate(crc, at, n);
    }
    left -= n;
    m.segment_offset += n;
    if (m.segment_offset == segment.length) {
      ++m.segment;
      m.segment_offset = 0;
    }
  }
  return crc;
}

// Appends the pad and the CRC trailer of an FPDU whose ULPDU is `ulpdu` bytes.
void Connection::AppendTrailer(std::size_t ulpdu, std::uint32_t crc) {
  const std::size_t pad = wire::PadSize(ulpdu);
  WriteTrailer(tx_.Reserve(pad + wire::kCrcSize), pad, crc, crc_);
}

// Frames the next FPDU of the message being sent into the batch, if there is room.
void Connection::FrameOne() {
  TxMessage& m = tx_message_;
  if (m.kind == TxKind::kNone || tx_.arena_room() < kFpduArena || tx_.piece_room() < 3) return;
  if (m.framed) {  // built whole at post (FrameAtPost): one piece, if the batch has room
    if (tx_.bytes() != 0 && tx_.bytes() + m.inline_segment.length > kBatchBytes) return;
    tx_.AddExternal(reinterpret_cast<const void*>(m.inline_segment.address), m.inline_segment.length);
    m.offset = m.length;
    FinishFramed(m);
    return;
  }
  if (NeedsSnapshot(m) && !tx_.HoldStaging()) return FailTx(ENOMEM);
  wire::FpduHeader header;
  std::uint32_t chunk = 0;
  if (!PlanFpdu(m, header, chunk)) return;
  const std::size_t ulpdu = wire::HeaderSize(header.opcode) - wire::kLengthFieldSize + chunk;
  header.ulpdu_length = static_cast<std::uint16_t>(ulpdu);
  std::uint32_t crc = AppendHeader(m, header);
  crc = AppendPayload(m, chunk, crc);
  AppendTrailer(ulpdu, crc);
  m.offset += chunk;
  if (header.last) FinishFramed(m);
}

// The message's last byte is framed: a Send or Write completes once the batch is written. A Write
// with immediate data goes on with its Immediate Data message, and completes after it.
void Connection::FinishFramed(TxMessage& m) {
  const auto kind = static_cast<std::size_t>(m.kind);
  if (kCompletesWhenWritten[kind]) {
    written_ids_[written_count_] = m.work.id;
    written_lengths_[written_count_] = static_cast<std::uint32_t>(m.length);
    written_inline_[written_count_] = m.inline_charged;
    ++written_count_;
  }
  m.kind = kFramedNext[kind];
}

}  // namespace softdat::transport::tcp
