// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The engine of one same-host connection over shared memory: what a TCP connection's FPDU
// transmission and reception do, on two rings (ring.h) and cross-memory attach (cma.h), with the
// contract of transport/endpoint.h. The transport creates it from a finished handshake
// (handshake.h) and drives it:
//
//   Post, RecvBuffersAvailable, Disconnect   consumer threads, any time (endpoint.h's contract)
//   Poll                                     any thread (a consumer spinning in an EVD wait, or the
//                                            progress thread): moves records and reports events;
//                                            a few loads when there is nothing to do
//   OnSocketReadable                         the poll set found socket_fd() readable: a doorbell,
//                                            the peer's close notice, or its end (EOF)
//   HasWork, deadline_ns                     before a progress thread sleeps (see below)
//   Detach                                   the endpoint goes: no event after it returns
//
// Events (OnEstablished first, at the first Poll; then completions; OnEnded once) come only from
// Poll and OnSocketReadable, one at a time, with the connection's io lock held; what they made
// ready is delivered (EndpointEvents::Deliver) after the lock is released. Post never reports
// an event: what it wrote completes at the next Poll, before anything that Poll reads.
//
// Sleeping. A progress thread that found nothing to do for a while calls
// KeyTable::BeginSleep() (its IA's table: peers then ring doorbells), then HasWork() of every
// connection; if none has work it waits in epoll on their sockets (and its kick descriptor) until
// the earliest deadline_ns(), then EndSleep(). A peer that published a record before it could see
// the odd epoch is found by HasWork; one that published after rings the doorbell.
//
// Data path (README.md has the rules):
//  - Send: up to pull_threshold bytes (or when the peer cannot attach to us) as records in the
//    ring, completed when written; larger ones as one kSendPull record naming our memory, which
//    the receiver copies with process_vm_readv straight into its receive buffer, completed when
//    consumed. Nothing follows a pull record until it is consumed; if the receiver's kernel
//    refused the pull it says so and the bytes follow through the ring.
//  - RDMA Write and Read: when we can attach to the peer, one-sided (the target's CPU is not
//    involved) once every earlier record of ours is consumed (placement order); else records
//    the target places after checking the key itself (EndpointEvents::ResolveRemote). A short
//    Write goes through the ring also while the target's own thread reads its rings (RingWriteNow).
//  - A Send with no receive buffer stays in the ring (AcquireRecv said kNotReady): the sender
//    runs out of room and waits, until RecvBuffersAvailable or the RNR timeout.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/endpoint.h"
#include "transport/shm/handshake.h"
#include "transport/shm/key_table.h"
#include "transport/shm/ring.h"
#include "transport/shm/segment_copy.h"

namespace softdat::transport::shm {

struct ConnectionOptions {
  std::uint32_t rnr_timeout_ms = 0;         // 0: a Send waits for a receive buffer forever
  std::uint32_t pull_threshold = 64 * 1024;  // Sends this long and more are pulled, when the peer can
  std::uint32_t close_timeout_ms = 3000;    // a graceful disconnect waits this long for the peer
  std::chrono::nanoseconds fence_bound = std::chrono::seconds(2);  // an end waits this long for the peer's access
  std::uint32_t ready_timeout_ms = 10000;   // a passive connection waits this long for the peer's Ready
};

class Connection;

// Tests of the transports that drive this engine (transport/tcp/test_seams.h): its io lock, held
// as a consumer thread in Post holds it, to make another poller meet it deterministically.
struct ConnectionTestAccess {
  static softdat::Mutex& IoMutex(Connection& connection);
  static std::atomic<bool>& KickPending(Connection& connection);
};

// How a connection asks its transport for a Poll soon (a note left by a consumer thread that
// could not act itself). Any thread; must not call back into the connection.
class Kicker {
 public:
  virtual void Kick(Connection& connection) = 0;
  // For a note that only completions wait on (a consumer's Post completed Work): true when the
  // kicker left it for the next poll instead, nobody being able to learn of it without calling in;
  // false asks for a Kick.
  virtual bool Defer(Connection& connection) {
    (void)connection;
    return false;
  }

 protected:
  ~Kicker() = default;
};

class Connection final : private AccessWatch {
 public:
  friend struct ConnectionTestAccess;
  struct Done {
    std::uint64_t id;
    WorkStatus status;
    std::uint32_t length;
  };
  // The queues sized by the endpoint's max_send_work: the posted Works and their completions,
  // about 112 bytes a Work (a megabyte for a queue 10,000 deep, as stock dtestsrq asks). The
  // caller makes them in the consumer's own call (dat_ep_connect, dat_cr_accept), as the TCP path
  // makes its connection there. Made at the establishment they would cost the progress thread,
  // one connection after another, while the passive side counts its connection established from
  // its Accept on.
  struct Queues {
    std::vector<Work> posted;
    std::vector<Done> done;
  };
  static Queues MakeQueues(const EndpointConfig& config);

  // `table`: our IA's published keys (the peer's one-sided accesses are checked there; our
  // revocations wait for them); it must outlive the connection. `kicker` may be null when the
  // caller polls anyway (tests, benchmarks). `queues`: from MakeQueues(config); made here when
  // empty.
  Connection(Established&& established, const EndpointConfig& config, const ConnectionOptions& options,
             KeyTable& table, EndpointEvents* events, Kicker* kicker, Queues queues = {});
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Consumer threads (endpoint.h). Post never blocks, allocates or reports an event; core never
  // has more than max_send_work Works outstanding.
  Status Post(const Work& work);
  void RecvBuffersAvailable();
  void Disconnect(bool graceful);

  // Progress (any thread). True when something moved.
  bool Poll();
  // Poll for the kick this connection asked for (Kicker::Kick): the kick is taken first, so a
  // note left from now on kicks again even when this poll finds nothing to do.
  bool PollForKick();
  bool OnSocketReadable();
  // Whether Poll would find something to do now; lock-free. A sleeper calls it after BeginSleep.
  // `completions`: whether a note of completions alone counts. The progress thread about to sleep
  // while nobody waits says no: those wait for a consumer's poll (Kicker::Defer).
  bool HasWork(bool completions = true) const;
  // The monotonic time (ns) by which Poll must run again (an RNR or close timer); 0: none.
  std::uint64_t deadline_ns() const { return deadline_ns_.load(std::memory_order_relaxed); }
  // The descriptor for the poll set; after ended(), remove it (it stays readable: EOF). Once
  // socket_done() it has nothing more to say either (the peer's EOF was read while its last Sends
  // wait for receive buffers): remove it then, or it is reported again and again.
  int socket_fd() const { return socket_.get(); }
  bool socket_done() const { return peer_eof_.load(std::memory_order_acquire); }
  bool ended() const { return ended_.load(std::memory_order_acquire); }
  // The endpoint goes away: when this returns no event is running and none will run. Ends the
  // connection (abruptly) if it has not ended.
  void Detach();
  // After Detach, once socket_fd() left the poll set: closes the socket now rather than with the
  // last reference to the connection (the endpoint's descriptor goes when dat_ep_free returns).
  // socket_fd() is -1 from then on.
  void CloseSocket();

  // What the handshake found (for datinfo and log lines).
  bool attaches() const { return attach_; }
  bool peer_attaches() const { return peer_attaches_; }
  pid_t peer_pid() const { return peer_pid_; }

 private:
  enum class Phase : std::uint8_t { kEstablished, kClosing, kEnded };
  // Notes left for the next Poll (bits of notes_).
  enum Note : std::uint32_t {
    kNoteStart = 1,           // OnEstablished not yet reported
    kNoteRecvAvailable = 2,   // RecvBuffersAvailable
    kNoteGraceful = 4,        // Disconnect(true)
    kNoteAbrupt = 8,          // Disconnect(false)
    kNoteFenceTimeout = 16,   // the peer kept an access open past a revocation
    kNoteCompletions = 32,    // done_ holds completions to report
    kNoteFailure = 64,        // the pump failed the connection (failure_)
  };
  // kPartial: the record is only partly used (a pull copies a bounded piece per poll); it stays at
  // the head and the next poll goes on with it.
  enum class Rx : std::uint8_t { kDone, kHeld, kPartial, kEnded };

  // The message being written.
  // kImmediate: the Immediate record of an RDMA Write with immediate data, once its Write is placed;
  // kAtomic: an atomic request (always through the ring: the target executes it).
  enum class TxMode : std::uint8_t { kNone, kInline, kPull, kOneSided, kRingWrite, kReadRequest, kResend, kImmediate, kAtomic };
  struct TxMessage {
    // Every field, in place: a fresh TxMessage assigned over this one copied the Work twice, per
    // message (callgrind, an 8 B Send stream: NextWork 92 instructions a message, 54 in place).
    void Start(TxMode start_mode, const Work& start_work) {
      mode = start_mode;
      work = start_work;
      msn = 0;
      offset = 0;
      cursor = SegmentCursor{};
    }
    TxMode mode = TxMode::kNone;
    Work work;
    std::uint32_t msn = 0;
    std::uint64_t offset = 0;  // bytes written (or copied) so far
    SegmentCursor cursor;
  };
  // A Send we wrote as a pull record, not yet consumed by the peer.
  struct PullInFlight {
    bool active = false;
    std::uint64_t id = 0;
    std::uint32_t msn = 0;
    std::uint32_t length = 0;
    std::uint64_t end = 0;  // ring position after the record
    Work work;              // for a resend through the ring
  };
  // One of our RDMA Reads through the ring whose response has not fully arrived.
  struct RingRead {
    Work work;
    std::uint32_t msn = 0;
    std::uint64_t received = 0;
    SegmentCursor cursor;
  };
  // A Read Request or atomic of the peer's, waiting for its response to be written.
  struct Response {
    const std::uint8_t* source = nullptr;
    std::uint32_t length = 0;
    std::uint32_t sent = 0;
    std::uint32_t msn = 0;
    bool atomic = false;
    std::uint64_t original = 0;  // an atomic's: the value before it
  };
  // The Send being received.
  // StartMessage resets every field but pull_from, one by one: a field added here is reset there.
  struct RxMessage {
    bool active = false;
    bool awaiting_resend = false;  // its pull was refused: the bytes come through the ring
    bool pulling = false;          // a pulled Send, copied a piece per poll from pull_from
    std::uint32_t msn = 0;
    std::uint32_t total = 0;
    std::uint32_t received = 0;
    RecvTarget target;
    SegmentCursor cursor;
    // The pull record's pieces, copied once when it started (the peer may change the ring).
    std::uint16_t pull_count = 0;
    Segment pull_from[kMaxPullSegments];
  };

  // AccessWatch: the peer's access word, for our table's revocations.
  const std::uint64_t* access_word() const override { return &peer_control_->access; }
  void OnFenceTimeout() override;

  void Note(std::uint32_t bits);
  void NoteCompletions();  // Note(kNoteCompletions), kicked only if the kicker cannot Defer it
  void Kick();
  bool PollLocked();  // the body of Poll and OnSocketReadable, io lock held
  void UnlockAndDeliver();
  void ReportCompletions();
  void ActOnNotes(std::uint32_t notes);
  void CheckDeadlines();
  void UpdateDeadline();
  void MaybeFinishClose();
  void End(ConnectionEnd why);
  // Sends a close notice (best effort) so the peer knows how we ended.
  void SendClose(CloseReason reason, std::uint32_t detail);
  // A protocol error or a refused access: the close notice says why (kTerminated, the check, and
  // kReadRefused when it was the peer's Read Request), then the connection ends broken.
  static constexpr std::uint32_t kReadRefused = 0x100;
  Rx Fail(const char* why, RemoteCheck check = RemoteCheck::kOk, std::uint32_t flags = 0);
  void MaybeRing();   // after publishing records or consumption: ring the peer's doorbell if it sleeps
  // Doorbells, the peer's Ready, the close notice, EOF. A doorbell read renews our IA's sleep
  // (KeyTable::RenewSleep) before the caller looks at the rings.
  void DrainSocket();
  void ReadSocket(bool& doorbell);  // DrainSocket's reads; `doorbell` set when one was read

  // Transmission (connection_tx.cc), io lock held.
  bool PumpTx();      // true when it wrote or completed something
  // kDone: the unit (message, response) is written; kIdle: nothing is posted; kMore: the budget
  // ran out in it; kRoom: no room until the peer consumes; kInbound: it waits for records from
  // the peer; kFailed: failure_ says why.
  enum class Pump : std::uint8_t { kDone, kIdle, kMore, kRoom, kInbound, kFailed };
  Pump NextWork();    // starts the oldest posted Work: kDone, or why none may start
  bool SendAtOnce(const Work& work);  // Post's short Send on an idle connection, if it may
  bool Pulled(const Work& work) const;  // a Send the peer pulls (one record naming our memory)
  bool RingWriteNow(const Work& work) const;  // an RDMA Write we could attach for goes through the ring
  Pump PumpMessage();
  Pump PumpRecords(Opcode opcode, std::uint8_t flags, std::uint32_t key, std::uint64_t base);
  Pump PumpPull();
  Pump PumpOneSided();
  Pump PumpReadRequest();
  Pump PumpImmediate();
  Pump PumpAtomicRequest();
  Pump PumpResponse();
  // The Write of a Write with immediate data is placed: its Immediate record follows.
  Pump WriteDone();
  bool CheckPull();   // the pull in flight was consumed: complete it or resend it
  void Complete(std::uint64_t id, WorkStatus status, std::uint32_t length);
  void TxFailure(RemoteCheck check, std::uint64_t id, WorkStatus status);
  bool TxIdle() const;
  // Whether the pump has anything to do: posted Work, a message or pull under way, a response.
  bool TxPending() const;

  // Reception (connection_rx.cc), io lock held.
  bool ReadRecords();  // true when a record was consumed
  Rx OnSend(const RecordHeader& header, const std::uint8_t* payload);
  Rx OnPull(const RecordHeader& header, const std::uint8_t* payload);
  Rx OnWrite(const RecordHeader& header, const std::uint8_t* payload);
  Rx OnReadRequest(const RecordHeader& header);
  Rx OnReadResponse(const RecordHeader& header, const std::uint8_t* payload);
  Rx OnImmediate(const RecordHeader& header);
  Rx OnAtomicRequest(const RecordHeader& header, const std::uint8_t* payload);
  Rx OnAtomicResponse(const RecordHeader& header, const std::uint8_t* payload);
  // AcquireRecv for a new Send (or Immediate record) that places `places` bytes in its buffer.
  Rx StartMessage(const RecordHeader& header, std::uint32_t places);
  // A Send of at most kMaxWholeReceive bytes in one record: core takes its buffer, copies it in
  // and completes it in one step (EndpointEvents::ReceiveWhole).
  Rx ReceiveWhole(const RecordHeader& header, const std::uint8_t* payload);
  // Small enough to be copied under the receive queue's lock, which dat_ep_post_recv takes too.
  static constexpr std::uint32_t kMaxWholeReceive = 4096;
  void ArmRnr();

  const EndpointConfig config_;
  const ConnectionOptions options_;
  KeyTable& table_;
  Kicker* const kicker_;
  const int side_;
  const pid_t peer_pid_;
  const Binding peer_binding_;
  const std::uint32_t ord_limit_;  // our Reads through the ring outstanding at once

  // Shared memory and the socket.
  UniqueFd socket_;
  Mapping segment_;
  std::unique_ptr<KeyTableView> peer_table_;
  std::unique_ptr<ActivityView> peer_activity_;  // null: the peer looks at us in turn only
  const std::uint32_t peer_activity_slot_;
  SideControl* my_control_ = nullptr;
  SideControl* peer_control_ = nullptr;
  RingWriter writer_;
  RingReader reader_;
  bool attach_ = false;         // we attach to the peer (cleared when the kernel refuses)
  bool peer_attaches_ = false;  // the peer may pull our Sends (cleared when it refused one)
  // Passive side: until the peer's Ready came, the time by which it must (under io_mutex_); 0
  // once it came, and on the active side.
  std::uint64_t ready_deadline_ns_ = 0;
  PrivateData peer_private_data_;

  // Consumer side: posted Work waiting for the pump (single producer: Post calls never overlap,
  // endpoint.h; single consumer under io_mutex_).
  std::vector<Work> posted_;
  std::atomic<std::uint64_t> post_tail_{0};   // written by Post
  std::atomic<std::uint64_t> post_head_{0};   // written under io_mutex_
  std::atomic<std::uint32_t> notes_{0};
  std::atomic<bool> kick_pending_{false};
  std::atomic<bool> ended_{false};
  // The peer's EOF was read (written under io_mutex_; also read by the poll set's owner).
  std::atomic<bool> peer_eof_{false};
  // Mirrors for HasWork (written under io_mutex_).
  std::atomic<const std::uint32_t*> head_word_{nullptr};
  std::atomic<bool> held_{false};         // a Send waits for a receive buffer
  // What the pump waits for: nothing (it went idle), more budget, the peer's consumption, or
  // records from the peer (a fence behind our Reads, the ORD limit).
  enum class TxWait : std::uint8_t { kIdle, kMore, kConsumption, kInbound };
  std::atomic<TxWait> tx_wait_{TxWait::kIdle};
  std::atomic<std::uint64_t> consumed_seen_{0};
  std::atomic<std::uint64_t> deadline_ns_{0};

  // Progress context, under io_mutex_.
  softdat::Mutex io_mutex_;
  bool detached_ = false;
  EndpointEvents* events_;
  bool report_pending_ = false;
  std::atomic<int> delivering_{0};
  Phase phase_ = Phase::kEstablished;
  std::int64_t budget_ = 0;  // bytes the current pump may still move
  bool close_sent_ = false;
  bool peer_closed_ = false;  // its close notice came (graceful or abrupt)
  bool peer_graceful_ = false;  // ... and it was graceful: its completed Sends count as delivered
  std::uint64_t close_deadline_ns_ = 0;
  // The peer closed gracefully while its Sends wait for receive buffers: the last moment they may
  // take one (close_timeout_ms after its EOF), then the connection breaks.
  std::uint64_t hold_deadline_ns_ = 0;
  std::uint64_t rnr_deadline_ns_ = 0;
  std::uint64_t rung_epoch_ = 0;
  // A failure the pump found (it may run inside Post, where no event may be reported).
  struct Failure {
    bool set = false;
    RemoteCheck check = RemoteCheck::kOk;
  } failure_;

  std::vector<Done> done_;  // ring of completions to report
  // An index of a queue of `size` below 2 * size (a head plus a count, or plus one) brought
  // back into it: no division, which costs tens of cycles where this runs per message.
  static std::uint32_t Wrap(std::uint32_t index, std::size_t size) {
    return index >= size ? static_cast<std::uint32_t>(index - size) : index;
  }
  std::uint32_t done_head_ = 0;
  std::uint32_t done_count_ = 0;

  TxMessage tx_;
  PullInFlight pull_;
  std::uint32_t send_msn_ = 1;
  std::uint32_t read_msn_ = 1;
  std::vector<RingRead> reads_;
  std::uint32_t reads_head_ = 0;
  std::uint32_t reads_count_ = 0;
  std::vector<Response> responses_;
  std::uint32_t responses_head_ = 0;
  std::uint32_t responses_count_ = 0;

  RxMessage rx_;
  std::uint32_t expected_msn_ = 1;
  std::uint32_t expected_read_msn_ = 1;
};

}  // namespace softdat::transport::shm
