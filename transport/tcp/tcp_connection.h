// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One iWARP-over-TCP connection: MPA setup (connection_setup.cc), FPDU transmission
// (connection_tx.cc) and reception with SRQ-style buffer acquisition on message arrival
// (connection_rx.cc), and the RFC 7306 extensions both ways (connection_ext.cc: RDMA Write with
// immediate data, atomics). The TcpEndpoint a core EP owns forwards to it.
//
// Threads. Everything that touches the socket, the staging buffers, the consumer's memory or the
// EndpointEvents runs with io_mutex_ held, and first checks detached_. Who holds it:
//  - a poller: whoever drives the transport's progress now — a consumer thread spinning in an
//    EVD wait or dequeue (TcpTransport::Progress), or the progress thread — finds the connection
//    readable in the transport's PollSet (or queued in its KickQueue) and runs PollIo / OnKick;
//  - Asio handlers (connection setup, timers, a write that waits for socket room);
//  - Post, from the consumer's thread, but only by try_lock: when it gets the lock and the
//    connection can send, it frames and writes the posted Work at once (the latency path: no
//    hand-off); otherwise it leaves the Work in the ring and kicks. Post never reports an event
//    (core holds its EP locks around Post): what it wrote completes at the next poll.
// RecvBuffersAvailable and Disconnect leave a note (an atomic flag) and kick. Detach (the
// endpoint's destructor) takes io_mutex_ once, so when it returns no event is running and none
// will run; the Connection itself lives on (shared_ptr) until its last holder lets go.
#pragma once

#include <netinet/in.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/endpoint.h"
#include "transport/tcp/block_pool.h"
#include "transport/tcp/inline_ring.h"
#include "transport/tcp/tx_batch.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {

namespace asio = boost::asio;

class KickQueue;
class PollSet;

// What the transport's IA options say about every connection.
struct ConnectionOptions {
  KickQueue* kicks = nullptr;       // how consumer threads wake the progress context
  PollSet* poll_set = nullptr;      // where the connected socket waits to be read
  std::shared_ptr<ConnectionBuffers> buffers;  // the pools of receive, send and inline blocks
  sockaddr_in local{};              // the IA address: active connections bind to it
  std::uint32_t rnr_timeout_ms = 0;  // 0: a message waits for a receive buffer forever
  std::uint32_t timeout_ms = 0;      // TCP_USER_TIMEOUT and keepalive; 0: the kernel's limits
  std::uint64_t coalesce_ns = 16'000;  // a send-only stream's coalescing window (see Post); 0: none
  bool mpa_crc = true;
  std::uint32_t max_private_data = 0;
  std::string congestion = "auto";  // the IA's congestion= (congestion.h)
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // A pooled block of received bytes: room for a whole FPDU and more, so one recv takes every
  // small FPDU that arrived.
  static constexpr std::size_t kRxBlock = 128 * 1024;

  Connection(asio::io_context& io, const ConnectionOptions& options, const EndpointConfig& config,
             EndpointEvents* events);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Consumer threads (see Endpoint in transport/endpoint.h for each contract).
  Status Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us);
  // Passive side: takes over `socket`, whose MPA Request `request` a listener read.
  Status Accept(asio::ip::tcp::socket socket, const wire::MpaFrame& request,
                std::span<const std::uint8_t> private_data);
  // Tests and fuzzers only (adopted_socket.cc): the active side over `fd`, a stream socket that is
  // already connected (one end of a socketpair): the MPA Request goes out at once, as after a
  // TCP connect. Takes `fd` over.
  Status ConnectOver(int fd, std::span<const std::uint8_t> private_data);
  Status Post(const Work& work);
  void RecvBuffersAvailable();
  void Disconnect(bool graceful);
  // The endpoint goes away: no event runs after this returns.
  void Detach();
  // A poller found the socket readable (or polls its only connection): reads and places what
  // arrived, reports completions, sends what is queued. `wait` takes the lock even when another
  // thread holds it (the progress thread); otherwise a busy connection is left to its holder.
  // True when bytes arrived or the connection ended.
  bool PollIo(bool wait);
  sockaddr_in local_address() const;
  sockaddr_in remote_address() const;
  // "LOCAL -> PEER" (addresses and ports) for log lines: what softdat(7) says a connection's
  // line names. The peer is known from the connect request on, the local end once connected
  // (before that: "-> PEER").
  std::array<char, 64> Describe() const;

 private:
  friend class KickQueue;  // runs OnKick
  enum class Phase : std::uint8_t {
    kIdle,
    kConnecting,   // active: TCP connect in progress
    kAwaitReply,   // active: MPA Request sent
    kAwaitRtr,     // passive: MPA Reply sent, waiting for the peer's ready-to-receive FPDU
    kEstablished,
    kClosing,      // graceful disconnect: draining, then FIN, then waiting for the peer's FIN
    kEnded,
  };

  // A message being turned into FPDUs. RFC 7306: the RDMA Write of an RDMA Write with immediate
  // data (framed as kWrite; its Immediate Data message follows: header only), an Atomic Request
  // and an Atomic Response. FinishFramed looks kinds up in tables (connection_tx.cc): keep the
  // order.
  enum class TxKind : std::uint8_t {
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
  // By TxKind, once a message's last byte is framed: whether it completes when written (a Send, a
  // Write, the Immediate Data message that ends a Write with immediate data), and what is framed
  // next (after the Write of a Write with immediate data, its Immediate Data message).
  static constexpr bool kCompletesWhenWritten[] = {false, true, true, false, false, false, false, true, false, false};
  static constexpr TxKind kFramedNext[] = {TxKind::kNone, TxKind::kNone, TxKind::kNone,      TxKind::kNone,
                                           TxKind::kNone, TxKind::kNone, TxKind::kImmediate, TxKind::kNone,
                                           TxKind::kNone, TxKind::kNone};
  static_assert(std::size(kCompletesWhenWritten) == static_cast<std::size_t>(TxKind::kAtomicResponse) + 1);
  static_assert(std::size(kFramedNext) == std::size(kCompletesWhenWritten));
  struct TxMessage {
    TxKind kind = TxKind::kNone;
    Work work;                            // kSend, kWrite, kReadRequest
    const std::uint8_t* source = nullptr;  // kReadResponse: contiguous source memory
    std::uint64_t length = 0;
    std::uint64_t offset = 0;              // bytes already framed
    std::uint32_t segment = 0;             // gather cursor into work.local
    std::uint32_t segment_offset = 0;
    std::uint32_t msn = 0;
    std::uint32_t stag = 0;                // tagged: sink STag; Send with Invalidate: its STag
    std::uint64_t tagged_offset = 0;
    wire::ReadRequestBody read;            // kReadRequest
    wire::AtomicRequestBody atomic;        // kAtomicRequest
    wire::AtomicResponseBody atomic_response;  // kAtomicResponse
    Segment inline_segment;                // work.local when the payload was copied at post
    std::uint32_t inline_charged = 0;      // its InlineRing charge, 0 when not inline
    bool framed = false;                   // inline_segment is the whole FPDU (FrameAtPost)
  };
  // A posted Work and, for a small Send or Write, where its payload was copied at post time (for
  // a small Send on an established connection, the whole FPDU: FrameAtPost).
  struct PostedWork {
    Work work;
    Segment inline_segment;
    std::uint32_t inline_charged = 0;
    std::uint32_t msn = 0;  // a Send's: Sends are framed in post order, so it is known at post
    bool framed = false;
  };
  // A Read Request the peer sent us, waiting for its response to be framed; or an Atomic Request,
  // done on arrival, whose response waits its turn (responses go in request order, RFC 7306).
  struct ReadResponse {
    const std::uint8_t* source = nullptr;
    std::uint32_t length = 0;
    std::uint32_t sink_stag = 0;
    std::uint64_t sink_offset = 0;
    bool atomic = false;
    wire::AtomicResponseBody atomic_response;
  };
  // One of our RDMA Reads or atomics whose response has not fully arrived (they share the ORD).
  struct OutstandingRead {
    Work work;
    std::uint32_t sink_stag = 0;  // an atomic: its request identifier
    std::uint64_t received = 0;
    std::uint32_t segment = 0;
    std::uint32_t segment_offset = 0;
  };
  // The Send message being received.
  struct RxMessage {
    bool active = false;
    std::uint32_t msn = 0;
    std::uint64_t received = 0;
    RecvTarget target;
    std::uint32_t segment = 0;
    std::uint32_t segment_offset = 0;
  };
  enum class Frame : std::uint8_t { kDone, kNeedMore, kHeld, kEnded };
  // Where an FPDU's payload goes, decided (and checked) before any of it is placed.
  struct Placement {
    std::uint8_t* contiguous = nullptr;  // RDMA Write: the resolved target
    std::span<const Segment> segments;   // Send, Read Response: scattered from the cursor
    std::uint32_t* segment = nullptr;
    std::uint32_t* segment_offset = nullptr;
  };
  // A large FPDU whose payload is read from the socket straight into its destination (see
  // Direct in connection_rx.cc).
  struct DirectRx {
    bool active = false;
    bool payload_done = false;
    std::uint32_t crc = 0;     // with CRC: over the header and what has landed so far
    wire::FpduHeader header;
    std::uint32_t length = 0;  // payload bytes
    std::uint32_t placed = 0;
    std::size_t trailer = 0;   // pad and CRC bytes after the payload
    Placement placement;
  };

  // io_mutex_, taken for a section of the progress context; on release, what the section
  // reported to the EndpointEvents is delivered (EndpointEvents::Deliver) with no lock held.
  class IoLock {
   public:
    explicit IoLock(Connection& connection, bool wait = true) : connection_(connection) {
      if (wait) {
        connection_.io_mutex_.lock();
        owns_ = true;
      } else {
        owns_ = connection_.io_mutex_.try_lock();
      }
    }
    ~IoLock() {
      if (owns_) connection_.UnlockAndDeliver();
    }
    IoLock(const IoLock&) = delete;
    IoLock& operator=(const IoLock&) = delete;
    bool owns_lock() const { return owns_; }

   private:
    Connection& connection_;
    bool owns_ = false;
  };
  void UnlockAndDeliver();

  // Setup (connection_setup.cc).
  void StartConnect(sockaddr_in remote, std::uint64_t timeout_us);
  void OnConnected(const boost::system::error_code& error);
  void StartAccept(wire::MpaFrame request);
  Frame ReadMpaReply();
  void Establish(std::span<const std::uint8_t> private_data);
  // Acts on what consumer threads left (a disconnect, buffers for a held message, Work to
  // send). False when a consumer's poll should leave it for later (coalescing).
  // `ia_last_write_ns`: the IA's last write when the consumer's drain began (see TxDue).
  bool OnKick(bool consumer, std::uint64_t ia_last_write_ns = 0);
  void Kick();  // any thread: OnKick runs soon, once however often this is called
  // Whether queued Work should be written now rather than coalesced with what follows: the
  // connection read since its last write or wrote only once (request-response traffic, an
  // occasional Send), or its last write, and `ia_last_write_ns` if given (when any connection of
  // the IA wrote), is older than the coalescing window (coalesce_us). Taking the IA's last write
  // into account lets a stream spread over many connections coalesce too (1,000 clients into
  // one server, a few Sends each in flight): each connection writes rarely, but while the IA as
  // a whole streams, what each connection queued waits for one sendmsg at a later poll.
  bool TxDue(std::uint64_t ia_last_write_ns = 0) const;
  // Two writes or more since the last read (and coalescing is on): a send-only stream.
  bool Streaming() const;
  void BeginClose();
  void MaybeFinishClose();
  void End(ConnectionEnd why, std::span<const std::uint8_t> private_data = {});
  void Terminate(wire::TerminateCode code);
  void CloseSocket();
  void RecordAddresses();
  void ApplySocketOptions();  // the socket is connected: no delay, non-blocking, the IA's timeout
  void ApplyCongestion();     // the IA's congestion= on the connected socket (after RecordAddresses)
  void StartPolling();   // the socket is connected: into the transport's PollSet
  void StopReading();    // a message waits for a receive buffer: the PollSet stops reporting us
  bool EndIfPeerGone();  // held, and reported: ends the connection if the peer did (true then)

  // Transmission (connection_tx.cc).
  void PumpTx();        // PumpBatches, then gives the send blocks back if all is written
  bool WriteFramedAtPost();  // Post: writes a lone framed Send at once; false when it may not
  bool TxIdle();        // nothing to frame, write or complete: PumpTx has nothing to do
  void PumpBatches();   // frames and writes up to kBatchesPerTurn batches
  void FailTx(int error);  // the connection cannot send: it ends (at the next poll if in Post)
  bool FlushTx();  // false when the socket is full (a write wait is armed) or the connection ended
  bool NextTxMessage();
  void FrameOne();
  bool ChunkFor(const TxMessage& m, std::uint32_t& chunk) const;
  bool PlanFpdu(const TxMessage& m, wire::FpduHeader& header, std::uint32_t& chunk) const;
  std::uint32_t AppendHeader(const TxMessage& m, const wire::FpduHeader& header);
  // What follows the untagged header of a Read Request or an RFC 7306 message.
  void EncodeBody(const TxMessage& m, std::uint8_t* body) const;
  std::uint32_t AppendPayload(TxMessage& m, std::uint32_t chunk, std::uint32_t crc);
  void AppendTrailer(std::size_t ulpdu, std::uint32_t crc);
  void FinishFramed(TxMessage& m);
  void CompleteWritten();
  void WriteRaw(const std::uint8_t* bytes, std::size_t length);
  void CopyInline(PostedWork& slot);  // consumer thread, post_mutex_ held
  void FrameAtPost(PostedWork& slot, bool crc);  // consumer thread, post_mutex_ held
  void SetCrc(bool crc);  // the MPA exchange decided: crc_, and Post may frame Sends (post_framing_)
  bool NeedsSnapshot(const TxMessage& m) const;  // the payload must be copied to be checksummed (Read Responses)

  // Reception (connection_rx.cc).
  void ReadLoop();       // ReadAvailable, then gives the receive block back if nothing is left
  void ReadAvailable();  // reads and processes until the socket is drained, held or ended
  bool HoldRxBlock();    // a full-size receive block, keeping what is buffered; false: no memory
  void ShrinkRx();       // held for a buffer: a small remainder moves to a small block
  void ReleaseRx();      // the receive block goes back (what it buffered is dropped)
  void ArmRead();
  Frame ProcessFrame();
  Frame StartDirect(const std::uint8_t* at, std::size_t available, std::size_t header_size, std::size_t total);
  Frame FinishDirect();
  bool ReadDirect();  // false when the loop must stop (would block, or ended)
  bool Direct(wire::Opcode opcode) const;  // may this opcode's payload land as it arrives?
  bool RetryRecv(ssize_t n);  // recv gave n <= 0: true to try again, false when handled
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

  // RFC 7306 (connection_ext.cc).
  Frame OnImmediate(const wire::FpduHeader& header, const std::uint8_t* body, std::uint32_t length);
  Frame OnAtomicRequest(const wire::FpduHeader& header, const std::uint8_t* body, std::uint32_t length);
  Frame OnAtomicResponse(const wire::FpduHeader& header, const std::uint8_t* body, std::uint32_t length);
  // An Atomic Request or Response arrived with this header: refused (Terminate) unless it is the
  // next message of the peer's atomic queue, whole, with nothing after its header.
  bool AtomicHeaderOk(const wire::FpduHeader& header, std::uint32_t length, const char* what);
  // Posted Work of the extensions becoming the message to frame (NextTxMessage).
  void BeginWriteImmediate(TxMessage& m, const PostedWork& slot);
  void BeginAtomicRequest(TxMessage& m, const Work& work);
  void BeginAtomicResponse(TxMessage& m, const ReadResponse& response);
  // Their headers (PlanFpdu); AppendHeader writes their bodies (EncodeBody).
  bool PlanExtension(const TxMessage& m, wire::FpduHeader& header) const;
  void OnPeerClosed();
  void StartRnrTimer();
  Frame RefuseRemote(RemoteCheck check, const char* what);
  Frame Fail(wire::TerminateCode code);  // Terminate, then end the connection as broken
  void PopRead();                        // the oldest outstanding Read is done

  asio::io_context& io_;
  const ConnectionOptions options_;
  const EndpointConfig config_;

  // Consumer side: posted Work waiting for the progress context.
  softdat::Mutex post_mutex_;
  std::vector<PostedWork> posted_;  // a ring of max_send_work slots
  InlineRing inline_;
  std::uint32_t posted_head_ = 0;
  // Written under post_mutex_; TxIdle reads it without (a Work it misses comes with a Kick).
  std::atomic<std::uint32_t> posted_count_{0};
  std::uint32_t send_msn_ = 1;  // the next Send's MSN
  // How Post may frame a small Send itself, published by SetCrc once the MPA exchange decided.
  enum class PostFraming : std::uint8_t { kNotYet, kWithCrc, kWithoutCrc };
  std::atomic<PostFraming> post_framing_{PostFraming::kNotYet};
  std::atomic<bool> kick_pending_{false};
  std::atomic<bool> recv_available_{false};
  std::atomic<int> disconnect_request_{0};  // 0 none, 1 graceful, 2 abrupt
  std::atomic<bool> started_{false};
  std::atomic<bool> ended_{false};

  // Progress context, under io_mutex_.
  softdat::Mutex io_mutex_;
  bool detached_ = false;
  EndpointEvents* events_;
  bool report_pending_ = false;  // an event was reported: IoLock delivers when it unlocks
  std::atomic<int> delivering_{0};  // deliveries running after their IoLock released io_mutex_
  Phase phase_ = Phase::kIdle;
  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;      // connect timeout, RTR wait, graceful close linger
  asio::steady_timer rnr_timer_;
  bool crc_ = true;
  bool read_waiting_ = false;
  bool write_waiting_ = false;
  bool polled_ = false;           // registered in the PollSet ...
  bool reading_ = false;          // ... and reported readable
  std::uint64_t poll_token_ = 0;
  bool in_post_ = false;          // framing from Post: events wait for the next poll
  std::uint64_t last_write_ns_ = 0;  // when the last batch went on the socket
  std::uint8_t writes_without_read_ = 0;  // batches written since the last read (counted to 2)
  std::uint64_t rx_reads_ = 0;     // recv calls that returned bytes
  bool tx_failed_ = false;        // a write from Post failed (errno tx_errno_)
  int tx_errno_ = 0;
  bool rx_held_ = false;          // a Send waits for a receive buffer
  bool rnr_armed_ = false;
  std::uint32_t rnr_generation_ = 0;
  bool fin_sent_ = false;
  std::uint32_t ord_ = 1;         // Reads we may have outstanding (ours, bounded by the peer's IRD)

  std::vector<std::uint8_t> private_data_;  // ours to send; the peer's after its MPA frame
  std::uint16_t peer_private_length_ = 0;

  TxBatch tx_{options_.buffers->frames, options_.buffers->staging, &options_.buffers->sendmsg_calls};
  TxMessage tx_message_;
  std::uint32_t read_request_msn_ = 1;
  std::uint32_t atomic_msn_ = 1;  // our next message on the atomic queue (requests and responses)
  std::uint32_t next_sink_stag_ = 1;
  std::vector<std::uint64_t> written_ids_;  // Sends and Writes whose last byte is in tx_
  std::vector<std::uint32_t> written_lengths_;
  std::vector<std::uint32_t> written_inline_;  // their InlineRing charges
  std::size_t written_count_ = 0;
  // The first written_sent_ of them are on the socket (their batch was written whole); the rest
  // were framed into the batch still being written and must not complete yet.
  std::size_t written_sent_ = 0;
  bool rtr_pending_ = false;
  // Responder to an initiator without P2P: no FPDU goes out before the initiator's first one
  // (RFC 5044 §7.1.2, rule 4; Linux siw drops a Reply that arrives with FPDU bytes behind it).
  bool awaiting_first_fpdu_ = false;

  std::vector<ReadResponse> responses_;  // ring of IRD slots
  std::uint32_t responses_head_ = 0;
  std::uint32_t responses_count_ = 0;
  std::vector<OutstandingRead> reads_;   // ring of ORD slots
  std::uint32_t reads_head_ = 0;
  std::uint32_t reads_count_ = 0;

  std::uint8_t* rx_ = nullptr;  // a pooled block while bytes are half-received
  bool rx_small_ = false;       // rx_ is from the rx_held pool (ShrinkRx), not the rx pool
  std::size_t rx_start_ = 0;
  std::size_t rx_end_ = 0;
  RxMessage rx_message_;
  DirectRx direct_;
  bool large_stream_ = false;  // the last payload FPDU was large: read headers in small pieces
  std::uint32_t expected_msn_ = 1;
  std::uint32_t expected_read_msn_ = 1;
  std::uint32_t expected_atomic_msn_ = 1;
  // The RDMA Write being received and the last one whole: an Immediate Data message right after a
  // Write completes with that Write's length (an RDMA Write with immediate data).
  std::uint64_t write_bytes_ = 0;
  std::uint32_t last_write_length_ = 0;

  mutable softdat::Mutex address_mutex_;
  sockaddr_in local_{};
  sockaddr_in remote_{};
};

}  // namespace softdat::transport::tcp
