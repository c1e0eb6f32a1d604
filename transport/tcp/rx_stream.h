// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The receive half of one TCP connection: reads the socket into a pooled receive block, checks
// each FPDU's header (framing, version, queue, MSN, message offset, STag and bounds) before any
// of it is placed, and places it: a Send into the receive buffer core hands out when its first
// FPDU arrives (srq/ decides which), an RDMA Write or Read Response where the STag says, a Read
// Request into the connection's inbound Reads for the transmit stream to answer (the RFC 7306
// messages: rdmap_extensions.cc). A large FPDU (8 KiB or more still to come) has its payload read
// straight into its destination where the CRC rule allows (always without CRC; with CRC only
// where nobody looks before the completion: a receive
// buffer, our Read's sink, checksummed as it lands). A Send with no buffer to take holds the
// stream (RxState::kHeld: TCP back-pressure on this connection only) until the consumer posts one
// or the RNR timeout breaks the connection; while held the socket is watched for the peer's end.
//
// State: RxState (connection_state.h), changed only through Enter(event). Owned by the progress
// context: every member is used under the connection's IoLock, except buffers_posted_, the
// consumer threads' note that a receive buffer came (read and cleared by the progress context).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/endpoint.h"
#include "transport/tcp/connection_state.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {

class Connection;

class RxStream {
 public:
  // A pooled block of received bytes: room for a whole FPDU and more, so one recv takes every
  // small FPDU that arrived.
  static constexpr std::size_t kBlockSize = 128 * 1024;

  explicit RxStream(Connection& connection);
  ~RxStream();  // gives the block back
  RxStream(const RxStream&) = delete;
  RxStream& operator=(const RxStream&) = delete;

  RxState state() const { return state_; }
  bool held() const { return state_ == RxState::kHeld; }
  // Reads and places until the socket is drained, the stream held or the connection ended, then
  // gives the block back if nothing is left half-received (an idle connection holds none).
  void Read();
  // How many recv calls returned bytes: a poll that moved nothing changed nothing.
  std::uint64_t reads() const { return reads_; }
  // Consumer thread: a receive buffer was posted where this connection takes them from.
  bool NoteBuffersPosted() { return !buffers_posted_.exchange(true, std::memory_order_acq_rel); }
  bool buffers_posted() const { return buffers_posted_.load(std::memory_order_acquire); }
  // Progress context, for the note above: a held stream goes on reading.
  void ResumeIfPosted();
  // Held, and the peer closed its side (a FIN, no reset): the messages it sent before are whole in
  // the socket, and a graceful peer counts them delivered (its Sends completed as they were
  // written). They wait for receive buffers until kCloseLinger after the first FIN seen, then the
  // connection breaks.
  void HoldAfterPeerClosed();
  // The connection ended: nothing more is read; the block goes back once `release` runs (a
  // reject's private data lies in it until OnEnded has copied it).
  void End();
  void ReleaseBlock();

  // The setup's window on the bytes received (the MPA Reply is read through the block).
  std::span<const std::uint8_t> buffered() const { return {block_ + start_, end_ - start_}; }
  void Consume(std::size_t bytes) { start_ += bytes; }
  // The Send that would have taken a buffer next (for log lines).
  std::uint32_t expected_msn() const { return expected_msn_; }

 private:
  // Where an FPDU's payload goes, decided (and checked) before any of it is placed.
  struct Placement {
    std::uint8_t* contiguous = nullptr;  // RDMA Write: the resolved target
    std::span<const Segment> segments;   // Send, Read Response: scattered from the cursor
    std::uint32_t* segment = nullptr;
    std::uint32_t* segment_offset = nullptr;
  };
  // The Send message being received.
  struct Message {
    bool active = false;
    std::uint32_t msn = 0;
    std::uint64_t received = 0;
    RecvTarget target;
    std::uint32_t segment = 0;
    std::uint32_t segment_offset = 0;
  };
  // A large FPDU whose payload is read from the socket straight into its destination
  // (RxState::kDirectPayload, then kDirectTrailer).
  struct Direct {
    std::uint32_t crc = 0;  // with CRC: over the header and what has landed so far
    wire::FpduHeader header;
    std::uint32_t length = 0;  // payload bytes
    std::uint32_t placed = 0;
    std::size_t trailer = 0;   // pad and CRC bytes after the payload
    Placement placement;
  };
  enum class Frame : std::uint8_t { kDone, kNeedMore, kHeld, kEnded };

  void Enter(RxEvent event);
  bool ended() const;  // the connection ended meanwhile (a report may end it)

  // Reading (rx_stream.cc).
  void ReadAvailable();
  bool HoldBlock();  // a full-size block, keeping what is buffered; false: no memory
  void Shrink();     // held for a buffer: a small remainder moves to a small block
  void ArmRead();    // the socket has no more: wait for it (the PollSet, or an Asio wait)
  bool RetryRecv(ssize_t n);  // recv gave n <= 0: true to try again, false when handled
  bool ReadDirect();          // false when the loop must stop (would block, or ended)
  Frame ProcessFrame();
  Frame StartDirect(const std::uint8_t* at, std::size_t available, std::size_t header_size, std::size_t total);
  Frame FinishDirect();
  bool DirectAllowed(wire::Opcode opcode) const;  // may this opcode's payload land as it arrives?

  // Placing (rx_stream_place.cc).
  Frame BeginPayload(const wire::FpduHeader& header, std::uint32_t length, Placement& out);
  Frame BeginSend(const wire::FpduHeader& header, std::uint32_t length, Placement& out);
  Frame BeginWrite(const wire::FpduHeader& header, std::uint32_t length, Placement& out);
  Frame BeginReadResponse(const wire::FpduHeader& header, std::uint32_t length, Placement& out);
  Frame FinishPayload(const wire::FpduHeader& header, std::uint32_t length);
  Frame OnReadRequest(const wire::FpduHeader& header, const std::uint8_t* body);
  Frame OnTerminate(const std::uint8_t* payload, std::uint32_t length);
  // A message on the Send queue (a Send's first FPDU, an Immediate Data message) takes its
  // receive buffer: kDone with `target`, kHeld (none yet), or the connection failed.
  Frame AcquireFor(const wire::FpduHeader& header, RecvTarget& target);
  Frame RefuseRemote(RemoteCheck check, const char* what);
  Frame Fail(wire::TerminateCode code);  // Terminate, then end the connection as broken
  void Hold();                           // a Send found no buffer
  void StartRnrTimer();  // the RNR timeout, or what is left of the close linger
  void ArmRnrTimer(std::chrono::steady_clock::time_point until);
  void OnPeerClosed();

  // RFC 7306 (rdmap_extensions.cc): an Immediate Data message (it completes the next receive
  // buffer with the last RDMA Write's length), Atomic Requests (done on arrival) and Responses.
  Frame OnImmediate(const wire::FpduHeader& header, const std::uint8_t* body, std::uint32_t length);
  Frame OnAtomicRequest(const wire::FpduHeader& header, const std::uint8_t* body, std::uint32_t length);
  Frame OnAtomicResponse(const wire::FpduHeader& header, const std::uint8_t* body, std::uint32_t length);
  // Refused (Terminate; false) unless it is the next message of the peer's atomic queue, whole,
  // with nothing after its header.
  bool AtomicHeaderOk(const wire::FpduHeader& header, std::uint32_t length, const char* what);

  Connection& c_;
  RxState state_ = RxState::kReading;
  std::atomic<bool> buffers_posted_{false};
  std::uint8_t* block_ = nullptr;  // a pooled block while bytes are half-received
  bool block_small_ = false;       // block_ is from the rx_held pool (Shrink), not the rx pool
  std::size_t start_ = 0;
  std::size_t end_ = 0;
  Message message_;
  Direct direct_;
  bool large_stream_ = false;  // the last payload FPDU was large: read headers in small pieces
  bool read_waiting_ = false;  // not in a PollSet: an Asio wait for readability is armed
  std::uint64_t reads_ = 0;
  std::uint32_t expected_msn_ = 1;
  std::uint32_t expected_read_msn_ = 1;
  std::uint32_t expected_atomic_msn_ = 1;
  // The RDMA Write being received, and the length of the last one whole: an Immediate Data message
  // right after a Write completes with that length (an RDMA Write with immediate data).
  std::uint64_t write_bytes_ = 0;
  std::uint32_t last_write_length_ = 0;
  boost::asio::steady_timer rnr_timer_;
  bool rnr_armed_ = false;
  std::uint32_t rnr_generation_ = 0;
  // Set by HoldAfterPeerClosed (the peer closed its side): the waiting messages' last moment.
  std::chrono::steady_clock::time_point hold_until_{};
  bool peer_closed() const { return hold_until_ != std::chrono::steady_clock::time_point{}; }
};

}  // namespace softdat::transport::tcp
