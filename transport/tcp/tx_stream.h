// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The transmit half of one TCP connection: turns posted Sends, RDMA Writes and Reads, the Read
// Responses the peer asked for, the ready-to-receive FPDU and the setup's MPA frames into FPDUs,
// as one gather list per batch (headers and CRC trailers from a pooled arena; payload from
// registered memory, checksummed in place, except a Read Response's and an unsignaled Send's or
// Write's with CRC, checksummed from a snapshot), writes it without blocking, and completes Sends
// and Writes once their last byte is on the socket. One message is framed whole before the next
// starts; Read and Atomic Responses go before new posted work (the peer waits for them); a fenced
// Work waits for our outstanding Reads, and Reads and atomics stop at the ORD the peer granted.
// The RFC 7306 messages (an RDMA Write with immediate data, atomics) are framed by
// rdmap_extensions.cc.
//
// Coalescing: a send-only stream (two writes or more since the last read) leaves what is queued
// for a later poll while its last write, or any connection's of the IA, is younger than the
// coalescing window (coalesce_us): a stream of small Sends costs a syscall per window, not one
// each; request-response traffic and an occasional Send go out at once (Due).
//
// State: TxState (connection_state.h), changed only through Enter(event); MayWrite() is the one
// answer to "may this stream write now". Owned by the progress context: every member is used
// under the connection's IoLock. Post joins it only with try_lock (Connection::Post) and then
// reports nothing (from_post_): what it wrote completes at the next poll.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "transport/tcp/connection_state.h"
#include "transport/tcp/post_queue.h"
#include "transport/tcp/rdma_reads.h"
#include "transport/tcp/tx_batch.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {

class Connection;

class TxStream {
 public:
  explicit TxStream(Connection& connection);
  TxStream(const TxStream&) = delete;
  TxStream& operator=(const TxStream&) = delete;

  TxState state() const { return state_; }
  void Enter(TxEvent event);
  // The one answer to "may this stream write now": the connection carries traffic and the stream
  // is open (not gated, blocked for room, failed or shut).
  bool MayWrite() const;
  // Nothing to frame, write or complete: a poll skips the batch machinery.
  bool Idle() const;
  // Everything framed is written and nothing waits: a graceful close may send its FIN.
  bool Drained() const;

  // Frames and writes what is queued (a bounded turn, then it kicks to come back), and gives the
  // send blocks back when all is written.
  void Pump();
  // Post's latency path (IoLock held, try_lock): writes the one Send framed at post with one
  // send(), or pumps; what it writes completes at the next poll.
  void WriteFromPost();
  // After WriteFromPost: everything posted is on the socket, and the stream open; what is left is
  // to report the completions (the next poll's CompleteWritten), or a Read's response.
  bool AllOnSocket() const;
  // Whether queued Work should go out now rather than coalesce with what follows (see above);
  // `ia_last_write_ns`: when any connection of the IA wrote, as the caller's drain began.
  bool Due(std::uint64_t ia_last_write_ns = 0) const;
  bool Streaming() const;  // two writes or more since the last read (and coalescing is on)
  // Completes the Sends and Writes whose bytes are all on the socket, in order (before anything
  // read now is reported: the peer's answer never overtakes the Send it answers).
  void CompleteWritten();
  // The receive stream read bytes: what goes out next may be an answer.
  void NoteRead() { writes_without_read_ = 0; }
  // The ready-to-receive FPDU goes out next (the active side, once the Reply allowed it).
  void OweRtr() { owe_rtr_ = true; }

  // Setup frames (MPA Request, Reply, reject): appended raw, written with Flush.
  bool Hold() { return batch_.Hold(); }
  std::uint8_t* Reserve(std::size_t length) { return batch_.Reserve(length); }
  void Append(const std::uint8_t* bytes, std::size_t length);
  bool Flush();  // false when the socket is full (a wait for room is armed) or the stream failed
  // The connection ends: what is unwritten is forgotten and the blocks go back.
  void Abandon();
  // The batch written whole, if the socket takes it at once (a Terminate may follow only whole
  // FPDUs).
  bool WriteBatchNow();
  void Fail(int error);  // the connection cannot send: it ends (at the next poll if from Post)

 private:
  // A message being turned into FPDUs. RFC 7306: the RDMA Write of an RDMA Write with immediate
  // data (framed as kWrite; its Immediate Data message, header only, follows), an Atomic Request
  // and an Atomic Response. FinishFramed looks kinds up in the tables below: keep the order.
  enum class Kind : std::uint8_t {
    kNone,
    kSend,
    kWrite,
    kReadRequest,
    kReadResponse,
    kRtr,
    kWriteImmediate,
    kImmediate,
    kAtomicRequest,
    kAtomicResponse,
  };
  // By Kind, once a message's last byte is framed: whether it completes when written (a Send, a
  // Write, the Immediate Data message that ends a Write with immediate data), and what is framed
  // next (after the Write of a Write with immediate data, its Immediate Data message).
  static constexpr bool kCompletesWhenWritten[] = {false, true, true, false, false, false, false, true, false, false};
  static constexpr Kind kFramedNext[] = {Kind::kNone, Kind::kNone, Kind::kNone,      Kind::kNone, Kind::kNone,
                                         Kind::kNone, Kind::kImmediate, Kind::kNone, Kind::kNone, Kind::kNone};
  static_assert(std::size(kCompletesWhenWritten) == static_cast<std::size_t>(Kind::kAtomicResponse) + 1);
  static_assert(std::size(kFramedNext) == std::size(kCompletesWhenWritten));
  struct Message {
    Kind kind = Kind::kNone;
    Work work;                             // kSend, kWrite, kReadRequest
    const std::uint8_t* source = nullptr;  // kReadResponse: contiguous source memory
    std::uint64_t length = 0;
    std::uint64_t offset = 0;  // bytes already framed
    std::uint32_t segment = 0;  // gather cursor into work.local
    std::uint32_t segment_offset = 0;
    std::uint32_t msn = 0;
    std::uint32_t stag = 0;  // tagged: sink STag; Send with Invalidate: its STag
    std::uint64_t tagged_offset = 0;
    wire::ReadRequestBody read;  // kReadRequest
    wire::AtomicRequestBody atomic;            // kAtomicRequest
    wire::AtomicResponseBody atomic_response;  // kAtomicResponse
    Segment inline_segment;      // work.local when the payload was copied at post
    std::uint32_t inline_charged = 0;
    bool framed = false;  // inline_segment is the whole FPDU (framed at post)
  };
  // A Send or Write whose last byte is in the batch.
  struct Written {
    std::uint64_t id = 0;
    std::uint32_t length = 0;
    std::uint32_t inline_charged = 0;
  };

  void PumpBatches();
  bool NextMessage();
  void FrameOne();
  bool ChunkFor(const Message& m, std::uint32_t& chunk) const;
  bool PlanFpdu(const Message& m, wire::FpduHeader& header, std::uint32_t& chunk) const;
  std::uint32_t AppendHeader(const Message& m, const wire::FpduHeader& header);
  // What follows the untagged header of a Read Request or an RFC 7306 message.
  void EncodeBody(const Message& m, std::uint8_t* body) const;
  std::uint32_t AppendPayload(Message& m, std::uint32_t chunk, std::uint32_t crc);
  void AppendTrailer(std::size_t ulpdu, std::uint32_t crc);
  void FinishFramed(Message& m);
  bool NeedsSnapshot(const Message& m) const;  // the payload must be copied to be checksummed
  void NoteWrite();  // a batch went on the socket: coalescing's clock and count
  void Take(const PostQueue::Posted& posted);
  // RFC 7306 (rdmap_extensions.cc): posted Work of the extensions, or the Atomic Response to
  // `read`, becoming the message to frame, and their headers.
  void TakeWriteImmediate(Message& m, const PostQueue::Posted& posted);
  void TakeAtomicRequest(Message& m, const Work& work);
  void TakeAtomicResponse(Message& m, const InboundRead& read);
  bool PlanExtension(const Message& m, wire::FpduHeader& header) const;

  Connection& c_;
  TxState state_ = TxState::kOpen;
  TxBatch batch_;
  Message message_;
  // Completion bookkeeping: the first written_sent_ of written_[0..written_count_) are on the
  // socket (their batch was written whole); the rest were framed into the batch still being
  // written and must not complete yet (their inline copy is still referenced).
  std::vector<Written> written_;
  std::size_t written_count_ = 0;
  std::size_t written_sent_ = 0;
  bool owe_rtr_ = false;
  bool from_post_ = false;  // Pump runs inside Post: events wait for the next poll
  int failed_errno_ = 0;    // TxState::kFailed: why
  std::uint64_t last_write_ns_ = 0;        // when the last batch went on the socket
  std::uint8_t writes_without_read_ = 0;   // batches written since the last read (counted to 2)
  std::uint32_t read_request_msn_ = 1;
  std::uint32_t atomic_msn_ = 1;  // our next message on the atomic queue (requests and responses)
  std::uint32_t next_sink_stag_ = 1;  // Read sink STags and atomic request identifiers
};

}  // namespace softdat::transport::tcp
