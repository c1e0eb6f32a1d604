// Transmission: turns posted Sends, RDMA Writes and Reads, the Read Responses the peer asked for
// and the ready-to-receive FPDU into MPA FPDUs in a staging buffer, writes it without blocking,
// and completes Sends and Writes once their last byte is on the socket.
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
#include "transport/tcp/tcp_connection.h"

namespace softdat::transport::tcp {
namespace {

// Fills of the staging buffer one handler may do before it lets other connections run.
constexpr int kFillsPerTurn = 8;
// Below this many free bytes (beyond the header) the buffer is flushed before a new FPDU
// starts, so large messages go out in large FPDUs.
constexpr std::size_t kMinChunk = 4096;

void PutCrc(std::uint8_t* at, std::uint32_t crc) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::uint8_t>(crc >> (8 * i));
}

// Copies `length` bytes out of `segments` starting at the cursor, advancing it.
void Gather(std::span<const Segment> segments, std::uint32_t& segment, std::uint32_t& offset, std::uint8_t* to,
            std::size_t length) {
  while (length > 0 && segment < segments.size()) {
    const Segment& s = segments[segment];
    const std::size_t n = std::min<std::size_t>(length, s.length - offset);
    std::memcpy(to, reinterpret_cast<const std::uint8_t*>(s.address) + offset, n);
    to += n;
    length -= n;
    offset += static_cast<std::uint32_t>(n);
    if (offset == s.length) {
      ++segment;
      offset = 0;
    }
  }
}

wire::Opcode SendOpcode(const Work& work) {
  if (work.solicited) return work.invalidate ? wire::Opcode::kSendSolicitedInvalidate : wire::Opcode::kSendSolicited;
  return work.invalidate ? wire::Opcode::kSendInvalidate : wire::Opcode::kSend;
}

}  // namespace

Status Connection::Post(const Work& work) {
  if (ended_.load(std::memory_order_acquire)) return Status(Code::kInvalidState, Detail::kEpDisconnected);
  {
    std::lock_guard lock(post_mutex_);
    if (posted_count_ == posted_.size()) return Status(Code::kInsufficientResources, Detail::kTep);
    posted_[(posted_head_ + posted_count_) % posted_.size()] = work;
    ++posted_count_;
  }
  if (!kick_pending_.exchange(true)) asio::post(io_, [self = shared_from_this()] { self->OnKick(); });
  return Status::Ok();
}

void Connection::WriteRaw(const std::uint8_t* bytes, std::size_t length) {
  if (length == 0) return;
  std::memcpy(tx_.data() + tx_end_, bytes, length);
  tx_end_ += length;
}

void Connection::PumpTx() {
  if (write_waiting_ || phase_ == Phase::kEnded) return;
  for (int fill = 0; fill < kFillsPerTurn; ++fill) {
    if (!FlushTx()) return;
    tx_sent_ = tx_end_ = 0;
    CompleteWritten();
    if (phase_ == Phase::kEnded) return;
    if (phase_ != Phase::kEstablished && phase_ != Phase::kClosing) return;
    bool framed = false;
    while (true) {
      if (tx_message_.kind == TxKind::kNone && !NextTxMessage()) break;
      const std::size_t before = tx_end_;
      FrameOne();
      if (tx_end_ == before) break;  // no room: flush first
      framed = true;
    }
    if (!framed) {
      MaybeFinishClose();
      return;
    }
  }
  // Still more to send: come back after the other connections had a turn.
  if (!kick_pending_.exchange(true)) asio::post(io_, [self = shared_from_this()] { self->OnKick(); });
}

bool Connection::FlushTx() {
  while (tx_sent_ < tx_end_) {
    const ssize_t n = ::send(socket_.native_handle(), tx_.data() + tx_sent_, tx_end_ - tx_sent_,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      tx_sent_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      write_waiting_ = true;
      socket_.async_wait(asio::socket_base::wait_write, [self = shared_from_this()](const boost::system::error_code& error) {
        std::lock_guard lock(self->io_mutex_);
        if (self->detached_) return;
        self->write_waiting_ = false;
        if (error || self->phase_ == Phase::kEnded) return;
        self->PumpTx();
      });
      return false;
    }
    SOFTDAT_LOG(kInfo, "tcp: send failed: %s", n < 0 ? std::strerror(errno) : "connection closed");
    End(ConnectionEnd::kBroken);
    return false;
  }
  return true;
}

void Connection::CompleteWritten() {
  const std::size_t count = written_count_;
  written_count_ = 0;
  for (std::size_t i = 0; i < count && events_ != nullptr; ++i) {
    events_->OnWorkDone(written_ids_[i], WorkStatus::kSuccess, written_lengths_[i]);
  }
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
    responses_head_ = (responses_head_ + 1) % responses_.size();
    --responses_count_;
    return true;
  }
  std::lock_guard lock(post_mutex_);
  if (posted_count_ == 0) return false;
  const Work& work = posted_[posted_head_];
  if (work.fence && reads_count_ > 0) return false;
  if (work.kind == WorkKind::kRdmaRead && reads_count_ >= std::min<std::size_t>(ord_, reads_.size())) return false;
  m = TxMessage{};
  m.work = work;
  m.length = work.length;
  posted_head_ = (posted_head_ + 1) % posted_.size();
  --posted_count_;
  switch (work.kind) {
    case WorkKind::kSend:
      m.kind = TxKind::kSend;
      m.msn = send_msn_++;
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
  }
  return true;
}

void Connection::FrameOne() {
  TxMessage& m = tx_message_;
  std::uint8_t* at = tx_.data() + tx_end_;
  const std::size_t room = tx_.size() - tx_end_;
  wire::FpduHeader header;
  header.last = true;
  std::size_t header_size = 0;
  std::uint32_t chunk = 0;

  switch (m.kind) {
    case TxKind::kNone:
      return;
    case TxKind::kRtr:
    case TxKind::kReadRequest: {
      // Fixed-size FPDUs without payload.
      const bool rtr = m.kind == TxKind::kRtr;
      header.opcode = rtr ? wire::Opcode::kRdmaWrite : wire::Opcode::kReadRequest;
      header_size = wire::HeaderSize(header.opcode);
      if (room < header_size + 3 + wire::kCrcSize) return;
      if (!rtr) {
        header.queue = wire::kQueueReadRequest;
        header.msn = m.msn;
      }
      break;
    }
    case TxKind::kSend:
    case TxKind::kWrite:
    case TxKind::kReadResponse: {
      header.opcode = m.kind == TxKind::kSend    ? SendOpcode(m.work)
                      : m.kind == TxKind::kWrite ? wire::Opcode::kRdmaWrite
                                                 : wire::Opcode::kReadResponse;
      header_size = wire::HeaderSize(header.opcode);
      const std::uint64_t remaining = m.length - m.offset;
      const std::size_t overhead = header_size + 3 + wire::kCrcSize;
      if (room < overhead) return;
      chunk = static_cast<std::uint32_t>(std::min<std::uint64_t>({remaining, wire::kMaxFpduPayload, room - overhead}));
      if (chunk < remaining && chunk < kMinChunk) return;
      header.last = m.offset + chunk == m.length;
      header.stag = m.stag;
      if (m.kind == TxKind::kSend) {
        header.queue = wire::kQueueSend;
        header.msn = m.msn;
        header.message_offset = static_cast<std::uint32_t>(m.offset);
      } else {
        header.tagged_offset = m.tagged_offset + m.offset;
      }
      break;
    }
  }

  const std::size_t body = m.kind == TxKind::kReadRequest ? wire::kReadRequestBodySize : 0;
  const std::size_t ulpdu = header_size - wire::kLengthFieldSize + chunk;
  header.ulpdu_length = static_cast<std::uint16_t>(ulpdu);
  (void)wire::EncodeHeader(header, at);
  if (body != 0) wire::EncodeReadRequest(m.read, at + wire::kUntaggedHeaderSize);
  std::uint8_t* payload = at + header_size;
  if (m.kind == TxKind::kReadResponse) {
    if (chunk != 0) std::memcpy(payload, m.source + m.offset, chunk);
  } else if (chunk != 0) {
    Gather(m.work.local, m.segment, m.segment_offset, payload, chunk);
  }
  const std::size_t pad = wire::PadSize(ulpdu);
  std::memset(payload + chunk, 0, pad);
  const std::size_t covered = wire::kLengthFieldSize + ulpdu + pad;
  PutCrc(at + covered, crc_ ? Crc32c(at, covered) : 0);
  tx_end_ += covered + wire::kCrcSize;
  m.offset += chunk;

  if (!header.last) return;
  if (m.kind == TxKind::kSend || m.kind == TxKind::kWrite) {
    written_ids_[written_count_] = m.work.id;
    written_lengths_[written_count_] = static_cast<std::uint32_t>(m.length);
    ++written_count_;
  }
  m.kind = TxKind::kNone;
}

}  // namespace softdat::transport::tcp
