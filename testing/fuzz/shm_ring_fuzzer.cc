// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Fuzz target: a live shared-memory connection (transport/shm) whose peer is hostile. The input
// is the peer: it writes raw bytes and records into the ring we read, pull descriptors naming
// any address, its consumed count, access, ended and pull-refused words, its key table's entries
// and sleep word, messages on the rendezvous socket and its end; meanwhile our side polls, gets
// receive buffers and posts Sends, RDMA Writes and Reads (one-sided ones checked against the
// hostile table). Besides "no crash, leak, hang or undefined behaviour" it checks what the
// engine promises its endpoint (transport/endpoint.h): OnEstablished first, OnEnded once and
// nothing after it, receives in MSN order only for MSNs that took a buffer and never longer than
// it, each Work completed at most once, and no byte placed outside what the peer may reach
// (guard bytes around every receive buffer and the exposed region).
//
// Input: a setup byte (our side, whether we attach and believe the peer pulls, Works posted at
// once, receive buffers at once), a ring-size byte, then actions (see Action below) until the
// input ends; then a bounded number of polls and the endpoint's Detach. No clock decides
// anything (no RNR or close timer; the fence bound is 1 ms), so an input replays the same way.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "transport/shm/handshake.h"
#include "transport/shm/key_table.h"
#include "transport/shm/ring.h"
#include "transport/shm/shm_connection.h"

namespace shm = softdat::transport::shm;
using softdat::Segment;
using softdat::transport::ConnectionEnd;
using softdat::transport::EndpointConfig;
using softdat::transport::EndpointEvents;
using softdat::transport::RecvAcquire;
using softdat::transport::RecvInfo;
using softdat::transport::RecvTarget;
using softdat::transport::RemoteAccess;
using softdat::transport::RemoteCheck;
using softdat::transport::RemoteResolution;
using softdat::transport::Work;
using softdat::transport::WorkKind;
using softdat::transport::WorkStatus;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

constexpr std::size_t kGuard = 64;
constexpr std::uint8_t kGuardByte = 0xC5;
constexpr std::size_t kArena = 1 << 18;
constexpr std::size_t kRegion = 1 << 16;  // exposed to the peer's RDMA (ring Writes, Reads; our one-sided target)
constexpr std::uint32_t kRegionKey = (1u << 8) | 1;
constexpr std::uint32_t kMaxBuffer = 20000;
constexpr int kMaxWorks = 16;

// Receive buffers, the exposed region and our Works' memory, each between guard bytes.
struct Memory {
  Memory() : arena(kArena, kGuardByte) {}
  // `n` bytes between guards, or null when the arena is full.
  std::uint8_t* Take(std::size_t n) {
    const std::size_t start = used + kGuard;
    if (start + n + kGuard > arena.size()) return nullptr;
    std::memset(arena.data() + start, 0, n);
    pieces.push_back({start, n});
    used = start + n;
    return arena.data() + start;
  }
  // Every byte outside the pieces is still a guard byte.
  void CheckGuards() const {
    std::size_t at = 0;
    for (const auto& [start, n] : pieces) {
      for (std::size_t i = at; i < start; ++i) Check(arena[i] == kGuardByte);
      at = start + n;
    }
    for (std::size_t i = at; i < arena.size(); ++i) Check(arena[i] == kGuardByte);
  }
  std::vector<std::uint8_t> arena;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  std::size_t used = 0;
};

// What our endpoint hears, checked against the contract.
class Events final : public EndpointEvents {
 public:
  explicit Events(Memory& memory) : memory_(memory) {}

  void OnEstablished(std::span<const std::uint8_t>) override {
    Check(established_ == 0 && !ended_);
    ++established_;
  }
  void OnEnded(ConnectionEnd, std::span<const std::uint8_t>) override {
    Check(!ended_);
    ended_ = true;
  }
  RecvAcquire AcquireRecv(std::uint32_t msn, RecvTarget& target) override {
    Check(established_ == 1 && !ended_);
    Check(msn == next_msn_);  // the next message, or the held one asked again
    if (buffers_.empty()) return RecvAcquire::kNotReady;
    taken_.push_back(Taken{msn, buffers_.front()});
    target = RecvTarget{{&taken_.back().segment, 1}, taken_.back().segment.length};
    buffers_.pop_front();
    ++next_msn_;
    return RecvAcquire::kTaken;
  }
  void OnRecvDone(std::uint32_t msn, WorkStatus status, const RecvInfo& info) override {
    Check(!ended_ && !taken_.empty());
    Check(taken_.front().msn == msn);  // in MSN order, only for MSNs that took a buffer
    if (status == WorkStatus::kSuccess) Check(info.length <= taken_.front().segment.length);
    taken_.pop_front();
  }
  void OnDeviceRecvDone(std::uint64_t, WorkStatus, const RecvInfo&) override { Check(false); }
  void OnWorkDone(std::uint64_t id, WorkStatus, std::uint32_t) override {
    Check(!ended_ && id < posted_.size() && posted_[id] && !done_[id]);
    done_[id] = true;
    --outstanding_;
  }
  RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                 RemoteAccess) override {
    Check(!ended_);
    if (key != kRegionKey) return {RemoteCheck::kInvalidKey, nullptr};
    const auto base = reinterpret_cast<std::uint64_t>(region_);
    if (address < base || length > kRegion || address - base > kRegion - length) return {RemoteCheck::kBounds, nullptr};
    return {RemoteCheck::kOk, region_ + (address - base)};
  }

  void AddBuffer(std::uint32_t length) {
    std::uint8_t* at = memory_.Take(length);
    if (at != nullptr) buffers_.push_back(Segment{reinterpret_cast<std::uint64_t>(at), length, 1});
  }
  // A Work id for a new post, or -1 when too many are outstanding.
  int NewWork() {
    if (outstanding_ >= kMaxWorks || posted_.size() >= 256) return -1;
    posted_.push_back(true);
    done_.push_back(false);
    ++outstanding_;
    return static_cast<int>(posted_.size() - 1);
  }
  void set_region(std::uint8_t* region) { region_ = region; }
  bool ended() const { return ended_; }
  std::uint32_t next_msn() const { return next_msn_; }

 private:
  struct Taken {
    std::uint32_t msn;
    Segment segment;
  };
  Memory& memory_;
  int established_ = 0;
  bool ended_ = false;
  std::uint32_t next_msn_ = 1;
  std::deque<Segment> buffers_;
  std::deque<Taken> taken_;
  std::vector<bool> posted_, done_;
  int outstanding_ = 0;
  std::uint8_t* region_ = nullptr;
};

// Reads the input front to back; past its end, zeros.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  template <typename T>
  T Get() {
    T value{};
    const std::size_t n = std::min(sizeof(T), size_ - std::min(at_, size_));
    if (n != 0) std::memcpy(&value, data_ + at_, n);
    at_ += sizeof(T);
    return value;
  }
  // Up to `n` bytes (fewer at the input's end).
  std::span<const std::uint8_t> Bytes(std::size_t n) {
    const std::size_t left = size_ - std::min(at_, size_);
    n = std::min(n, left);
    std::span<const std::uint8_t> out(data_ + std::min(at_, size_), n);
    at_ += n;
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

enum class Action : std::uint8_t {
  kRaw,         // u16 offset, u8 n, n bytes: written into the ring we read
  kRecord,      // a record through a well-behaved writer: its header fields, then u16 length and the payload
  kPull,        // u32 msn, u8 flags, u8 count, count × (u64 address, u32 length): a pull record
  kConsumed,    // u64: its consumed count of our ring
  kControl,     // u8 which (access, ended, pull_refused), u64 value
  kEntry,       // u8 slot, 48 bytes: an entry of its key table
  kSocket,      // u8 n, n bytes: one message on the socket (n 0: a doorbell)
  kPoll,        // u8 rounds: we poll
  kBuffer,      // u16 length: a receive buffer for us, and RecvBuffersAvailable
  kPost,        // u8 kind, u16 length: we post a Send, Write or Read
  kEof,         // it shuts its socket
  kSleep,       // u64: its sleep epoch
  kCount,
};

// An address the input names: with A5A5 in its top 16 bits, a place in our exposed region
// (so that pulls and table entries can be right); else as given.
std::uint64_t Remap(std::uint64_t raw, const std::uint8_t* region) {
  if ((raw >> 48) != 0xA5A5) return raw;
  return reinterpret_cast<std::uint64_t>(region) + (raw & 0xFFFF) % kRegion;
}

// The hostile peer's key table: a sealed memfd it writes as it likes (the header valid, so our
// side opens it).
struct HostileTable {
  HostileTable() {
    Check(shm::CreateSharedMemory("hostile-keys", 4096, true, fd, mapping).ok());
    const std::uint64_t magic = 0x31626174736b6473ull;
    const std::uint32_t version = 1, capacity = 16;
    std::memcpy(mapping.data(), &magic, 8);
    std::memcpy(mapping.data() + 8, &version, 4);
    std::memcpy(mapping.data() + 12, &capacity, 4);
  }
  std::uint8_t* entry(std::uint8_t slot) { return mapping.data() + 2 * shm::kLine + (slot % 16) * shm::kLine; }
  std::uint64_t* sleep_word() { return reinterpret_cast<std::uint64_t*>(mapping.data() + shm::kLine); }
  shm::UniqueFd fd;
  shm::Mapping mapping;
};

// Our Works' segments, which live until the input ends.
using WorkSegments = std::deque<Segment>;

void Post(shm::Connection& connection, Events& events, WorkKind kind, std::uint32_t length, Memory& memory,
          std::uint8_t* region, WorkSegments& segments) {
  const int id = events.NewWork();
  if (id < 0) return;
  std::uint8_t* local = memory.Take(length);
  if (local == nullptr) return;
  for (std::uint32_t i = 0; i < length; ++i) local[i] = static_cast<std::uint8_t>(i);
  segments.push_back(Segment{reinterpret_cast<std::uint64_t>(local), length, 1});
  Work work;
  work.id = static_cast<std::uint64_t>(id);
  work.kind = kind;
  work.local = {&segments.back(), 1};
  work.length = length;
  work.remote_key = kRegionKey;
  work.remote_address = reinterpret_cast<std::uint64_t>(region) + (kRegion - length) / 2;
  Check(connection.Post(work).ok());
}

void PollRounds(shm::Connection& connection, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    connection.Poll();
    pollfd p{connection.socket_fd(), POLLIN, 0};
    if (!connection.ended() && ::poll(&p, 1, 0) == 1) connection.OnSocketReadable();
  }
}

void RunOne(Input& in) {
  const std::uint8_t setup = in.Get<std::uint8_t>();
  const std::uint8_t size_byte = in.Get<std::uint8_t>();
  const int side = (setup & 1) ? shm::kPassive : shm::kActive;
  const int peer = 1 - side;
  shm::Geometry geometry;
  geometry.ring_bytes[peer] = 4096u << (size_byte & 3);  // the ring the peer writes, we read
  geometry.ring_bytes[side] = 4096;

  Memory memory;
  WorkSegments segments;
  std::uint8_t* region = memory.Take(kRegion);
  Events events(memory);
  events.set_region(region);

  static std::unique_ptr<shm::KeyTable> our_table;
  if (our_table == nullptr) Check(shm::KeyTable::Create(16, false, our_table).ok());
  HostileTable hostile_table;

  shm::Established e;
  e.side = side;
  e.geometry = geometry;
  shm::UniqueFd segment_fd;
  Check(shm::CreateSharedMemory("fuzz-segment", shm::SegmentBytes(geometry), false, segment_fd, e.segment).ok());
  std::uint8_t* const segment = e.segment.data();
  int sockets[2];
  Check(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sockets) == 0);
  e.socket.Reset(sockets[0]);
  shm::UniqueFd hostile_socket(sockets[1]);
  Check(shm::KeyTableView::Open(hostile_table.fd.get(), e.peer_table).ok());
  e.peer_binding = {1, 22};
  e.peer_pid = ::getpid();
  e.attach = (setup & 2) != 0;
  e.peer_attaches = (setup & 4) != 0;
  e.peer_ird = e.peer_ord = 4;

  EndpointConfig config;
  config.max_send_work = 64;
  config.max_recv_work = 64;
  config.max_send_segments = 4;
  config.max_recv_segments = 4;
  config.max_rdma_read_in = 4;
  config.max_rdma_read_out = 4;
  config.max_message_size = 1u << 30;
  shm::ConnectionOptions options;
  options.fence_bound = std::chrono::milliseconds(1);
  options.pull_threshold = 16 * 1024;
  auto connection = std::make_unique<shm::Connection>(std::move(e), config, options, *our_table, &events, nullptr);

  auto* controls = reinterpret_cast<shm::SideControl*>(segment + shm::kControlOffset);
  shm::SideControl& hostile = controls[peer];
  shm::RingWriter writer;  // the well-behaved writer the input may use
  writer.Attach(segment + shm::RingOffset(geometry, peer), geometry.ring_bytes[peer], &controls[side].consumed);
  std::uint8_t* const inbound = segment + shm::RingOffset(geometry, peer);

  if ((setup & 0x40) == 0) {
    events.AddBuffer(100);
    events.AddBuffer(kMaxBuffer);
  }
  if (setup & 8) Post(*connection, events, WorkKind::kSend, 20000, memory, region, segments);
  if (setup & 16) Post(*connection, events, WorkKind::kRdmaWrite, 3000, memory, region, segments);
  if (setup & 32) Post(*connection, events, WorkKind::kRdmaRead, 3000, memory, region, segments);

  for (int actions = 0; !in.empty() && actions < 512; ++actions) {
    switch (static_cast<Action>(in.Get<std::uint8_t>() % static_cast<std::uint8_t>(Action::kCount))) {
      case Action::kRaw: {
        const std::uint32_t offset = in.Get<std::uint16_t>() % geometry.ring_bytes[peer];
        const auto bytes = in.Bytes(in.Get<std::uint8_t>());
        const std::size_t n = std::min<std::size_t>(bytes.size(), geometry.ring_bytes[peer] - offset);
        std::memcpy(inbound + offset, bytes.data(), n);
        break;
      }
      case Action::kRecord: {
        shm::RecordHeader fields;
        fields.opcode = static_cast<shm::Opcode>(in.Get<std::uint8_t>());
        fields.flags = in.Get<std::uint8_t>();
        fields.segments = in.Get<std::uint16_t>();
        fields.msn = in.Get<std::uint32_t>();
        fields.key = in.Get<std::uint32_t>();
        fields.total = in.Get<std::uint32_t>();
        fields.offset = Remap(in.Get<std::uint64_t>(), region);
        const auto payload = in.Bytes(std::min<std::uint32_t>(in.Get<std::uint16_t>(), writer.max_payload()));
        shm::RecordHeader* header = writer.Begin(static_cast<std::uint32_t>(payload.size()));
        if (header == nullptr) break;
        const std::uint32_t size = header->size;
        *header = fields;
        header->size = size;
        if (!payload.empty()) std::memcpy(shm::RingWriter::Payload(header), payload.data(), payload.size());
        writer.Commit(header, static_cast<std::uint32_t>(payload.size()));
        break;
      }
      case Action::kPull: {
        const std::uint32_t msn = in.Get<std::uint32_t>();
        const std::uint8_t flags = in.Get<std::uint8_t>();
        const std::uint16_t count = in.Get<std::uint8_t>() % (shm::kMaxPullSegments + 2);
        shm::PullSegment pieces[shm::kMaxPullSegments + 2];
        std::uint64_t total = 0;
        for (std::uint16_t i = 0; i < count; ++i) {
          pieces[i].address = Remap(in.Get<std::uint64_t>(), region);
          pieces[i].length = in.Get<std::uint32_t>();
          total += pieces[i].length;
        }
        const std::uint32_t bytes = count * sizeof(shm::PullSegment);
        if (bytes > writer.max_payload()) break;
        shm::RecordHeader* header = writer.Begin(bytes);
        if (header == nullptr) break;
        header->opcode = shm::Opcode::kSendPull;
        header->flags = flags;
        header->segments = count;
        header->msn = msn;
        header->key = 0;
        header->total = static_cast<std::uint32_t>(total);
        header->offset = 0;
        std::memcpy(shm::RingWriter::Payload(header), pieces, bytes);
        writer.Commit(header, bytes);
        break;
      }
      case Action::kConsumed:
        shm::StoreRelease(&hostile.consumed, in.Get<std::uint64_t>());
        break;
      case Action::kControl: {
        const std::uint8_t which = in.Get<std::uint8_t>() % 3;
        const std::uint64_t value = in.Get<std::uint64_t>();
        if (which == 0) shm::StoreRelease(&hostile.access, value);
        if (which == 1) shm::StoreRelease(&hostile.ended, static_cast<std::uint32_t>(value));
        if (which == 2) shm::StoreRelease(&hostile.pull_refused, static_cast<std::uint32_t>(value));
        break;
      }
      case Action::kEntry: {
        std::uint8_t* entry = hostile_table.entry(in.Get<std::uint8_t>());
        const auto bytes = in.Bytes(48);
        std::memcpy(entry, bytes.data(), bytes.size());
        std::uint64_t address;
        std::memcpy(&address, entry + 8, 8);
        address = Remap(address, region);
        std::memcpy(entry + 8, &address, 8);
        break;
      }
      case Action::kSocket: {
        const auto bytes = in.Bytes(in.Get<std::uint8_t>() % 64);
        const std::uint8_t doorbell = 0;
        if (bytes.empty()) {
          (void)::send(hostile_socket.get(), &doorbell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else {
          (void)::send(hostile_socket.get(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        break;
      }
      case Action::kPoll:
        PollRounds(*connection, 1 + in.Get<std::uint8_t>() % 16);
        break;
      case Action::kBuffer:
        events.AddBuffer(1 + in.Get<std::uint16_t>() % kMaxBuffer);
        connection->RecvBuffersAvailable();
        break;
      case Action::kPost: {
        const std::uint8_t kind = in.Get<std::uint8_t>() % 3;
        const std::uint32_t length = in.Get<std::uint16_t>() % 40000;
        Post(*connection, events, kind == 0 ? WorkKind::kSend : kind == 1 ? WorkKind::kRdmaWrite : WorkKind::kRdmaRead,
             length, memory, region, segments);
        break;
      }
      case Action::kEof:
        ::shutdown(hostile_socket.get(), SHUT_RDWR);
        break;
      case Action::kSleep:
        shm::StoreRelease(hostile_table.sleep_word(), in.Get<std::uint64_t>());
        break;
      case Action::kCount:
        break;
    }
  }
  PollRounds(*connection, 64);
  connection->Detach();
  connection.reset();
  memory.CheckGuards();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  RunOne(in);
  return 0;
}
