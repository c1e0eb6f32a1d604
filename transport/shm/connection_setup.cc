// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A shared-memory connection's life: construction from a handshake, the notes consumer threads
// leave, Poll and the socket (doorbells, close notices, EOF), the idle check a sleeper makes,
// deadlines, graceful and abrupt ends, and Detach.
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "transport/names.h"
#include "transport/shm/shm_connection.h"
#include "transport/shm/tsan_sync.h"

namespace softdat::transport::shm {
namespace {

std::uint64_t NowNs() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::uint32_t AtLeastOne(std::uint32_t n) { return std::max<std::uint32_t>(n, 1); }

// The posted queue is indexed by a running count: a power of two takes a mask, not a division.
std::size_t PostedSize(const EndpointConfig& config) { return std::bit_ceil(AtLeastOne(config.max_send_work)); }

// `queues` as given when MakeQueues(config) made them, else made now.
Connection::Queues QueuesFor(const EndpointConfig& config, Connection::Queues&& queues) {
  if (queues.posted.size() == PostedSize(config) && queues.done.size() == queues.posted.size() + 1)
    return std::move(queues);
  return Connection::MakeQueues(config);
}

}  // namespace

Connection::Queues Connection::MakeQueues(const EndpointConfig& config) {
  Queues queues;
  queues.posted.resize(PostedSize(config));
  queues.done.resize(queues.posted.size() + 1);
  return queues;
}

Connection::Connection(Established&& established, const EndpointConfig& config, const ConnectionOptions& options,
                       KeyTable& table, EndpointEvents* events, Kicker* kicker, Queues queues)
    : config_(config),
      options_(options),
      table_(table),
      kicker_(kicker),
      side_(established.side),
      peer_pid_(established.peer_pid),
      peer_binding_(established.peer_binding),
      ord_limit_(AtLeastOne(std::min(config.max_rdma_read_out, established.peer_ird))),
      socket_(std::move(established.socket)),
      segment_(std::move(established.segment)),
      peer_table_(std::move(established.peer_table)),
      peer_activity_(std::move(established.peer_activity)),
      peer_activity_slot_(established.peer_activity_slot),
      attach_(established.attach),
      peer_attaches_(established.peer_attaches),
      events_(events),
      reads_(AtLeastOne(config.max_rdma_read_out)),
      responses_(AtLeastOne(config.max_rdma_read_in)) {
  Queues made = QueuesFor(config, std::move(queues));
  posted_ = std::move(made.posted);
  done_ = std::move(made.done);
  if (side_ == kActive) peer_private_data_ = established.peer_private_data;
  if (established.await_ready) ready_deadline_ns_ = NowNs() + std::uint64_t{options.ready_timeout_ms} * 1'000'000;
  const Geometry& g = established.geometry;
  auto* controls = reinterpret_cast<SideControl*>(segment_.data() + kControlOffset);
  my_control_ = &controls[side_];
  peer_control_ = &controls[1 - side_];
  // Ring r carries records from side r.
  const std::uint64_t nonce = LoadRelaxed(&reinterpret_cast<const SegmentHeader*>(segment_.data())->nonce);
  writer_.Attach(segment_.data() + RingOffset(g, side_), g.ring_bytes[side_], &peer_control_->consumed,
                 TsanRingSync(nonce, side_));
  reader_.Attach(segment_.data() + RingOffset(g, 1 - side_), g.ring_bytes[1 - side_], &my_control_->consumed,
                 TsanRingSync(nonce, 1 - side_));
  head_word_.store(reader_.SizeWord(), std::memory_order_relaxed);
  // Its first poll reports OnEstablished, unless its owner did before the Accept went out.
  notes_.store(established.reported ? 0u : kNoteStart, std::memory_order_release);
  table_.AddWatch(this);
  SOFTDAT_LOG(kInfo, "shm: connection with process %d: rings of %u and %u bytes; we %s attach to it, it %s attach to us",
              static_cast<int>(peer_pid_), g.ring_bytes[side_], g.ring_bytes[1 - side_], attach_ ? "can" : "cannot",
              peer_attaches_ ? "can" : "cannot");
}

Connection::~Connection() { Detach(); }

void Connection::Kick() {
  if (kicker_ == nullptr || kick_pending_.exchange(true)) return;
  kicker_->Kick(*this);
}

void Connection::Note(std::uint32_t bits) {
  // A note already left needs no second write (a stream of Posts leaves the same one each time).
  if ((notes_.load(std::memory_order_relaxed) & bits) != bits) notes_.fetch_or(bits, std::memory_order_release);
  Kick();
}

void Connection::NoteCompletions() {
  if ((notes_.load(std::memory_order_relaxed) & kNoteCompletions) == 0)
    notes_.fetch_or(kNoteCompletions, std::memory_order_release);
  // kick_pending_ stays as it was: a deferred note queued nothing, and a later Kick must push.
  if (kicker_ != nullptr && kicker_->Defer(*this)) return;
  Kick();
}

void Connection::RecvBuffersAvailable() {
  // Cheap when nothing waits: the note matters only to a held Send (held_ is set before core is
  // asked, so a buffer posted while it answers is not missed).
  if (!held_.load(std::memory_order_acquire)) return;
  Note(kNoteRecvAvailable);
}

void Connection::Disconnect(bool graceful) { Note(graceful ? kNoteGraceful : kNoteAbrupt); }

void Connection::OnFenceTimeout() { Note(kNoteFenceTimeout); }

bool Connection::HasWork(bool completions) const {
  if (const std::uint32_t notes = notes_.load(std::memory_order_acquire);
      notes != 0 && (completions || notes != kNoteCompletions))
    return true;
  if (ended_.load(std::memory_order_relaxed)) return false;
  if (!held_.load(std::memory_order_relaxed) && LoadAcquire(head_word_.load(std::memory_order_relaxed)) != 0) return true;
  switch (tx_wait_.load(std::memory_order_relaxed)) {
    case TxWait::kMore:
      return true;
    case TxWait::kConsumption:
      if (LoadAcquire(&peer_control_->consumed) != consumed_seen_.load(std::memory_order_relaxed)) return true;
      break;
    case TxWait::kInbound:
      break;  // the inbound check above covers it
    case TxWait::kIdle:
      if (post_tail_.load(std::memory_order_acquire) != post_head_.load(std::memory_order_relaxed)) return true;
      break;
  }
  const std::uint64_t deadline = deadline_ns_.load(std::memory_order_relaxed);
  return deadline != 0 && NowNs() >= deadline;
}

bool Connection::Poll() {
  if (!HasWork() || !io_mutex_.try_lock()) return false;
  const bool moved = PollLocked();
  UnlockAndDeliver();
  return moved;
}

bool Connection::PollForKick() {
  // Another poller may have taken the noted work between the kick and this drain: this poll then
  // finds none and never reaches PollLocked, which is where the flag used to be cleared, and the
  // next note's Kick, seeing it still set, queued nothing and woke nobody (a refused RDMA Write's
  // end waited for ever; LocalPathTest.TwoSameHostIasConnectOverSharedMemoryWithTcpsSemantics,
  // 2-3 runs in 150).
  kick_pending_.store(false, std::memory_order_seq_cst);
  return Poll();
}

bool Connection::OnSocketReadable() {
  io_mutex_.lock();
  bool moved = false;
  if (!detached_ && phase_ != Phase::kEnded) {
    DrainSocket();
    moved = PollLocked() || peer_eof_.load(std::memory_order_relaxed);
  }
  UnlockAndDeliver();
  return moved;
}

void Connection::UnlockAndDeliver() {
  EndpointEvents* deliver = nullptr;
  if (report_pending_ && events_ != nullptr) {
    deliver = events_;
    delivering_.fetch_add(1, std::memory_order_relaxed);  // under io_mutex_: Detach waits for it
  }
  report_pending_ = false;
  io_mutex_.unlock();
  if (deliver == nullptr) return;
  deliver->Deliver();
  delivering_.fetch_sub(1, std::memory_order_release);
}

bool Connection::PollLocked() {
  if (kick_pending_.load(std::memory_order_relaxed)) kick_pending_.store(false, std::memory_order_relaxed);
  // Most polls find no note: a load, not a locked exchange, for them.
  const std::uint32_t notes =
      notes_.load(std::memory_order_relaxed) != 0 ? notes_.exchange(0, std::memory_order_acq_rel) : 0;
  if (detached_ || phase_ == Phase::kEnded) return false;
  bool moved = false;
  if (notes & kNoteStart) {
    events_->OnEstablished(peer_private_data_.view());
    report_pending_ = true;
    moved = true;
  }
  // What Post wrote completes before anything read now (the peer's answer to a Send must never
  // be reported ahead of the Send).
  if (done_count_ != 0) moved = true;
  ReportCompletions();
  ActOnNotes(notes);
  if (phase_ == Phase::kEnded) return true;
  if (ReadRecords()) moved = true;
  if (phase_ == Phase::kEnded) return true;
  // Most polls have nothing to send (a Send goes out from its Post): the pump's turn is skipped.
  if (TxPending() && PumpTx()) moved = true;
  ReportCompletions();
  if (failure_.set) {
    SendClose(CloseReason::kTerminated, static_cast<std::uint32_t>(failure_.check));
    End(ConnectionEnd::kBroken);
    return true;
  }
  CheckDeadlines();
  MaybeFinishClose();
  UpdateDeadline();
  return moved;
}

void Connection::ReportCompletions() {
  while (done_count_ != 0) {
    const Done& d = done_[done_head_];
    done_head_ = Wrap(done_head_ + 1, done_.size());
    --done_count_;
    if (events_ == nullptr) continue;
    events_->OnWorkDone(d.id, d.status, d.length);
    report_pending_ = true;
  }
}

void Connection::ActOnNotes(std::uint32_t notes) {
  if (notes & kNoteAbrupt) {
    SendClose(CloseReason::kAbrupt, 0);
    End(ConnectionEnd::kDisconnected);
    return;
  }
  if (notes & kNoteFenceTimeout) {
    (void)Fail("the peer kept a one-sided access open past a revocation");
    return;
  }
  if ((notes & kNoteGraceful) && phase_ == Phase::kEstablished) {
    phase_ = Phase::kClosing;
    close_deadline_ns_ = NowNs() + std::uint64_t{options_.close_timeout_ms} * 1'000'000;
  }
  if ((notes & kNoteRecvAvailable) && held_.load(std::memory_order_relaxed)) {
    held_.store(false, std::memory_order_relaxed);  // ReadRecords asks for a buffer again
  }
}

void Connection::CheckDeadlines() {
  if (rnr_deadline_ns_ == 0 && close_deadline_ns_ == 0 && ready_deadline_ns_ == 0 && hold_deadline_ns_ == 0) return;
  const std::uint64_t now = NowNs();
  if (ready_deadline_ns_ != 0 && now >= ready_deadline_ns_) {
    // The Ready may be in the socket, unread: a consumer with progress=poll that made no call for
    // that long reads the socket only after this poll.
    DrainSocket();
    if (phase_ == Phase::kEnded) return;
    if (ready_deadline_ns_ != 0) {
      // As a TCP responder whose initiator promised a ready-to-receive FPDU and sent none.
      ready_deadline_ns_ = 0;
      (void)Fail("no Ready from the peer within the handshake's time");
      return;
    }
  }
  if (rnr_deadline_ns_ != 0 && now >= rnr_deadline_ns_) {
    rnr_deadline_ns_ = 0;
    if (held_.load(std::memory_order_relaxed)) {
      SOFTDAT_LOG(kInfo, "shm: no receive buffer for Send MSN %u within the RNR timeout of %u ms", expected_msn_,
                  options_.rnr_timeout_ms);
      (void)Fail("receiver not ready");
      return;
    }
  }
  if (hold_deadline_ns_ != 0 && now >= hold_deadline_ns_ && held_.load(std::memory_order_relaxed)) {
    SOFTDAT_LOG(kInfo, "shm: no receive buffer for Send MSN %u within %u ms of process %d's close; the waiting "
                "messages are discarded", expected_msn_, options_.close_timeout_ms, static_cast<int>(peer_pid_));
    End(ConnectionEnd::kBroken);
    return;
  }
  if (phase_ == Phase::kClosing && close_deadline_ns_ != 0 && now >= close_deadline_ns_) {
    SOFTDAT_LOG(kInfo, "shm: graceful disconnect from process %d did not finish in time; closing", static_cast<int>(peer_pid_));
    End(ConnectionEnd::kDisconnected);
  }
}

void Connection::UpdateDeadline() {
  std::uint64_t deadline = 0;
  if (phase_ != Phase::kEnded) {
    if (rnr_deadline_ns_ != 0) deadline = rnr_deadline_ns_;
    if (ready_deadline_ns_ != 0 && (deadline == 0 || ready_deadline_ns_ < deadline)) deadline = ready_deadline_ns_;
    // Only while held: once the Sends took buffers, the records are read and the close finishes.
    if (hold_deadline_ns_ != 0 && held_.load(std::memory_order_relaxed) && (deadline == 0 || hold_deadline_ns_ < deadline))
      deadline = hold_deadline_ns_;
    if (phase_ == Phase::kClosing && close_deadline_ns_ != 0 && (deadline == 0 || close_deadline_ns_ < deadline))
      deadline = close_deadline_ns_;
  }
  deadline_ns_.store(deadline, std::memory_order_relaxed);
}

void Connection::ArmRnr() {
  if (options_.rnr_timeout_ms == 0 || rnr_deadline_ns_ != 0) return;
  rnr_deadline_ns_ = NowNs() + std::uint64_t{options_.rnr_timeout_ms} * 1'000'000;
}

void Connection::MaybeFinishClose() {
  if (phase_ == Phase::kEnded) return;
  if (phase_ == Phase::kClosing && !close_sent_ && TxIdle()) {
    close_sent_ = true;
    SendClose(CloseReason::kGraceful, 0);
    ::shutdown(socket_.get(), SHUT_WR);
  }
  if (!peer_eof_.load(std::memory_order_relaxed)) return;
  if (ready_deadline_ns_ != 0) {
    SOFTDAT_LOG(kInfo, "shm: process %d left before it finished the connection's setup (no Ready)",
                static_cast<int>(peer_pid_));
    End(ConnectionEnd::kBroken);
    return;
  }
  if (held_.load(std::memory_order_relaxed)) {
    if (!peer_graceful_) {
      // As an RNIC's connection in RNR retry dies with its peer: the waiting Sends took no buffer
      // and are dropped.
      SOFTDAT_LOG(kInfo, "shm: process %d ended the connection while its Send MSN %u waited for a receive buffer",
                  static_cast<int>(peer_pid_), expected_msn_);
      End(ConnectionEnd::kBroken);
      return;
    }
    // A graceful close: its Sends completed as they entered the ring, so the peer counts them
    // delivered. They are whole in the ring; they wait for buffers as long as a graceful close
    // is given (as over TCP after a FIN), then the connection breaks.
    if (hold_deadline_ns_ == 0) {
      hold_deadline_ns_ = NowNs() + std::uint64_t{options_.close_timeout_ms} * 1'000'000;
      SOFTDAT_LOG(kInfo, "shm: process %d closed the connection while its Send MSN %u waits for a receive buffer; "
                  "the waiting messages get %u ms to find buffers", static_cast<int>(peer_pid_), expected_msn_,
                  options_.close_timeout_ms);
    }
    return;
  }
  if (reader_.Ready()) return;  // records are left: the next Poll reads them
  if (rx_.active) {
    SOFTDAT_LOG(kInfo, "shm: process %d closed the connection in the middle of a message", static_cast<int>(peer_pid_));
    End(ConnectionEnd::kBroken);
    return;
  }
  if (!peer_closed_)
    SOFTDAT_LOG(kInfo, "shm: process %d ended the connection without a close notice (it exited or died)", static_cast<int>(peer_pid_));
  End(ConnectionEnd::kDisconnected);
}

void Connection::SendClose(CloseReason reason, std::uint32_t detail) {
  std::uint8_t bytes[32];
  const std::size_t length = EncodeClose(reason, detail, bytes);
  (void)SendMessage(socket_.get(), {bytes, length});
}

Connection::Rx Connection::Fail(const char* why, RemoteCheck check, std::uint32_t flags) {
  SOFTDAT_LOG(kWarn, "shm: terminating the connection with process %d: %s", static_cast<int>(peer_pid_), why);
  SendClose(CloseReason::kTerminated, static_cast<std::uint32_t>(check) | flags);
  End(ConnectionEnd::kBroken);
  return Rx::kEnded;
}

void Connection::End(ConnectionEnd why) {
  if (phase_ == Phase::kEnded) return;
  phase_ = Phase::kEnded;
  ended_.store(true, std::memory_order_release);
  // The rule of key_table.h: once we say we ended, no well-behaved peer starts a one-sided access
  // into us; wait for the one that may be in flight, then our table stops waiting for this peer.
  StoreRelease(&my_control_->ended, 1u);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!WaitForAccess(&peer_control_->access, options_.fence_bound))
    SOFTDAT_LOG(kWarn, "shm: process %d kept a one-sided access open past the end of its connection", static_cast<int>(peer_pid_));
  table_.RemoveWatch(this);
  held_.store(false, std::memory_order_relaxed);
  tx_wait_.store(TxWait::kIdle, std::memory_order_relaxed);
  deadline_ns_.store(0, std::memory_order_relaxed);
  ReportCompletions();
  if (events_ != nullptr) {
    SOFTDAT_LOG(kInfo, "shm: connection with process %d ended: %s", static_cast<int>(peer_pid_), ConnectionEndName(why));
    events_->OnEnded(why, {});
    report_pending_ = true;
  }
  ::shutdown(socket_.get(), SHUT_RDWR);
}

void Connection::DrainSocket() {
  // A doorbell read here may have been the sleeping progress thread's wake-up (a consumer's poll
  // reads the socket too): the sleep is renewed once, after the reads, before the caller looks at
  // the rings.
  bool doorbell = false;
  ReadSocket(doorbell);
  if (doorbell) table_.RenewSleep();
}

void Connection::ReadSocket(bool& doorbell) {
  for (int i = 0; i < 64; ++i) {
    std::uint8_t bytes[64];
    std::size_t length = 0, fd_count = 0;
    switch (ReceiveMessage(socket_.get(), bytes, length, {}, fd_count)) {
      case Received::kNothing:
        return;
      case Received::kEnd:
        peer_eof_.store(true, std::memory_order_release);
        return;
      case Received::kBad:
        (void)Fail("a malformed message on the rendezvous socket");
        return;
      case Received::kMessage:
        break;
    }
    if (length == 1) {  // a doorbell
      doorbell = true;
      continue;
    }
    if (ready_deadline_ns_ != 0) {
      // The first message after our Accept is the Ready, and only then.
      Ready ready;
      if (fd_count != 0 || !Decode({bytes, length}, ready)) {
        (void)Fail("a malformed Ready on the rendezvous socket");
        return;
      }
      ready_deadline_ns_ = 0;
      peer_attaches_ = ready.attaches;
      continue;
    }
    CloseReason reason;
    std::uint32_t detail = 0;
    if (!DecodeClose({bytes, length}, reason, detail)) {
      (void)Fail("an unknown message on the rendezvous socket");
      return;
    }
    if (reason != CloseReason::kTerminated) {
      peer_closed_ = true;
      peer_graceful_ = reason == CloseReason::kGraceful;
      continue;
    }
    SOFTDAT_LOG(kWarn, "shm: process %d terminated the connection (%u)", static_cast<int>(peer_pid_), detail);
    if ((detail & kReadRefused) != 0 && reads_count_ > 0) {
      // Our oldest Read through the ring was refused by the peer's key checks.
      const std::uint64_t id = reads_[reads_head_].work.id;
      reads_head_ = Wrap(reads_head_ + 1, reads_.size());
      --reads_count_;
      events_->OnWorkDone(id, WorkStatus::kRemoteAccess, 0);
      report_pending_ = true;
    }
    End(ConnectionEnd::kBroken);
    return;
  }
}

void Connection::MaybeRing() {
  // Dekker with the peer's sleep: our records (or consumption) are published, then we look at
  // its epoch; it made the epoch odd, then looked at our rings. The same fence orders our mark
  // in its activity table after what we published (activity.h).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (peer_activity_ != nullptr) peer_activity_->Mark(peer_activity_slot_);
  const std::uint64_t epoch = peer_table_->SleepEpoch();
  if ((epoch & 1) == 0 || epoch == rung_epoch_) return;
  rung_epoch_ = epoch;
  const std::uint8_t doorbell = 0;
  (void)::send(socket_.get(), &doorbell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

void Connection::CloseSocket() {
  std::lock_guard lock(io_mutex_);
  if (detached_) socket_.Reset();  // a poller that still holds us reads nothing once detached
}

void Connection::Detach() {
  {
    std::lock_guard lock(io_mutex_);
    if (detached_) return;
    detached_ = true;
    events_ = nullptr;
    report_pending_ = false;
    if (phase_ != Phase::kEnded) {
      SendClose(CloseReason::kAbrupt, 0);
      End(ConnectionEnd::kDisconnected);
    }
  }
  // A delivery that began before is the last event of this endpoint: wait for it.
  while (delivering_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

}  // namespace softdat::transport::shm
