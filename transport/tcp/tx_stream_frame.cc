// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// TxStream, framing: which message goes next, and how each is cut into FPDUs appended to the
// batch (header, payload gathered in place or snapshotted, pad and CRC trailer).
#include <algorithm>
#include <cstring>

#include "transport/tcp/connection.h"
#include "transport/tcp/crc32c.h"
#include "transport/tcp/tx_stream.h"

namespace softdat::transport::tcp {
namespace {

// Payload bytes per batch (one sendmsg): fewer, larger writes cost the kernel less per byte
// (docs/PERFORMANCE.md, "Streaming"); few enough that small completions behind a large message
// are not held back long.
constexpr std::size_t kBatchBytes = 1024 * 1024;
// Below this much room left in a batch a new FPDU of a longer message waits for the next batch,
// so large messages go out in large FPDUs.
constexpr std::size_t kMinChunk = 4096;
// Arena bytes one FPDU needs at most: the longest header, pad and CRC.
constexpr std::size_t kFpduArena = wire::kMaxHeaderSize + 3 + wire::kCrcSize;
// By WorkKind: Work that waits for the peer's answer, and so takes one of the ORD it granted.
constexpr bool kAwaitsResponse[] = {false, false, true, false, true, true, false};
static_assert(std::size(kAwaitsResponse) == static_cast<std::size_t>(WorkKind::kSendDatagram) + 1);

}  // namespace

bool TxStream::NeedsSnapshot(const Message& m) const {
  // The CRC must cover exactly the bytes sent. A Send's or Write's buffer is not the consumer's
  // to change until the Work completes (DAT), and it completes only after sendmsg copied it:
  // checksummed in place, no copy (a small one is our inline copy anyway). A Read Response's
  // source is the responder's memory, open to concurrent writes as on an RNIC (stock dtest
  // rewrites it while the peer reads): checksummed from a snapshot. So is an unsignaled Send's or
  // Write's: no completion tells the consumer when it is free, and stock dtest -w rewrites the
  // source of its unsignaled Writes while they are in flight (signaled ones stay in place).
  return c_.crc_ && (m.kind == Kind::kReadResponse ||
                     (m.work.unsignaled && m.inline_charged == 0 &&
                      (m.kind == Kind::kSend || m.kind == Kind::kWrite || m.kind == Kind::kWriteImmediate)));
}

bool TxStream::NextMessage() {
  Message& m = message_;
  if (owe_rtr_) {
    owe_rtr_ = false;
    m = Message{};
    m.kind = Kind::kRtr;
    return true;
  }
  if (!c_.reads_in_.empty()) {
    const InboundRead& r = c_.reads_in_.front();
    m = Message{};
    m.kind = Kind::kReadResponse;
    m.source = r.source;
    m.length = r.length;
    m.stag = r.sink_stag;
    m.tagged_offset = r.sink_offset;
    if (r.atomic) TakeAtomicResponse(m, r);
    c_.reads_in_.Pop();
    return true;
  }
  PostQueue::Posted posted;
  const bool taken = c_.posts_.TakeFront(
      [this](const PostQueue::Posted& next) {
        // A fenced Work waits for our outstanding Reads, and Reads and atomics (whose answers
        // come back the same way) stop at the ORD the peer granted.
        if (next.work.fence && !c_.reads_out_.empty()) return false;
        return !kAwaitsResponse[static_cast<std::size_t>(next.work.kind)] ||
               c_.reads_out_.size() < std::min<std::size_t>(c_.ord_, c_.reads_out_.capacity());
      },
      posted);
  if (!taken) return false;
  Take(posted);
  return true;
}

void TxStream::Take(const PostQueue::Posted& posted) {
  Message& m = message_;
  const Work& work = posted.work;
  m = Message{};
  m.work = work;
  m.length = work.length;
  if (posted.inline_charged != 0) {
    m.inline_segment = posted.inline_segment;
    m.inline_charged = posted.inline_charged;
    m.framed = posted.framed;
    m.work.local = std::span<const Segment>(&m.inline_segment, 1);
  }
  switch (work.kind) {
    case WorkKind::kSend:
      m.kind = Kind::kSend;
      m.msn = posted.msn;
      m.stag = work.invalidate ? work.invalidate_key : 0;
      break;
    case WorkKind::kRdmaWrite:
      m.kind = Kind::kWrite;
      m.stag = work.remote_key;
      m.tagged_offset = work.remote_address;
      break;
    case WorkKind::kRdmaRead: {
      m.kind = Kind::kReadRequest;
      m.msn = read_request_msn_++;
      // The sink STag only has to match our own Read Responses: a per-connection counter.
      const std::uint32_t sink = next_sink_stag_++;
      if (next_sink_stag_ == 0) next_sink_stag_ = 1;
      m.read = wire::ReadRequestBody{sink, 0, static_cast<std::uint32_t>(work.length), work.remote_key,
                                     work.remote_address};
      OutboundRead& read = c_.reads_out_.back_slot();
      read = OutboundRead{};
      read.work = work;
      read.sink_stag = sink;
      c_.reads_out_.Push();
      break;
    }
    case WorkKind::kRdmaWriteImmediate:
      TakeWriteImmediate(m, posted);
      break;
    case WorkKind::kFetchAdd:
    case WorkKind::kCompareSwap:
      TakeAtomicRequest(m, work);
      break;
    case WorkKind::kSendDatagram:
      break;  // core posts datagrams only to datagram endpoints, never to a connection
  }
}

// How many payload bytes the next FPDU of `m` carries: what is left, at most one FPDU and what the
// batch may still take, and as much as the snapshot room or the free gather pieces allow.
// Returns false when it is better to send what is batched first (a tiny chunk, or no room).
bool TxStream::ChunkFor(const Message& m, std::uint32_t& chunk) const {
  const std::uint64_t remaining = m.length - m.offset;
  const std::size_t budget = kBatchBytes > batch_.bytes() ? kBatchBytes - batch_.bytes() : 0;
  chunk = static_cast<std::uint32_t>(std::min<std::uint64_t>({remaining, wire::kMaxFpduPayload, budget}));
  if (NeedsSnapshot(m)) {
    chunk = static_cast<std::uint32_t>(std::min<std::size_t>(chunk, batch_.staging_room()));
  } else if (m.kind != Kind::kReadResponse) {
    // As much as the free pieces can gather, header and trailer aside.
    std::size_t pieces = batch_.piece_room() - 2, fits = 0;
    for (std::size_t s = m.segment, offset = m.segment_offset; s < m.work.local.size() && pieces > 0 && fits < chunk;
         ++s, offset = 0, --pieces) {
      fits += m.work.local[s].length - offset;
    }
    chunk = static_cast<std::uint32_t>(std::min<std::size_t>(chunk, fits));
  }
  if (chunk < remaining && chunk < kMinChunk && batch_.bytes() != 0) return false;
  return chunk != 0 || remaining == 0;
}

// The header of the next FPDU of `m` and its payload size; false when nothing is framed now.
bool TxStream::PlanFpdu(const Message& m, wire::FpduHeader& header, std::uint32_t& chunk) const {
  header.last = true;
  chunk = 0;
  switch (m.kind) {
    case Kind::kNone:
      return false;
    case Kind::kRtr:
      header.opcode = wire::Opcode::kRdmaWrite;  // zero-length, STag 0
      return true;
    case Kind::kReadRequest:
      header.opcode = wire::Opcode::kReadRequest;
      header.queue = wire::kQueueReadRequest;
      header.msn = m.msn;
      return true;
    case Kind::kImmediate:
    case Kind::kAtomicRequest:
    case Kind::kAtomicResponse:
      return PlanExtension(m, header);
    case Kind::kSend:
    case Kind::kWrite:
    case Kind::kWriteImmediate:
    case Kind::kReadResponse:
      break;
  }
  if (!ChunkFor(m, chunk)) return false;
  header.opcode = m.kind == Kind::kSend           ? wire::SendOpcode(m.work.solicited, m.work.invalidate)
                  : m.kind == Kind::kReadResponse ? wire::Opcode::kReadResponse
                                                  : wire::Opcode::kRdmaWrite;
  header.last = m.offset + chunk == m.length;
  header.stag = m.stag;
  if (m.kind == Kind::kSend) {
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
std::uint32_t TxStream::AppendHeader(const Message& m, const wire::FpduHeader& header) {
  const std::size_t header_size = wire::HeaderSize(header.opcode);
  std::uint8_t* head = batch_.Reserve(header_size);
  (void)wire::EncodeHeader(header, head);
  // A Send's or Write's header is no larger than the untagged one.
  if (header_size > wire::kUntaggedHeaderSize) EncodeBody(m, head + wire::kUntaggedHeaderSize);
  return c_.crc_ ? Crc32cUpdate(kCrc32cInit, head, header_size) : 0;
}

void TxStream::EncodeBody(const Message& m, std::uint8_t* body) const {
  switch (m.kind) {
    case Kind::kReadRequest: return wire::EncodeReadRequest(m.read, body);
    case Kind::kImmediate: return wire::EncodeImmediate(m.work.immediate, body);
    case Kind::kAtomicRequest: return wire::EncodeAtomicRequest(m.atomic, body);
    case Kind::kAtomicResponse: return wire::EncodeAtomicResponse(m.atomic_response, body);
    default: return;
  }
}

// Appends `chunk` payload bytes of `m` and returns the CRC over them, continuing `crc`.
std::uint32_t TxStream::AppendPayload(Message& m, std::uint32_t chunk, std::uint32_t crc) {
  if (chunk == 0) return crc;
  if (m.kind == Kind::kReadResponse) {
    if (!NeedsSnapshot(m)) {
      batch_.AddExternal(m.source + m.offset, chunk);
      return crc;  // no CRC
    }
    // A snapshot, copied and checksummed in one pass (see NeedsSnapshot).
    return Crc32cCopy(crc, batch_.ReserveStaging(chunk), m.source + m.offset, chunk);
  }
  // Gathered in place and checksummed where it lies, or copied and checksummed in one pass (see
  // NeedsSnapshot).
  const bool snapshot = NeedsSnapshot(m);
  for (std::uint32_t left = chunk; left > 0;) {
    const Segment& segment = m.work.local[m.segment];
    const std::uint32_t n = std::min(left, segment.length - m.segment_offset);
    const auto* at = reinterpret_cast<const std::uint8_t*>(segment.address) + m.segment_offset;
    if (snapshot) {
      crc = Crc32cCopy(crc, batch_.ReserveStaging(n), at, n);
    } else {
      batch_.AddExternal(at, n);
      if (c_.crc_) crc = Crc32cUpdate(crc, at, n);
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

// Appends the pad and the CRC trailer of an FPDU whose ULPDU is `ulpdu` bytes (without CRC the
// field is still sent, as zeros: RFC 5044 §4.1).
void TxStream::AppendTrailer(std::size_t ulpdu, std::uint32_t crc) {
  const std::size_t pad = wire::PadSize(ulpdu);
  std::uint8_t* at = batch_.Reserve(pad + wire::kCrcSize);
  std::memset(at, 0, pad);
  wire::StoreLe32(at + pad, c_.crc_ ? Crc32cFinal(Crc32cUpdate(crc, at, pad)) : 0);
}

// Frames the next FPDU of the message being sent into the batch, if there is room.
void TxStream::FrameOne() {
  Message& m = message_;
  if (m.kind == Kind::kNone || batch_.arena_room() < kFpduArena || batch_.piece_room() < 3) return;
  if (m.framed) {  // built whole at post (PostQueue): one piece, if the batch has room
    if (batch_.bytes() != 0 && batch_.bytes() + m.inline_segment.length > kBatchBytes) return;
    batch_.AddExternal(reinterpret_cast<const void*>(m.inline_segment.address), m.inline_segment.length);
    m.offset = m.length;
    FinishFramed(m);
    return;
  }
  if (NeedsSnapshot(m) && !batch_.HoldStaging()) return Fail(ENOMEM);
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
void TxStream::FinishFramed(Message& m) {
  const auto kind = static_cast<std::size_t>(m.kind);
  if (kCompletesWhenWritten[kind])
    written_[written_count_++] = Written{m.work.id, static_cast<std::uint32_t>(m.length), m.inline_charged};
  m.kind = kFramedNext[kind];
}

}  // namespace softdat::transport::tcp
