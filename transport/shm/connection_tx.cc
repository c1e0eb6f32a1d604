// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Transmission on a shared-memory connection: posted Work becomes records in our ring (Sends,
// RDMA Writes and Read Requests through the ring; pull records for large Sends) or one-sided
// copies into the peer (RDMA Write and Read by cross-memory attach, checked against the peer's
// key table under the access rule of key_table.h), and the peer's Read Requests get their
// responses. Runs with the io lock held, from Post (the latency path: no hand-off) or a poll; it
// never reports an event itself (Post may be its caller): completions go to done_, failures to
// failure_, and the next poll reports them.
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "base/log.h"
#include "transport/shm/cma.h"
#include "transport/shm/shm_connection.h"

namespace softdat::transport::shm {
namespace {

// Bytes one pump moves before it lets the poller go on (the rest at the next poll).
constexpr std::int64_t kPumpBudget = 4 << 20;
// A one-sided copy goes in pieces this long, each checked and announced on its own: a revocation
// waits for at most one piece.
constexpr std::uint64_t kOneSidedPiece = 1 << 20;
constexpr std::size_t kMaxIovecs = kMaxPullSegments;
// An RDMA Write this short goes through the ring while the target reads its rings on its own
// (RingWriteNow): a cross-memory copy costs a system call and a walk of the target's page tables
// (about 1.7 µs for 8 bytes, PERFORMANCE.md), two copies through the ring a few hundred
// nanoseconds at this length.
constexpr std::uint64_t kRingWriteMax = 4096;

// A record's header but its size (the writer's Commit sets it).
void FillHeader(RecordHeader& header, Opcode opcode, std::uint8_t flags, std::uint32_t msn, std::uint32_t key,
                std::uint32_t total, std::uint64_t offset) {
  header.opcode = opcode;
  header.flags = flags;
  header.segments = 0;
  header.msn = msn;
  header.key = key;
  header.total = total;
  header.offset = offset;
}

// A Send's flags and key, as every record of it carries them.
std::uint8_t SendFlags(const Work& work) {
  return static_cast<std::uint8_t>((work.solicited ? kFlagSolicited : 0) | (work.invalidate ? kFlagInvalidate : 0));
}
std::uint32_t SendKey(const Work& work) { return work.invalidate ? work.invalidate_key : 0; }

}  // namespace

Status Connection::Post(const Work& work) {
  if (work.kind == WorkKind::kSendDatagram) {
    // Core posts datagrams only to datagram endpoints, which never take this path: refused
    // rather than dropped, should that ever change.
    SOFTDAT_LOG(kWarn, "shm: a datagram Send posted to a connection to process %d: refused", static_cast<int>(peer_pid_));
    return Status(Code::kModelNotSupported);
  }
  // The connection ended and its OnEnded is on its way (core holds the EP's state lock around
  // this call, so it has not run yet): the Work is left for that end to flush, as core promises.
  if (ended_.load(std::memory_order_acquire)) return Status::Ok();
  // Write it now unless a poller is at it (it will see the Work: it pumps after its reads).
  const bool locked = io_mutex_.try_lock();
  const bool live = locked && !detached_ && phase_ != Phase::kEnded;
  if (!live || !SendAtOnce(work)) {
    // No lock for the queue: Post calls never overlap (endpoint.h), so this is its one producer.
    const std::uint64_t tail = post_tail_.load(std::memory_order_relaxed);
    if (tail - post_head_.load(std::memory_order_acquire) >= posted_.size()) {
      if (locked) io_mutex_.unlock();
      return Status(Code::kQueueFull);
    }
    posted_[tail & (posted_.size() - 1)] = work;
    post_tail_.store(tail + 1, std::memory_order_release);
    if (!locked) {
      Kick();
      return Status::Ok();
    }
    if (live) (void)PumpTx();
  }
  const bool left = live && tx_wait_.load(std::memory_order_relaxed) == TxWait::kMore;
  const bool report = done_count_ != 0 || failure_.set;
  const bool failed = failure_.set;
  io_mutex_.unlock();
  if (report && !failed && !left) {
    // Only this consumer's completions wait: they may wait for its next poll (Kicker::Defer).
    NoteCompletions();
  } else if (report) {
    Note(kNoteCompletions);  // a failure ends the connection, which the peer must learn of
  } else if (left) {
    Kick();
  }
  return Status::Ok();
}

// A Send of one record with nothing before it, written from the caller's Work: neither copied
// into the posted queue and out again into tx_, nor passed through the pump's steps. This is the
// post of every small Send on an idle connection, so the latency path (callgrind, an 8 B round
// trip: the engine's Post 548 instructions a Send before, PERFORMANCE.md). False, having done
// nothing, where the queue must keep its order or the Send goes another way (pulled, several
// records, no room yet: the pump does those as before).
bool Connection::SendAtOnce(const Work& work) {
  if (work.kind != WorkKind::kSend || tx_.mode != TxMode::kNone || pull_.active || responses_count_ != 0 ||
      failure_.set || (work.fence && reads_count_ > 0) ||
      post_tail_.load(std::memory_order_relaxed) != post_head_.load(std::memory_order_relaxed))
    return false;
  if (work.length > writer_.max_payload() || Pulled(work)) return false;
  const auto n = static_cast<std::uint32_t>(work.length);
  RecordHeader* header = writer_.Begin(n);
  if (header == nullptr) return false;
  FillHeader(*header, Opcode::kSend, static_cast<std::uint8_t>(SendFlags(work) | kFlagLast), send_msn_++, SendKey(work),
             n, 0);
  SegmentCursor cursor{};
  Gather(work.local, cursor, RingWriter::Payload(header), n);
  writer_.Commit(header, n);
  Complete(work.id, WorkStatus::kSuccess, n);
  tx_wait_.store(TxWait::kIdle, std::memory_order_relaxed);
  MaybeRing();
  return true;
}

bool Connection::Pulled(const Work& work) const {
  return peer_attaches_ && work.length >= options_.pull_threshold && work.local.size() <= kMaxPullSegments;
}

bool Connection::TxPending() const {
  return post_tail_.load(std::memory_order_acquire) != post_head_.load(std::memory_order_relaxed) ||
         tx_.mode != TxMode::kNone || pull_.active || responses_count_ != 0;
}

bool Connection::TxIdle() const { return !TxPending() && reads_count_ == 0; }

void Connection::Complete(std::uint64_t id, WorkStatus status, std::uint32_t length) {
  done_[Wrap(done_head_ + done_count_, done_.size())] = Done{id, status, length};
  ++done_count_;
}

void Connection::TxFailure(RemoteCheck check, std::uint64_t id, WorkStatus status) {
  Complete(id, status, 0);
  tx_.mode = TxMode::kNone;
  failure_.set = true;
  failure_.check = check;
}

bool Connection::PumpTx() {
  if (phase_ == Phase::kEnded || failure_.set) return false;
  budget_ = kPumpBudget;
  const std::uint64_t written_before = writer_.written();
  const std::uint32_t done_before = done_count_;
  Pump state = Pump::kDone;
  while (state == Pump::kDone && !failure_.set) {
    if (responses_count_ > 0) {
      state = PumpResponse();
    } else if (pull_.active) {
      state = CheckPull() ? Pump::kDone : Pump::kRoom;
    } else if (tx_.mode != TxMode::kNone) {
      state = PumpMessage();
    } else {
      state = NextWork();
    }
    if (state == Pump::kDone && budget_ <= 0) state = Pump::kMore;
  }
  TxWait wait = TxWait::kIdle;
  switch (state) {
    case Pump::kMore: wait = TxWait::kMore; break;
    case Pump::kRoom: wait = TxWait::kConsumption; break;
    case Pump::kInbound: wait = TxWait::kInbound; break;
    default: break;
  }
  if (wait == TxWait::kConsumption) consumed_seen_.store(writer_.consumed(), std::memory_order_relaxed);
  tx_wait_.store(wait, std::memory_order_relaxed);
  if (writer_.broken() && !failure_.set) {
    SOFTDAT_LOG(kWarn, "shm: process %d published a consumed count that lies", static_cast<int>(peer_pid_));
    failure_.set = true;
  }
  const bool wrote = writer_.written() != written_before;
  if (wrote) MaybeRing();
  return wrote || done_count_ != done_before;
}

Connection::Pump Connection::NextWork() {
  const std::uint64_t head = post_head_.load(std::memory_order_relaxed);
  if (head == post_tail_.load(std::memory_order_acquire)) return Pump::kIdle;
  const Work& work = posted_[head & (posted_.size() - 1)];
  if (work.fence && reads_count_ > 0) return Pump::kInbound;  // after our earlier Reads complete
  TxMode mode = TxMode::kNone;
  switch (work.kind) {
    case WorkKind::kSend:
      mode = Pulled(work) ? TxMode::kPull : TxMode::kInline;
      break;
    case WorkKind::kRdmaWrite:
    case WorkKind::kRdmaWriteImmediate:  // the Write, then its Immediate record (WriteDone)
      mode = attach_ && !RingWriteNow(work) ? TxMode::kOneSided : TxMode::kRingWrite;
      break;
    case WorkKind::kRdmaRead:
      if (!attach_ && reads_count_ >= ord_limit_) return Pump::kInbound;
      mode = attach_ ? TxMode::kOneSided : TxMode::kReadRequest;
      break;
    case WorkKind::kFetchAdd:
    case WorkKind::kCompareSwap:
      // Through the ring always: cross-memory attach copies, it cannot be atomic; the target
      // executes it. Outstanding atomics share the ORD with Reads through the ring.
      if (reads_count_ >= ord_limit_) return Pump::kInbound;
      mode = TxMode::kAtomic;
      break;
    case WorkKind::kSendDatagram:
      break;  // refused by Post
  }
  tx_.Start(mode, work);
  // A Write with immediate data takes a receive buffer at the peer: it is numbered with the Sends.
  if (work.kind == WorkKind::kSend || work.kind == WorkKind::kRdmaWriteImmediate) tx_.msn = send_msn_++;
  post_head_.store(head + 1, std::memory_order_release);
  return Pump::kDone;
}

// A short RDMA Write goes through the ring, not by cross-memory attach, when the target will read
// it without its consumer's help: its table says a thread of its reads its rings now (its
// progress thread is awake, or parked while a consumer polls; KeyTableView::ReadsRingsNow). That
// is the busy consumer's case, where the ring is several times faster. A target whose thread
// sleeps, or that has none (progress=poll), gets the one-sided copy, which lands with no CPU of
// its own, as on an RNIC. The key is checked here first: a Write the table refuses takes the
// one-sided path, which fails it with a remote access error as before, so what a consumer sees
// of a refusal does not depend on whether the target was awake. (The target checks again as it
// places: a revocation in between breaks the connection, as on the wire.)
bool Connection::RingWriteNow(const Work& work) const {
  return work.length != 0 && work.length <= kRingWriteMax && peer_table_->ReadsRingsNow() &&
         peer_table_->Check(work.remote_key, work.remote_address, work.length, RemoteAccess::kWrite, peer_binding_) ==
             RemoteCheck::kOk;
}

Connection::Pump Connection::PumpMessage() {
  switch (tx_.mode) {
    case TxMode::kInline:
    case TxMode::kResend:
      return PumpRecords(Opcode::kSend, SendFlags(tx_.work), SendKey(tx_.work), 0);
    case TxMode::kPull:
      return PumpPull();
    case TxMode::kOneSided:
      return PumpOneSided();
    case TxMode::kRingWrite:  // the target places it after its own key check
      return PumpRecords(Opcode::kWrite, 0, tx_.work.remote_key, tx_.work.remote_address);
    case TxMode::kReadRequest:
      return PumpReadRequest();
    case TxMode::kImmediate:
      return PumpImmediate();
    case TxMode::kAtomic:
      return PumpAtomicRequest();
    case TxMode::kNone:
      break;
  }
  return Pump::kDone;
}

// A Send or an RDMA Write through the ring, in records of at most max_payload bytes each
// carrying its offset in the message plus `base` (a Write's tagged offset; 0 for a Send).
Connection::Pump Connection::PumpRecords(Opcode opcode, std::uint8_t flags, std::uint32_t key, std::uint64_t base) {
  const Work& work = tx_.work;
  do {
    const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(writer_.max_payload(), work.length - tx_.offset));
    RecordHeader* header = writer_.Begin(n);
    if (header == nullptr) return Pump::kRoom;
    FillHeader(*header, opcode, static_cast<std::uint8_t>(flags | (tx_.offset + n == work.length ? kFlagLast : 0)),
               tx_.msn, key, static_cast<std::uint32_t>(work.length), base + tx_.offset);
    Gather(work.local, tx_.cursor, RingWriter::Payload(header), n);
    writer_.Commit(header, n);
    tx_.offset += n;
    budget_ -= n + kHeaderBytes;
    if (budget_ <= 0 && tx_.offset < work.length) return Pump::kMore;
  } while (tx_.offset < work.length);
  if (opcode == Opcode::kWrite) return WriteDone();
  Complete(work.id, WorkStatus::kSuccess, static_cast<std::uint32_t>(work.length));
  tx_.mode = TxMode::kNone;
  return Pump::kDone;
}

Connection::Pump Connection::WriteDone() {
  if (tx_.work.kind == WorkKind::kRdmaWriteImmediate) {
    tx_.mode = TxMode::kImmediate;  // placed (or in the ring before it): the Immediate follows
    return Pump::kDone;
  }
  Complete(tx_.work.id, WorkStatus::kSuccess, static_cast<std::uint32_t>(tx_.work.length));
  tx_.mode = TxMode::kNone;
  return Pump::kDone;
}

// The Immediate record of an RDMA Write with immediate data, after the Write: the peer completes
// a receive with the immediate and the Write's length; the Work completes when it is written.
Connection::Pump Connection::PumpImmediate() {
  const Work& work = tx_.work;
  RecordHeader* header = writer_.Begin(0);
  if (header == nullptr) return Pump::kRoom;
  FillHeader(*header, Opcode::kImmediate, static_cast<std::uint8_t>(kFlagLast | (work.solicited ? kFlagSolicited : 0)),
             tx_.msn, work.immediate, static_cast<std::uint32_t>(work.length), 0);
  writer_.Commit(header, 0);
  Complete(work.id, WorkStatus::kSuccess, static_cast<std::uint32_t>(work.length));
  tx_.mode = TxMode::kNone;
  return Pump::kDone;
}

// A Fetch and Add or Compare and Swap: a request record; the original value comes back as a
// kAtomicResponse in Read order.
Connection::Pump Connection::PumpAtomicRequest() {
  if (reads_count_ >= ord_limit_) return Pump::kInbound;
  const Work& work = tx_.work;
  RecordHeader* header = writer_.Begin(sizeof(AtomicPayload));
  if (header == nullptr) return Pump::kRoom;
  FillHeader(*header, Opcode::kAtomicRequest,
             static_cast<std::uint8_t>(kFlagLast | (work.kind == WorkKind::kCompareSwap ? kFlagCompareSwap : 0)),
             read_msn_, work.remote_key, sizeof(std::uint64_t), work.remote_address);
  const AtomicPayload payload{work.compare_add, work.swap};
  std::memcpy(RingWriter::Payload(header), &payload, sizeof payload);
  writer_.Commit(header, sizeof payload);
  RingRead& read = reads_[Wrap(reads_head_ + reads_count_, reads_.size())];
  read = RingRead{work, read_msn_++, 0, {}};
  ++reads_count_;
  tx_.mode = TxMode::kNone;
  return Pump::kDone;
}

// A large Send as one record naming our memory: the receiver pulls it. Nothing follows it until
// it is consumed (CheckPull), so that a refused pull can be resent in its place.
Connection::Pump Connection::PumpPull() {
  const Work& work = tx_.work;
  const auto count = static_cast<std::uint16_t>(work.local.size());
  RecordHeader* header = writer_.Begin(count * sizeof(PullSegment));
  if (header == nullptr) return Pump::kRoom;
  header->opcode = Opcode::kSendPull;
  header->flags = static_cast<std::uint8_t>(kFlagLast | SendFlags(work));
  header->segments = count;
  header->msn = tx_.msn;
  header->key = SendKey(work);
  header->total = static_cast<std::uint32_t>(work.length);
  header->offset = 0;
  auto* pieces = reinterpret_cast<PullSegment*>(RingWriter::Payload(header));
  for (std::uint16_t i = 0; i < count; ++i) pieces[i] = PullSegment{work.local[i].address, work.local[i].length};
  writer_.Commit(header, count * sizeof(PullSegment));
  pull_.active = true;
  pull_.id = work.id;
  pull_.msn = tx_.msn;
  pull_.length = static_cast<std::uint32_t>(work.length);
  pull_.end = writer_.written();
  pull_.work = work;
  tx_.mode = TxMode::kNone;
  return Pump::kDone;
}

bool Connection::CheckPull() {
  if (writer_.consumed() < pull_.end && (!writer_.Refresh() || writer_.consumed() < pull_.end)) return false;
  pull_.active = false;
  // The peer wrote its refusal before it published the consumed count we just read.
  if (LoadAcquire(&peer_control_->pull_refused) == pull_.msn) {
    SOFTDAT_LOG(kInfo, "shm: process %d could not pull Send MSN %u: it and later Sends go through the ring",
                static_cast<int>(peer_pid_), pull_.msn);
    peer_attaches_ = false;
    tx_ = TxMessage{};
    tx_.mode = TxMode::kResend;
    tx_.work = pull_.work;
    tx_.msn = pull_.msn;
    return true;
  }
  Complete(pull_.id, WorkStatus::kSuccess, pull_.length);
  return true;
}

// An RDMA Write or Read by cross-memory attach, once every earlier record is consumed (so it is
// placed after them, as on the wire), in pieces each announced and checked (key_table.h).
Connection::Pump Connection::PumpOneSided() {
  const Work& work = tx_.work;
  if (writer_.consumed() != writer_.written() && (!writer_.Refresh() || writer_.consumed() != writer_.written())) {
    // Records of ours wait to be read: a Write that fits the ring goes behind them, placed by the
    // target in order, rather than wait for the target to consume them. Then nothing of it waits
    // on this side: a sender that posts and sleeps (progress=poll) still gets it to the target,
    // whose own polls place it (softdat(7), PROGRESS).
    if (work.kind != WorkKind::kRdmaRead && tx_.offset == 0 && work.length <= options_.pull_threshold) {
      tx_.mode = TxMode::kRingWrite;
      return Pump::kDone;
    }
    return Pump::kRoom;
  }
  const bool write = work.kind != WorkKind::kRdmaRead;  // a Write, with immediate data or not
  const RemoteAccess access = write ? RemoteAccess::kWrite : RemoteAccess::kRead;
  std::atomic_ref<std::uint64_t> announced(my_control_->access);
  do {
    const std::uint64_t n = std::min<std::uint64_t>(kOneSidedPiece, work.length - tx_.offset);
    const std::uint64_t remote_address = work.remote_address + tx_.offset;
    iovec local[kMaxIovecs];
    const std::size_t local_count = SegmentIovecs(work.local, tx_.offset, n, local);
    if (n != 0 && local_count == 0) {
      // More pieces than one call takes: this Work goes through the ring.
      tx_.mode = write ? TxMode::kRingWrite : TxMode::kReadRequest;
      tx_.offset = 0;
      tx_.cursor = {};
      return write || reads_count_ < ord_limit_ ? Pump::kDone : Pump::kInbound;
    }
    announced.fetch_add(1, std::memory_order_seq_cst);  // odd: in flight
    bool gone = LoadAcquire(&peer_control_->ended) != 0;
    RemoteCheck check = RemoteCheck::kOk;
    CmaResult result = CmaResult::kDone;
    if (!gone && n != 0) {  // a zero-length access touches nothing and checks nothing, as on the wire
      check = peer_table_->Check(work.remote_key, remote_address, n, access, peer_binding_);
      if (check == RemoteCheck::kOk) {
        const iovec remote{reinterpret_cast<void*>(remote_address), static_cast<std::size_t>(n)};
        result = CrossMemoryCopy(peer_pid_, write, {local, local_count}, {&remote, 1}, n);
      }
    }
    announced.fetch_add(1, std::memory_order_release);  // even: done
    if (gone) return Pump::kInbound;  // its end reaches us through the socket
    if (check != RemoteCheck::kOk) {
      SOFTDAT_LOG(kInfo, "shm: our RDMA %s of %llu bytes at %#llx (STag %#x) was refused by process %d's key table (%d)",
                  write ? "Write" : "Read", static_cast<unsigned long long>(n), static_cast<unsigned long long>(remote_address),
                  work.remote_key, static_cast<int>(peer_pid_), static_cast<int>(check));
      TxFailure(check, work.id, WorkStatus::kRemoteAccess);
      return Pump::kFailed;
    }
    if (result == CmaResult::kRefused) {
      SOFTDAT_LOG(kInfo, "shm: the kernel refused cross-memory attach to process %d: RDMA goes through the ring",
                  static_cast<int>(peer_pid_));
      attach_ = false;
      tx_.mode = write ? TxMode::kRingWrite : TxMode::kReadRequest;
      tx_.offset = 0;  // again from the start: the same bytes again are harmless
      tx_.cursor = {};
      return write || reads_count_ < ord_limit_ ? Pump::kDone : Pump::kInbound;
    }
    if (result == CmaResult::kFault) {
      SOFTDAT_LOG(kWarn, "shm: process %d's key table grants STag %#x at %#llx, but that memory is not there", static_cast<int>(peer_pid_),
                  work.remote_key, static_cast<unsigned long long>(remote_address));
      TxFailure(RemoteCheck::kBounds, work.id, WorkStatus::kRemoteAccess);
      return Pump::kFailed;
    }
    tx_.offset += n;
    budget_ -= static_cast<std::int64_t>(n);
    if (budget_ <= 0 && tx_.offset < work.length) return Pump::kMore;
  } while (tx_.offset < work.length);
  if (write) return WriteDone();
  Complete(work.id, WorkStatus::kSuccess, static_cast<std::uint32_t>(work.length));
  tx_.mode = TxMode::kNone;
  return Pump::kDone;
}

// An RDMA Read through the ring: a request record; the response comes as records.
Connection::Pump Connection::PumpReadRequest() {
  if (reads_count_ >= ord_limit_) return Pump::kInbound;
  const Work& work = tx_.work;
  RecordHeader* header = writer_.Begin(0);
  if (header == nullptr) return Pump::kRoom;
  FillHeader(*header, Opcode::kReadRequest, static_cast<std::uint8_t>(kFlagLast), read_msn_, work.remote_key,
             static_cast<std::uint32_t>(work.length), work.remote_address);
  writer_.Commit(header, 0);
  RingRead& read = reads_[Wrap(reads_head_ + reads_count_, reads_.size())];
  read = RingRead{work, read_msn_++, 0, {}};
  ++reads_count_;
  tx_.mode = TxMode::kNone;
  return Pump::kDone;
}

// The response to the peer's oldest Read Request, from the memory its key check resolved, or to
// its oldest atomic (the value before it).
Connection::Pump Connection::PumpResponse() {
  Response& response = responses_[responses_head_];
  if (response.atomic) {
    RecordHeader* header = writer_.Begin(sizeof response.original);
    if (header == nullptr) return Pump::kRoom;
    FillHeader(*header, Opcode::kAtomicResponse, static_cast<std::uint8_t>(kFlagLast), response.msn, 0,
               sizeof response.original, 0);
    std::memcpy(RingWriter::Payload(header), &response.original, sizeof response.original);
    writer_.Commit(header, sizeof response.original);
    budget_ -= kHeaderBytes + sizeof response.original;
    responses_head_ = Wrap(responses_head_ + 1, responses_.size());
    --responses_count_;
    return Pump::kDone;
  }
  do {
    const std::uint32_t n = std::min(writer_.max_payload(), response.length - response.sent);
    RecordHeader* header = writer_.Begin(n);
    if (header == nullptr) return Pump::kRoom;
    FillHeader(*header, Opcode::kReadResponse,
               static_cast<std::uint8_t>(response.sent + n == response.length ? kFlagLast : 0), response.msn, 0,
               response.length, response.sent);
    if (n != 0) std::memcpy(RingWriter::Payload(header), response.source + response.sent, n);
    writer_.Commit(header, n);
    response.sent += n;
    budget_ -= n + kHeaderBytes;
    if (budget_ <= 0 && response.sent < response.length) return Pump::kMore;
  } while (response.sent < response.length);
  responses_head_ = Wrap(responses_head_ + 1, responses_.size());
  --responses_count_;
  return Pump::kDone;
}

}  // namespace softdat::transport::shm
