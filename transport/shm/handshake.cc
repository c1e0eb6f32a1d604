// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The handshake's messages (little-endian fields after a magic, version and type) and the two
// sides' steps (handshake.h).
#include "transport/shm/handshake.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "base/log.h"
#include "transport/shm/cma.h"

namespace softdat::transport::shm {
namespace {

constexpr std::uint32_t kMagic = 0x48534453;  // "SDSH"
constexpr std::uint16_t kVersion = 2;  // 2: activity slots

constexpr bool ValidSlot(std::uint32_t slot) { return slot < kActivitySlots || slot == kNoActivitySlot; }
// Whether the sender's LocalEnd has an activity table (its fd goes with the message).
bool HasActivity(const LocalEnd& local) { return local.activity != nullptr && local.activity_slot < kActivitySlots; }
constexpr std::size_t kHeader = 8;

// Appends fields; `ok` turns false when `out` is too short.
class Writer {
 public:
  explicit Writer(std::span<std::uint8_t> out) : out_(out) {}
  template <typename T>
  void Put(T value) {
    if (!ok_ || out_.size() - at_ < sizeof(T)) {
      ok_ = false;
      return;
    }
    for (std::size_t i = 0; i < sizeof(T); ++i) out_[at_++] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> (8 * i));
  }
  void Bytes(std::span<const std::uint8_t> bytes) {
    if (!ok_ || out_.size() - at_ < bytes.size()) {
      ok_ = false;
      return;
    }
    if (!bytes.empty()) std::memcpy(out_.data() + at_, bytes.data(), bytes.size());
    at_ += bytes.size();
  }
  void Head(MessageType type) {
    Put(kMagic);
    Put(kVersion);
    Put(static_cast<std::uint16_t>(type));
  }
  void Private(const PrivateData& data) {
    Put(data.length);
    Bytes(data.view());
  }
  std::size_t Done() const { return ok_ ? at_ : 0; }

 private:
  std::span<std::uint8_t> out_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

// Reads fields; `ok` turns false when `in` is too short.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> in) : in_(in) {}
  template <typename T>
  T Get() {
    if (!ok_ || in_.size() - at_ < sizeof(T)) {
      ok_ = false;
      return T{};
    }
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) value |= std::uint64_t{in_[at_++]} << (8 * i);
    return static_cast<T>(value);
  }
  bool Head(MessageType want) {
    return Get<std::uint32_t>() == kMagic && Get<std::uint16_t>() == kVersion &&
           Get<std::uint16_t>() == static_cast<std::uint16_t>(want);
  }
  bool Private(PrivateData& data) {
    const auto length = Get<std::uint16_t>();
    if (!ok_ || length > kMaxPrivateData || in_.size() - at_ < length) return ok_ = false;
    data.length = length;
    if (length != 0) std::memcpy(data.bytes.data(), in_.data() + at_, length);
    at_ += length;
    return true;
  }
  // Everything read, nothing left over.
  bool Whole() const { return ok_ && at_ == in_.size(); }

 private:
  std::span<const std::uint8_t> in_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

bool ReadBool(Reader& reader, bool& value) {
  const auto byte = reader.Get<std::uint8_t>();
  value = byte == 1;
  return byte <= 1;
}

// The segment's header as its creator wrote it: what the probe expects to read in the peer.
struct ProbeBytes {
  std::uint8_t bytes[16];
};
ProbeBytes HeaderBytes(const Mapping& segment) {
  ProbeBytes probe;
  std::memcpy(probe.bytes, segment.data(), sizeof probe.bytes);
  return probe;
}

bool Probe(bool wanted, pid_t pid, std::uint64_t peer_address, const Mapping& segment) {
  if (!wanted) return false;
  const ProbeBytes expected = HeaderBytes(segment);
  return ProbeCrossMemory(pid, peer_address, expected.bytes, sizeof expected.bytes);
}

void MaybeAllowAttach(const LocalEnd& local, pid_t peer) {
  if (local.allow_attach && YamaPtraceScope() == 1 && !AllowAttachBy(peer))
    SOFTDAT_LOG(kInfo, "shm: PR_SET_PTRACER for process %d failed", static_cast<int>(peer));
}

// Receives one handshake message into `bytes`: null when one came (`length`, `fd_count`) or none
// waits (`length` 0 and `nothing`), else why the handshake fails.
const char* ReceiveHandshake(int fd, std::span<std::uint8_t> bytes, std::size_t& length, std::span<UniqueFd> fds,
                             std::size_t& fd_count, bool& nothing) {
  nothing = false;
  switch (ReceiveMessage(fd, bytes, length, fds, fd_count)) {
    case Received::kNothing:
      nothing = true;
      return nullptr;
    case Received::kEnd:
      return "the peer closed the rendezvous socket";
    case Received::kBad:
      return "a malformed message (too long, or with unexpected descriptors)";
    case Received::kMessage:
      break;
  }
  return nullptr;
}

std::uint64_t Nonce() {
  std::uint64_t nonce = 0;
  if (::getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != sizeof nonce) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    nonce = static_cast<std::uint64_t>(ts.tv_nsec) ^ (static_cast<std::uint64_t>(::getpid()) << 32);
  }
  return nonce | 1;
}

}  // namespace

bool PrivateData::Assign(std::span<const std::uint8_t> data) {
  if (data.size() > kMaxPrivateData) return false;
  length = static_cast<std::uint16_t>(data.size());
  if (!data.empty()) std::memcpy(bytes.data(), data.data(), data.size());
  return true;
}

std::size_t Encode(const Request& m, std::span<std::uint8_t> out) {
  Writer w(out);
  w.Head(MessageType::kRequest);
  w.Put(m.geometry.ring_bytes[0]);
  w.Put(m.geometry.ring_bytes[1]);
  w.Put(m.segment_address);
  w.Put(m.binding.pz);
  w.Put(m.binding.endpoint);
  w.Put(m.ird);
  w.Put(m.ord);
  w.Put(m.activity_slot);
  w.Put(m.address.sin_addr.s_addr);  // as stored (network order)
  w.Put(m.address.sin_port);
  w.Private(m.private_data);
  return w.Done();
}

std::size_t Encode(const Accept& m, std::span<std::uint8_t> out) {
  Writer w(out);
  w.Head(MessageType::kAccept);
  w.Put(m.segment_address);
  w.Put(m.binding.pz);
  w.Put(m.binding.endpoint);
  w.Put(m.ird);
  w.Put(m.ord);
  w.Put(m.activity_slot);
  w.Put(static_cast<std::uint8_t>(m.attaches));
  w.Private(m.private_data);
  return w.Done();
}

std::size_t Encode(const Reject& m, std::span<std::uint8_t> out) {
  Writer w(out);
  w.Head(MessageType::kReject);
  w.Put(static_cast<std::uint8_t>(m.by_consumer));
  w.Private(m.private_data);
  return w.Done();
}

std::size_t Encode(const Ready& m, std::span<std::uint8_t> out) {
  Writer w(out);
  w.Head(MessageType::kReady);
  w.Put(static_cast<std::uint8_t>(m.attaches));
  return w.Done();
}

std::size_t EncodeClose(CloseReason reason, std::uint32_t detail, std::span<std::uint8_t> out) {
  Writer w(out);
  w.Head(MessageType::kClose);
  w.Put(static_cast<std::uint8_t>(reason));
  w.Put(detail);
  return w.Done();
}

bool DecodeType(std::span<const std::uint8_t> in, MessageType& type) {
  Reader r(in);
  if (r.Get<std::uint32_t>() != kMagic || r.Get<std::uint16_t>() != kVersion) return false;
  const auto raw = r.Get<std::uint16_t>();
  if (in.size() < kHeader || raw < 1 || raw > 5) return false;
  type = static_cast<MessageType>(raw);
  return true;
}

bool Decode(std::span<const std::uint8_t> in, Request& m) {
  Reader r(in);
  if (!r.Head(MessageType::kRequest)) return false;
  m.geometry.ring_bytes[0] = r.Get<std::uint32_t>();
  m.geometry.ring_bytes[1] = r.Get<std::uint32_t>();
  m.segment_address = r.Get<std::uint64_t>();
  m.binding.pz = r.Get<std::uint32_t>();
  m.binding.endpoint = r.Get<std::uint64_t>();
  m.ird = r.Get<std::uint32_t>();
  m.ord = r.Get<std::uint32_t>();
  m.activity_slot = r.Get<std::uint32_t>();
  m.address = sockaddr_in{};
  m.address.sin_family = AF_INET;
  m.address.sin_addr.s_addr = r.Get<std::uint32_t>();
  m.address.sin_port = r.Get<std::uint16_t>();
  return r.Private(m.private_data) && r.Whole() && ValidGeometry(m.geometry) && ValidSlot(m.activity_slot);
}

bool Decode(std::span<const std::uint8_t> in, Accept& m) {
  Reader r(in);
  if (!r.Head(MessageType::kAccept)) return false;
  m.segment_address = r.Get<std::uint64_t>();
  m.binding.pz = r.Get<std::uint32_t>();
  m.binding.endpoint = r.Get<std::uint64_t>();
  m.ird = r.Get<std::uint32_t>();
  m.ord = r.Get<std::uint32_t>();
  m.activity_slot = r.Get<std::uint32_t>();
  return ReadBool(r, m.attaches) && r.Private(m.private_data) && r.Whole() && ValidSlot(m.activity_slot);
}

bool Decode(std::span<const std::uint8_t> in, Reject& m) {
  Reader r(in);
  if (!r.Head(MessageType::kReject)) return false;
  return ReadBool(r, m.by_consumer) && r.Private(m.private_data) && r.Whole();
}

bool Decode(std::span<const std::uint8_t> in, Ready& m) {
  Reader r(in);
  if (!r.Head(MessageType::kReady)) return false;
  return ReadBool(r, m.attaches) && r.Whole();
}

bool DecodeClose(std::span<const std::uint8_t> in, CloseReason& reason, std::uint32_t& detail) {
  Reader r(in);
  if (!r.Head(MessageType::kClose)) return false;
  const auto raw = r.Get<std::uint8_t>();
  detail = r.Get<std::uint32_t>();
  if (!r.Whole() || raw < 1 || raw > 3) return false;
  reason = static_cast<CloseReason>(raw);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Active side.

Dial ActiveHandshake::Start(in_addr address, std::uint16_t port, const Geometry& geometry,
                            const sockaddr_in& local_address, std::span<const std::uint8_t> private_data,
                            const LocalEnd& local) {
  if (!ValidGeometry(geometry) || local.table == nullptr || private_data.size() > kMaxPrivateData) return Dial::kFailed;
  const Dial dial = DialRendezvous(address, port, socket_);
  if (dial != Dial::kConnected) return dial;
  local_ = local;
  geometry_ = geometry;
  if (!PeerCredentials(socket_.get(), peer_pid_, peer_uid_)) return Dial::kFailed;
  UniqueFd segment_fd;
  if (!CreateSharedMemory("softdat-shm-connection", SegmentBytes(geometry), false, segment_fd, segment_).ok())
    return Dial::kFailed;
  auto* header = reinterpret_cast<SegmentHeader*>(segment_.data());
  header->nonce = Nonce();
  header->version = kLayoutVersion;
  header->ring_bytes[0] = geometry.ring_bytes[0];
  header->ring_bytes[1] = geometry.ring_bytes[1];
  StoreRelease(&header->magic, kSegmentMagic);
  MaybeAllowAttach(local, peer_pid_);

  Request request;
  request.geometry = geometry;
  request.segment_address = reinterpret_cast<std::uint64_t>(segment_.data());
  request.binding = local.binding;
  request.ird = local.ird;
  request.ord = local.ord;
  request.activity_slot = HasActivity(local) ? local.activity_slot : kNoActivitySlot;
  request.address = local_address;
  (void)request.private_data.Assign(private_data);
  std::uint8_t bytes[kMaxMessage];
  const std::size_t length = Encode(request, bytes);
  const int fds[] = {segment_fd.get(), local.table->fd(), HasActivity(local) ? local.activity->fd() : -1};
  if (length == 0 || !SendMessage(socket_.get(), {bytes, length}, std::span<const int>(fds, HasActivity(local) ? 3 : 2)))
    return Dial::kFailed;
  return Dial::kConnected;
}

ActiveHandshake::Step ActiveHandshake::Fail(const char* why) {
  // At the default level: the consumer's dat_ep_connect ends NON_PEER_REJECTED, and this line is
  // all that says why.
  SOFTDAT_LOG(kWarn, "shm: connection setup with process %d failed: %s", static_cast<int>(peer_pid_), why);
  done_ = true;
  socket_.Reset();
  return Step::kFailed;
}

ActiveHandshake::Step ActiveHandshake::OnReadable() {
  if (done_ || !socket_.valid()) return Step::kFailed;
  std::uint8_t bytes[kMaxMessage];
  std::size_t length = 0, fd_count = 0;
  UniqueFd fds[2];
  bool nothing = false;
  if (const char* why = ReceiveHandshake(socket_.get(), bytes, length, fds, fd_count, nothing)) return Fail(why);
  if (nothing) return Step::kPending;
  const std::span<const std::uint8_t> message(bytes, length);
  MessageType type;
  if (!DecodeType(message, type)) return Fail("the answer is no softdat handshake message");
  if (type == MessageType::kReject) {
    if (fd_count != 0 || !Decode(message, reject_)) return Fail("malformed Reject");
    done_ = true;
    socket_.Reset();
    return Step::kRejected;
  }
  Accept accept;
  if (type != MessageType::kAccept || !Decode(message, accept) ||
      fd_count != (accept.activity_slot != kNoActivitySlot ? 2u : 1u))
    return Fail("malformed Accept");
  Established& e = established_;
  if (!KeyTableView::Open(fds[0].get(), e.peer_table).ok()) return Fail("the peer's key table is unusable");
  if (accept.activity_slot != kNoActivitySlot && !ActivityView::Open(fds[1].get(), e.peer_activity).ok())
    return Fail("the peer's activity table is unusable");
  e.peer_activity_slot = accept.activity_slot;
  e.side = kActive;
  e.geometry = geometry_;
  e.peer_binding = accept.binding;
  e.peer_pid = peer_pid_;
  e.peer_uid = peer_uid_;
  e.peer_ird = accept.ird;
  e.peer_ord = accept.ord;
  e.peer_attaches = accept.attaches;
  e.peer_private_data = accept.private_data;
  e.attach = Probe(local_.attach, peer_pid_, accept.segment_address, segment_);
  std::uint8_t ready[64];
  const std::size_t ready_length = Encode(Ready{e.attach}, ready);
  if (!SendMessage(socket_.get(), {ready, ready_length})) return Fail("the Ready could not be sent");
  e.socket = std::move(socket_);
  e.segment = std::move(segment_);
  done_ = true;
  return Step::kEstablished;
}

Established ActiveHandshake::Take() { return std::move(established_); }

// ---------------------------------------------------------------------------------------------
// Passive side.

PassiveHandshake::Step PassiveHandshake::Fail(const char* why) {
  SOFTDAT_LOG(kInfo, "shm: a same-host connection request failed: %s", why);
  phase_ = Phase::kDone;
  socket_.Reset();
  return Step::kFailed;
}

PassiveHandshake::Step PassiveHandshake::OnReadable() {
  if (phase_ == Phase::kDone || phase_ == Phase::kDeciding) return phase_ == Phase::kDone ? Step::kFailed : Step::kRequest;
  std::uint8_t bytes[kMaxMessage];
  std::size_t length = 0, fd_count = 0;
  UniqueFd fds[3];
  bool nothing = false;
  if (const char* why = ReceiveHandshake(socket_.get(), bytes, length, fds, fd_count, nothing)) return Fail(why);
  if (nothing) return Step::kPending;
  const std::span<const std::uint8_t> message(bytes, length);
  Established& e = established_;
  if (!Decode(message, request_) || fd_count != (request_.activity_slot != kNoActivitySlot ? 3u : 2u))
    return Fail("malformed Request");
  if (!PeerCredentials(socket_.get(), e.peer_pid, e.peer_uid)) return Fail("no peer credentials");
  const std::size_t bytes_expected = SegmentBytes(request_.geometry);
  if (!MapPeerMemory(fds[0].get(), bytes_expected, bytes_expected, true, e.segment).ok())
    return Fail("the connection segment is unusable");
  SegmentHeader header;
  std::memcpy(&header, e.segment.data(), sizeof header);
  if (header.magic != kSegmentMagic || header.version != kLayoutVersion ||
      header.ring_bytes[0] != request_.geometry.ring_bytes[0] || header.ring_bytes[1] != request_.geometry.ring_bytes[1])
    return Fail("the connection segment's header disagrees with the Request");
  if (!KeyTableView::Open(fds[1].get(), e.peer_table).ok()) return Fail("the peer's key table is unusable");
  if (request_.activity_slot != kNoActivitySlot && !ActivityView::Open(fds[2].get(), e.peer_activity).ok())
    return Fail("the peer's activity table is unusable");
  e.peer_activity_slot = request_.activity_slot;
  e.side = kPassive;
  e.geometry = request_.geometry;
  e.peer_binding = request_.binding;
  e.peer_ird = request_.ird;
  e.peer_ord = request_.ord;
  e.peer_address = request_.address;
  e.peer_private_data = request_.private_data;
  phase_ = Phase::kDeciding;
  return Step::kRequest;
}

bool PassiveHandshake::AcceptWith(std::span<const std::uint8_t> private_data, const LocalEnd& local) {
  if (phase_ != Phase::kDeciding || local.table == nullptr) return false;
  Established& e = established_;
  Accept accept;
  if (!accept.private_data.Assign(private_data)) return false;
  MaybeAllowAttach(local, e.peer_pid);
  e.attach = Probe(local.attach, e.peer_pid, request_.segment_address, e.segment);
  accept.segment_address = reinterpret_cast<std::uint64_t>(e.segment.data());
  accept.binding = local.binding;
  accept.ird = local.ird;
  accept.ord = local.ord;
  accept.activity_slot = HasActivity(local) ? local.activity_slot : kNoActivitySlot;
  accept.attaches = e.attach;
  std::uint8_t bytes[kMaxMessage];
  const std::size_t length = Encode(accept, bytes);
  const int fds[] = {local.table->fd(), HasActivity(local) ? local.activity->fd() : -1};
  if (length == 0 || !SendMessage(socket_.get(), {bytes, length}, std::span<const int>(fds, HasActivity(local) ? 2 : 1))) {
    (void)Fail("the Accept could not be sent");
    return false;
  }
  // Established as the Accept goes out, as a TCP responder is at its MPA Reply: the Ready comes
  // to the Connection (until then the peer is not known to attach to us: our large Sends go
  // through the ring).
  e.peer_attaches = false;
  e.await_ready = true;
  e.socket = std::move(socket_);
  phase_ = Phase::kDone;
  return true;
}

void PassiveHandshake::RejectWith(bool by_consumer, std::span<const std::uint8_t> private_data) {
  if (phase_ == Phase::kDone) return;
  Reject reject;
  reject.by_consumer = by_consumer;
  (void)reject.private_data.Assign(private_data.subspan(0, std::min(private_data.size(), kMaxPrivateData)));
  std::uint8_t bytes[kMaxMessage];
  const std::size_t length = Encode(reject, bytes);
  if (length != 0) (void)SendMessage(socket_.get(), {bytes, length});
  phase_ = Phase::kDone;
  socket_.Reset();
}

Established PassiveHandshake::Take() { return std::move(established_); }

}  // namespace softdat::transport::shm
