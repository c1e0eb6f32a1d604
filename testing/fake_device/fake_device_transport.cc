// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The fake device: one process-wide fabric (a lock, the pending device work, listeners by port,
// live endpoints by id, registered regions) and the transport objects that front it. Device work
// runs only in Progress(), with the fabric lock released whenever a core event is called.
#include "testing/fake_device/fake_device_transport.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace softdat::testing::fake_device {
namespace {

using transport::ConnectionEnd;
using transport::WorkStatus;

struct PostedRecv {
  std::uint64_t recv_id = 0;
  std::vector<Segment> segments;
};

struct Message {
  std::uint64_t arrival = 0;  // fabric-wide arrival order
  std::vector<std::uint8_t> bytes;
  bool solicited = false;
  std::uint64_t sender = 0;   // endpoint id
  std::uint64_t work_id = 0;  // the sender's Work, completed once the message is placed
  // An RDMA Write with immediate data: consumes a receive, places nothing in it.
  bool immediate = false;
  std::uint32_t immediate_data = 0;
  std::uint32_t written = 0;
  // A datagram: its sender's address and number (the sender completes at once: no work_id).
  bool datagram = false;
  sockaddr_in source{};
};

// A UD receive buffer starts with room for the 40-byte Global Route Header, as on InfiniBand.
constexpr std::size_t kGrhSize = 40;

// A datagram endpoint's address: its id is its number.
class FakeAddressHandle final : public transport::AddressHandle {
 public:
  FakeAddressHandle(std::uint64_t id, sockaddr_in address) : id_(id), address_(address) {}
  std::uint32_t address() const override { return address_.sin_addr.s_addr; }
  std::uint16_t port() const override { return ntohs(address_.sin_port); }
  std::uint32_t qpn() const override { return static_cast<std::uint32_t>(id_); }
  std::uint64_t id() const { return id_; }

 private:
  std::uint64_t id_;
  sockaddr_in address_;
};

struct Region {
  const FakeDeviceTransport* owner = nullptr;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  transport::MemoryAccess access;
};

class FakeSrq;
class FakeEndpoint;
class FakeListener;

// The live device SRQs (under the fabric lock).
std::vector<FakeSrq*>& AllSrqs();

// Passive sides' ESTABLISHED held back (Behaviour::hold_passive_established), under the fabric lock.
std::vector<std::function<void()>>& HeldEstablished() {
  static auto* held = new std::vector<std::function<void()>>;
  return *held;
}

// Everything shared, under one lock. Core events are never called with `mu` held.
struct Fabric {
  std::mutex mu;
  std::recursive_mutex run;  // held while device work runs; destructors wait for it
  std::deque<std::function<void()>> work;
  std::map<std::uint16_t, FakeListener*> listeners;
  std::map<std::uint16_t, FakeListener*> datagram_listeners;
  std::map<std::uint64_t, FakeEndpoint*> endpoints;
  std::map<std::uint32_t, Region> regions;  // by lkey
  std::uint64_t next_id = 1;
  std::uint64_t next_arrival = 1;
  std::uint32_t next_key = 1;
  std::uint16_t next_port = 40000;
};

Fabric& GetFabric() {
  static Fabric* fabric = new Fabric;
  return *fabric;
}

// Checks `segments` against the regions of `owner`: each must carry a registered lkey of it whose
// region holds the range (and allows local write when the device writes into it).
bool LocalKeysOk(const FakeDeviceTransport* owner, const std::vector<Segment>& segments, bool device_writes) {
  Fabric& fabric = GetFabric();
  for (const Segment& segment : segments) {
    const auto found = fabric.regions.find(segment.key);
    if (found == fabric.regions.end() || found->second.owner != owner) return false;
    const Region& region = found->second;
    if (segment.address < region.address || segment.address + segment.length > region.address + region.length)
      return false;
    if (device_writes && !region.access.local_write) return false;
  }
  return true;
}

const Region* RemoteRegion(const FakeDeviceTransport* owner, std::uint32_t rkey, std::uint64_t address,
                           std::uint64_t length) {
  for (const auto& [lkey, region] : GetFabric().regions) {
    if (region.owner == owner && region.rkey == rkey && address >= region.address &&
        address + length <= region.address + region.length)
      return &region;
  }
  return nullptr;
}

std::vector<std::uint8_t> Gather(const std::vector<Segment>& segments) {
  std::vector<std::uint8_t> bytes;
  for (const Segment& segment : segments) {
    const auto* from = reinterpret_cast<const std::uint8_t*>(segment.address);
    bytes.insert(bytes.end(), from, from + segment.length);
  }
  return bytes;
}

// Scatters `bytes` into `segments`; false if they do not fit.
bool Scatter(const std::vector<std::uint8_t>& bytes, const std::vector<Segment>& segments) {
  std::uint64_t capacity = 0;
  for (const Segment& segment : segments) capacity += segment.length;
  if (bytes.size() > capacity) return false;
  std::size_t at = 0;
  for (const Segment& segment : segments) {
    const std::size_t n = std::min<std::size_t>(segment.length, bytes.size() - at);
    if (n > 0) std::memcpy(reinterpret_cast<void*>(segment.address), bytes.data() + at, n);
    at += n;
  }
  return true;
}

struct RecvReport {
  std::uint64_t recv_id = 0;
  WorkStatus status = WorkStatus::kSuccess;
  transport::RecvInfo info;
};

// Queues OnDeviceRecvDone of endpoint `id` (under the fabric lock): in its receive CQ if it has
// one, else as device work.
void ReportRecvLocked(std::uint64_t id, const RecvReport& report);

// One completion waiting in a completion queue.
struct CqEntry {
  std::uint64_t endpoint = 0;
  bool recv = false;
  std::uint64_t id = 0;  // the Work id or the recv_id
  WorkStatus status = WorkStatus::kSuccess;
  std::uint32_t length = 0;  // a Work's
  transport::RecvInfo info;  // a receive's
};

// A completion queue: a FIFO of completions reported to their endpoints when polled. Armed, the
// next completion makes its eventfd readable once (ibv_req_notify_cq).
class FakeCq final : public transport::CompletionQueue {
 public:
  FakeCq(const FakeDeviceTransport* owner, std::uint32_t entries);
  ~FakeCq() override;

  std::uint32_t Poll(std::uint32_t max) noexcept override;
  void Arm() noexcept override;
  int wait_fd() const noexcept override { return fd_; }
  void TakeNotifications() noexcept override {
    std::uint64_t count;
    [[maybe_unused]] const ssize_t n = read(fd_, &count, sizeof count);
  }
  void SetWatched(bool watched) override;
  Status Resize(std::uint32_t entries) override {
    capacity_ = std::max(capacity_, entries);
    return Status::Ok();
  }
  std::uint32_t capacity() const override { return capacity_; }

  // Under the fabric lock. A full queue drops the completion, as a device's CQ overflows; the
  // next poll reports it (a device raises IBV_EVENT_CQ_ERR).
  void PushLocked(const CqEntry& entry) {
    if (entries_.size() >= capacity_) {
      overflowed_ = true;
      return;
    }
    entries_.push_back(entry);
    if (armed_) {
      armed_ = false;
      const std::uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = write(fd_, &one, sizeof one);
    }
  }
  // Moves every completion of `endpoint` to `out`, in order.
  void TakeAllOfLocked(std::uint64_t endpoint, std::vector<CqEntry>& out) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->endpoint == endpoint) {
        out.push_back(*it);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  const FakeDeviceTransport* owner() const { return owner_; }
  bool watched() const { return watched_; }
  std::size_t size() const { return entries_.size(); }
  std::size_t polls() const { return polls_.load(); }

 private:
  const FakeDeviceTransport* owner_;
  std::uint32_t capacity_;
  int fd_;
  std::deque<CqEntry> entries_;
  bool overflowed_ = false;  // under the fabric lock: dropped completions not reported yet
  bool armed_ = false;
  bool watched_ = false;
  std::atomic<bool> polling_{false};
  std::atomic<std::size_t> polls_{0};
};

// The live completion queues (under the fabric lock).
std::vector<FakeCq*>& AllCqs() {
  static auto* cqs = new std::vector<FakeCq*>;
  return *cqs;
}

// Reports one completion to its endpoint's events and delivers it in the same step (no lock
// held), as the verbs transport does.
void Report(transport::EndpointEvents* events, const CqEntry& entry) {
  if (entry.recv)
    events->DeliverDeviceRecv(entry.id, entry.status, entry.info);
  else
    events->DeliverWorkDone(entry.id, entry.status, entry.length);
}

class FakePd final : public transport::ProtectionDomain {};

class FakeRegion final : public transport::MemoryRegion {
 public:
  FakeRegion(std::uint32_t lkey, std::uint32_t rkey) : lkey_(lkey), rkey_(rkey) {}
  ~FakeRegion() override {
    Fabric& fabric = GetFabric();
    std::lock_guard lock(fabric.mu);
    fabric.regions.erase(lkey_);
  }
  std::uint32_t local_key() const override { return lkey_; }
  std::uint32_t remote_key() const override { return rkey_; }

 private:
  std::uint32_t lkey_;
  std::uint32_t rkey_;
};

class FakeSrq final : public transport::DeviceSrq {
 public:
  FakeSrq(FakeDeviceTransport* owner, std::uint32_t max_work, std::uint32_t max_segments,
          transport::DeviceSrqEvents* events)
      : owner_(owner), max_work_(max_work), max_segments_(max_segments), events_(events) {}
  ~FakeSrq() override;

  Status PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) override;
  Status ArmLimit(std::uint32_t limit) override {
    std::lock_guard lock(GetFabric().mu);
    if (owner_->behaviour().refuse_limit_below_depth && limit != 0 && buffers_.size() < limit)
      return Status(Code::kInvalidParameter, Detail::kParamLowWatermark);
    limit_ = limit;
    if (limit_ != 0 && buffers_.size() < limit_) FireLimitLocked();
    return Status::Ok();
  }
  Status Resize(std::uint32_t max_work) override {
    std::lock_guard lock(GetFabric().mu);
    if (owner_->behaviour().refuse_srq_resize) return Status(Code::kModelNotSupported);
    if (max_work > owner_->capabilities().max_srq_work) return Status(Code::kInsufficientResources);
    max_work_ = std::max(max_work_, max_work);
    return Status::Ok();
  }

  // Under the fabric lock.
  bool HasBuffer() const { return !buffers_.empty(); }
  PostedRecv PopLocked() {
    PostedRecv buffer = std::move(buffers_.front());
    buffers_.pop_front();
    if (limit_ != 0 && buffers_.size() < limit_) FireLimitLocked();
    return buffer;
  }
  std::size_t depth() const { return buffers_.size(); }
  const FakeDeviceTransport* owner() const { return owner_; }

 private:
  // The device disarms itself and reports once (the event runs later, from Progress).
  void FireLimitLocked() {
    limit_ = 0;
    GetFabric().work.push_back([this] {
      transport::DeviceSrqEvents* events = nullptr;
      {
        std::lock_guard lock(GetFabric().mu);
        if (std::find(AllSrqs().begin(), AllSrqs().end(), this) == AllSrqs().end()) return;
        events = events_;
      }
      events->OnLimitReached();
    });
  }

  FakeDeviceTransport* owner_;
  std::uint32_t max_work_;
  std::uint32_t max_segments_;
  transport::DeviceSrqEvents* events_;
  std::deque<PostedRecv> buffers_;
  std::uint32_t limit_ = 0;
};

std::vector<FakeSrq*>& AllSrqs() {
  static auto* srqs = new std::vector<FakeSrq*>;
  return *srqs;
}

FakeSrq::~FakeSrq() {
  Fabric& fabric = GetFabric();
  std::lock_guard run(fabric.run);
  std::lock_guard lock(fabric.mu);
  std::erase(AllSrqs(), this);
}

class FakeEndpoint final : public transport::Endpoint {
 public:
  FakeEndpoint(FakeDeviceTransport* owner, const transport::EndpointConfig& config,
               transport::EndpointEvents* events)
      : owner_(owner), srq_(static_cast<FakeSrq*>(config.srq)), max_recv_(config.max_recv_work),
        datagram_(config.datagram), events_(events), send_cq_(static_cast<FakeCq*>(config.send_cq)),
        recv_cq_(static_cast<FakeCq*>(config.recv_cq)) {
    Fabric& fabric = GetFabric();
    std::lock_guard lock(fabric.mu);
    id_ = fabric.next_id++;
    fabric.endpoints[id_] = this;
    local_ = owner_->address();
    local_.sin_port = htons(static_cast<std::uint16_t>(20000 + id_));
  }
  ~FakeEndpoint() override;

  Status Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us) override;
  Status Post(const transport::Work& work) override;
  Status Resolve(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us, std::uint64_t request) override;
  Status PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) override;
  void RecvBuffersAvailable() override {}
  void SetCompletionQueues(transport::CompletionQueue* send_cq, transport::CompletionQueue* recv_cq) override {
    std::lock_guard lock(GetFabric().mu);
    send_cq_ = static_cast<FakeCq*>(send_cq);
    recv_cq_ = static_cast<FakeCq*>(recv_cq);
  }
  void Disconnect(bool graceful) override;
  sockaddr_in local_address() const override {
    if (std::function<void()> hook = std::exchange(owner_->behaviour().on_local_address, nullptr)) hook();
    return local_;
  }
  sockaddr_in remote_address() const override { return remote_; }

  std::uint64_t id() const { return id_; }
  bool datagram() const { return datagram_; }
  sockaddr_in address() const { return local_; }

  // Fabric-lock helpers, used by the work steps.
  static FakeEndpoint* FindLocked(std::uint64_t id) {
    const auto found = GetFabric().endpoints.find(id);
    return found == GetFabric().endpoints.end() ? nullptr : found->second;
  }
  void Pair(FakeEndpoint& peer) {
    peer_ = peer.id_;
    connected_ = true;
    local_ = owner_->address();
    local_.sin_port = htons(static_cast<std::uint16_t>(20000 + id_));
    remote_ = peer.owner_->address();
    remote_.sin_port = htons(static_cast<std::uint16_t>(20000 + peer.id_));
  }
  // Ends this side (once): queues its flushes (if the behaviour says so) and OnEnded.
  void EndLocked(ConnectionEnd why, std::vector<std::uint8_t> private_data = {});
  bool attempt() const { return attempt_ && !ended_; }

  // Matches waiting messages with receive buffers, oldest arrival first across all endpoints.
  static void DeliverLocked();

  // Reports what was held back (Behaviour::hold_receive_completions).
  void ReleaseHeldLocked() {
    for (const RecvReport& report : held_) ReportRecvLocked(id_, report);
    held_.clear();
  }
  const FakeDeviceTransport* owner() const { return owner_; }
  bool connected() const { return connected_; }
  transport::EndpointEvents* events() const { return events_; }
  // A finished Work of this endpoint: into its send CQ if it has one (true), else the caller
  // reports it (false).
  bool QueueWorkDoneLocked(std::uint64_t work_id, WorkStatus status, std::uint32_t length) {
    if (send_cq_ == nullptr) return false;
    send_cq_->PushLocked(CqEntry{id_, false, work_id, status, length, {}});
    return true;
  }
  // What this endpoint's CQs still hold, taken out (reported before OnEnded: nothing after it).
  std::vector<CqEntry> TakeQueuedLocked() {
    std::vector<CqEntry> entries;
    for (FakeCq* cq : {send_cq_, recv_cq_})
      if (cq != nullptr && std::find(AllCqs().begin(), AllCqs().end(), cq) != AllCqs().end())
        cq->TakeAllOfLocked(id_, entries);
    return entries;
  }

 private:
  friend class FakePending;
  friend class FakeDatagramPending;
  friend void ReportRecvLocked(std::uint64_t id, const RecvReport& report);

  // The work of one posted extension Work (fabric lock held); false when it completes later.
  bool RunAtomicLocked(const transport::Work& work, const std::vector<Segment>& local, WorkStatus& status);
  void SendDatagramLocked(const transport::Work& work, const std::vector<Segment>& local);

  FakeDeviceTransport* owner_;
  FakeSrq* srq_;
  std::uint32_t max_recv_;
  bool datagram_ = false;
  transport::EndpointEvents* events_;
  FakeCq* send_cq_;
  FakeCq* recv_cq_;
  std::uint64_t id_ = 0;
  std::uint64_t peer_ = 0;
  bool attempt_ = false;  // Connect or Accept happened
  bool connected_ = false;
  bool ended_ = false;
  std::deque<PostedRecv> rq_;
  std::deque<Message> inbound_;
  std::deque<RecvReport> held_;  // consumed, completion not reported yet
  sockaddr_in local_{};
  sockaddr_in remote_{};
};

class FakeListener final : public transport::Listener {
 public:
  FakeListener(std::uint16_t port, transport::ListenEvents* events, bool datagram = false)
      : port_(port), events_(events), datagram_(datagram) {}
  ~FakeListener() override {
    Fabric& fabric = GetFabric();
    std::lock_guard run(fabric.run);
    std::lock_guard lock(fabric.mu);
    (datagram_ ? fabric.datagram_listeners : fabric.listeners).erase(port_);
  }
  std::uint16_t port() const override { return port_; }
  transport::ListenEvents* events() const { return events_; }

 private:
  std::uint16_t port_;
  transport::ListenEvents* events_;
  bool datagram_;
};

class FakePending final : public transport::PendingConnection {
 public:
  FakePending(std::uint64_t active, std::vector<std::uint8_t> private_data, sockaddr_in remote, sockaddr_in local)
      : active_(active), private_data_(std::move(private_data)), remote_(remote), local_(local) {}
  ~FakePending() override {
    if (answered_) return;
    Fabric& fabric = GetFabric();
    std::lock_guard lock(fabric.mu);
    if (FakeEndpoint* active = FakeEndpoint::FindLocked(active_)) active->EndLocked(ConnectionEnd::kNonPeerRejected);
  }
  std::span<const std::uint8_t> private_data() const override { return private_data_; }
  sockaddr_in remote_address() const override { return remote_; }
  sockaddr_in local_address() const override { return local_; }

  Status Accept(transport::Endpoint& endpoint, std::span<const std::uint8_t> private_data) override {
    auto& passive = static_cast<FakeEndpoint&>(endpoint);
    Fabric& fabric = GetFabric();
    std::lock_guard lock(fabric.mu);
    if (answered_ || passive.attempt_) return Status(Code::kInvalidState);
    answered_ = true;
    passive.attempt_ = true;
    FakeEndpoint* active = FakeEndpoint::FindLocked(active_);
    if (active == nullptr || active->ended_) {
      passive.EndLocked(ConnectionEnd::kAcceptFailed);
      return Status::Ok();
    }
    active->Pair(passive);
    passive.Pair(*active);
    const std::uint64_t active_id = active->id_;
    const std::uint64_t passive_id = passive.id_;
    std::vector<std::uint8_t> reply(private_data.begin(), private_data.end());
    if (passive.owner_->behaviour().hold_passive_established)
      HeldEstablished().push_back([passive_id] { Established(passive_id, {}); });
    else
      fabric.work.push_back([passive_id] { Established(passive_id, {}); });
    fabric.work.push_back([active_id, reply] { Established(active_id, reply); });
    return Status::Ok();
  }
  void Reject(std::span<const std::uint8_t> private_data) override {
    Fabric& fabric = GetFabric();
    std::lock_guard lock(fabric.mu);
    if (answered_) return;
    answered_ = true;
    if (FakeEndpoint* active = FakeEndpoint::FindLocked(active_))
      active->EndLocked(ConnectionEnd::kPeerRejected, {private_data.begin(), private_data.end()});
  }

 public:
  static void Established(std::uint64_t id, std::vector<std::uint8_t> private_data) {
    transport::EndpointEvents* events = nullptr;
    {
      std::lock_guard lock(GetFabric().mu);
      FakeEndpoint* endpoint = FakeEndpoint::FindLocked(id);
      if (endpoint == nullptr || endpoint->ended_) return;
      events = endpoint->events_;
    }
    events->OnEstablished(private_data);
    events->Deliver();  // the fabric lock is released (EndpointEvents::Deliver)
  }

  std::uint64_t active_;
  std::vector<std::uint8_t> private_data_;
  sockaddr_in remote_;
  sockaddr_in local_;
  bool answered_ = false;
};

// A datagram endpoint's Resolve, waiting at a datagram listener for the consumer's answer.
class FakeDatagramPending final : public transport::PendingConnection {
 public:
  FakeDatagramPending(std::uint64_t requester, std::uint64_t request, std::vector<std::uint8_t> private_data,
                      sockaddr_in remote, sockaddr_in local)
      : requester_(requester), request_(request), private_data_(std::move(private_data)), remote_(remote),
        local_(local) {}
  ~FakeDatagramPending() override {
    if (!answered_) Answer(transport::ConnectionEnd::kNonPeerRejected, {}, nullptr);
  }
  std::span<const std::uint8_t> private_data() const override { return private_data_; }
  sockaddr_in remote_address() const override { return remote_; }
  sockaddr_in local_address() const override { return local_; }
  bool datagram() const override { return true; }
  Status Accept(transport::Endpoint&, std::span<const std::uint8_t>) override { return Status(Code::kInvalidParameter); }
  Status AcceptDatagram(transport::Endpoint& endpoint, std::span<const std::uint8_t> private_data,
                        std::unique_ptr<transport::AddressHandle>& requester) override {
    auto& accepting = static_cast<FakeEndpoint&>(endpoint);
    if (answered_ || !accepting.datagram()) return Status(Code::kInvalidState);
    answered_ = true;
    requester = std::make_unique<FakeAddressHandle>(requester_, remote_);
    Answer(transport::ConnectionEnd::kDisconnected, private_data,
           std::make_unique<FakeAddressHandle>(accepting.id(), accepting.address()));
    return Status::Ok();
  }
  void Reject(std::span<const std::uint8_t> private_data) override {
    if (answered_) return;
    answered_ = true;
    Answer(transport::ConnectionEnd::kPeerRejected, private_data, nullptr);
  }

 private:
  // Queues the requester's OnResolved (with `peer`) or OnResolveFailed (`why`).
  void Answer(transport::ConnectionEnd why, std::span<const std::uint8_t> private_data,
              std::unique_ptr<transport::AddressHandle> peer) {
    Fabric& fabric = GetFabric();
    std::lock_guard lock(fabric.mu);
    auto shared = std::make_shared<std::unique_ptr<transport::AddressHandle>>(std::move(peer));
    fabric.work.push_back([requester = requester_, request = request_, why, shared,
                           data = std::vector<std::uint8_t>(private_data.begin(), private_data.end())] {
      transport::EndpointEvents* events = nullptr;
      {
        std::lock_guard lock(GetFabric().mu);
        FakeEndpoint* endpoint = FakeEndpoint::FindLocked(requester);
        if (endpoint == nullptr) return;
        events = endpoint->events_;
      }
      if (*shared != nullptr) {
        events->OnResolved(request, std::move(*shared), data);
      } else {
        events->OnResolveFailed(request, why, data);
      }
      events->Deliver();  // the fabric lock is released (EndpointEvents::Deliver)
    });
  }

  std::uint64_t requester_;
  std::uint64_t request_;
  std::vector<std::uint8_t> private_data_;
  sockaddr_in remote_;
  sockaddr_in local_;
  bool answered_ = false;
};

FakeEndpoint::~FakeEndpoint() {
  Fabric& fabric = GetFabric();
  std::lock_guard run(fabric.run);
  std::lock_guard lock(fabric.mu);
  if (connected_ && !ended_) {
    if (FakeEndpoint* peer = FindLocked(peer_)) peer->EndLocked(ConnectionEnd::kBroken);
  }
  fabric.endpoints.erase(id_);
}

void FakeEndpoint::EndLocked(ConnectionEnd why, std::vector<std::uint8_t> private_data) {
  if (ended_) return;
  ended_ = true;
  connected_ = false;
  Fabric& fabric = GetFabric();
  const std::uint64_t id = id_;
  // A buffer the device consumed for a message it never completed is flushed to this endpoint,
  // whether it came from its own queue or from an SRQ.
  for (const RecvReport& report : held_) ReportRecvLocked(id, RecvReport{report.recv_id, WorkStatus::kFlushed, {}});
  held_.clear();
  if (owner_->behaviour().flush_receives_before_end) {
    for (const PostedRecv& buffer : rq_) ReportRecvLocked(id, RecvReport{buffer.recv_id, WorkStatus::kFlushed, {}});
  }
  rq_.clear();
  // Messages that never found a buffer are lost with the connection; their senders are flushed
  // by their own end.
  inbound_.clear();
  fabric.work.push_back([id, why, private_data] {
    transport::EndpointEvents* events = nullptr;
    std::vector<CqEntry> queued;
    {
      std::lock_guard lock(GetFabric().mu);
      FakeEndpoint* endpoint = FindLocked(id);
      if (endpoint == nullptr) return;
      events = endpoint->events_;
      queued = endpoint->TakeQueuedLocked();
    }
    for (const CqEntry& entry : queued) Report(events, entry);
    events->OnEnded(why, private_data);
    events->Deliver();  // the fabric lock is released (EndpointEvents::Deliver)
  });
}

Status FakeEndpoint::Connect(const sockaddr_in& remote, std::uint16_t port,
                             std::span<const std::uint8_t> private_data, std::uint64_t) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  if (attempt_) return Status(Code::kInvalidState);
  attempt_ = true;
  const auto listener = fabric.listeners.find(port);
  if (listener == fabric.listeners.end()) {
    EndLocked(ConnectionEnd::kUnreachable);
    return Status::Ok();
  }
  sockaddr_in local = owner_->address();
  local.sin_port = htons(static_cast<std::uint16_t>(20000 + id_));
  sockaddr_in to = remote;
  to.sin_port = htons(port);
  auto pending = std::make_shared<std::unique_ptr<transport::PendingConnection>>(std::make_unique<FakePending>(
      id_, std::vector<std::uint8_t>(private_data.begin(), private_data.end()), local, to));
  fabric.work.push_back([port, pending] {
    transport::ListenEvents* events = nullptr;
    {
      std::lock_guard lock(GetFabric().mu);
      const auto found = GetFabric().listeners.find(port);
      if (found == GetFabric().listeners.end()) return;  // the pending connection refuses
      events = found->second->events();
    }
    events->OnConnectRequest(std::move(*pending));
  });
  return Status::Ok();
}

Status FakeEndpoint::Resolve(const sockaddr_in& remote, std::uint16_t port,
                             std::span<const std::uint8_t> private_data, std::uint64_t, std::uint64_t request) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  if (!datagram_ || ended_) return Status(Code::kInvalidState);
  sockaddr_in to = remote;
  to.sin_port = htons(port);
  auto pending = std::make_shared<std::unique_ptr<transport::PendingConnection>>(std::make_unique<FakeDatagramPending>(
      id_, request, std::vector<std::uint8_t>(private_data.begin(), private_data.end()), local_, to));
  fabric.work.push_back([port, pending] {
    transport::ListenEvents* events = nullptr;
    {
      std::lock_guard lock(GetFabric().mu);
      const auto found = GetFabric().datagram_listeners.find(port);
      if (found != GetFabric().datagram_listeners.end()) events = found->second->events();
    }
    // Nobody listens: the request is refused when it goes (kNonPeerRejected), as a SIDR REQ that
    // no service answers is.
    if (events != nullptr) events->OnConnectRequest(std::move(*pending));
  });
  return Status::Ok();
}

Status FakeEndpoint::PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  if (srq_ != nullptr || ended_) return Status(Code::kInvalidState);
  if (rq_.size() >= std::max<std::uint32_t>(max_recv_, 1)) return Status(Code::kInsufficientResources);
  rq_.push_back(PostedRecv{recv_id, {segments.begin(), segments.end()}});
  fabric.work.push_back([] {
    std::lock_guard lock(GetFabric().mu);
    DeliverLocked();
  });
  return Status::Ok();
}

Status FakeSrq::PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  if (segments.size() > std::max<std::uint32_t>(max_segments_, 1) || buffers_.size() >= max_work_)
    return Status(Code::kInsufficientResources);
  buffers_.push_back(PostedRecv{recv_id, {segments.begin(), segments.end()}});
  fabric.work.push_back([] {
    std::lock_guard lock(GetFabric().mu);
    FakeEndpoint::DeliverLocked();
  });
  return Status::Ok();
}

void FakeEndpoint::Disconnect(bool) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  if (datagram_ && !ended_) {
    EndLocked(ConnectionEnd::kDisconnected);  // no peer to tell
    return;
  }
  if (ended_ || !attempt_) return;
  if (owner_->behaviour().peer_resets_at_disconnect && connected_) {
    FakeEndpoint* other = FindLocked(peer_);
    EndLocked(ConnectionEnd::kBroken);
    if (other != nullptr) other->EndLocked(ConnectionEnd::kBroken);
    return;
  }
  // Behind the work already queued, as a NIC finishes what was posted before the disconnect.
  const std::uint64_t id = id_;
  fabric.work.push_back([id] {
    std::lock_guard lock(GetFabric().mu);
    FakeEndpoint* self = FindLocked(id);
    if (self == nullptr || self->ended_) return;
    const std::uint64_t peer = self->connected_ ? self->peer_ : 0;
    self->EndLocked(ConnectionEnd::kDisconnected);
    if (peer != 0) {
      if (FakeEndpoint* other = FindLocked(peer)) other->EndLocked(ConnectionEnd::kDisconnected);
    }
  });
}

Status FakeEndpoint::Post(const transport::Work& work) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  if ((!connected_ && !datagram_) || ended_) return Status(Code::kInvalidState);
  if ((work.kind == transport::WorkKind::kSendDatagram) != datagram_) return Status(Code::kInvalidParameter);
  if (work.quiet_success) owner_->CountQuietPost();
  const std::uint64_t id = id_;
  transport::Work copy = work;
  std::vector<Segment> local(work.local.begin(), work.local.end());
  fabric.work.push_back([id, copy, local] {
    Fabric& fabric = GetFabric();
    transport::EndpointEvents* events = nullptr;
    WorkStatus status = WorkStatus::kSuccess;
    std::uint32_t length = static_cast<std::uint32_t>(copy.length);
    {
      std::lock_guard lock(fabric.mu);
      FakeEndpoint* self = FindLocked(id);
      if (self == nullptr || self->ended_) return;
      events = self->events_;
      const bool atomic =
          copy.kind == transport::WorkKind::kFetchAdd || copy.kind == transport::WorkKind::kCompareSwap;
      const bool read = copy.kind == transport::WorkKind::kRdmaRead;
      FakeEndpoint* peer = self->datagram_ ? nullptr : FindLocked(self->peer_);
      if (!self->datagram_ && peer == nullptr) return;
      if (!LocalKeysOk(self->owner_, local, read || atomic)) {
        status = WorkStatus::kLocalProtection;
      } else if (copy.kind == transport::WorkKind::kSendDatagram) {
        self->SendDatagramLocked(copy, local);  // the service allows loss: done once it left
      } else if (atomic) {
        self->RunAtomicLocked(copy, local, status);
      } else if (copy.kind == transport::WorkKind::kSend) {
        peer->inbound_.push_back(Message{fabric.next_arrival++, Gather(local), copy.solicited, id, copy.id});
        DeliverLocked();
        return;  // completes when placed
      } else {
        const Region* region = RemoteRegion(peer->owner_, copy.remote_key, copy.remote_address, copy.length);
        const bool allowed = region != nullptr && (read ? region->access.remote_read : region->access.remote_write);
        if (!allowed) {
          status = WorkStatus::kRemoteAccess;
        } else if (read) {
          std::vector<std::uint8_t> bytes(copy.length);
          std::memcpy(bytes.data(), reinterpret_cast<const void*>(copy.remote_address), copy.length);
          Scatter(bytes, local);
        } else {
          const std::vector<std::uint8_t> bytes = Gather(local);
          std::memcpy(reinterpret_cast<void*>(copy.remote_address), bytes.data(), bytes.size());
          if (copy.kind == transport::WorkKind::kRdmaWriteImmediate) {
            // The immediate takes the peer's next receive; the Write completes when it is placed.
            Message message{fabric.next_arrival++, {}, copy.solicited, id, copy.id};
            message.immediate = true;
            message.immediate_data = copy.immediate;
            message.written = static_cast<std::uint32_t>(copy.length);
            peer->inbound_.push_back(std::move(message));
            DeliverLocked();
            return;
          }
        }
      }
      if (status != WorkStatus::kSuccess) length = 0;
      if (self->QueueWorkDoneLocked(copy.id, status, length)) return;
    }
    events->OnWorkDone(copy.id, status, length);
    events->Deliver();  // the fabric lock is released (EndpointEvents::Deliver)
  });
  return Status::Ok();
}

// A 64-bit atomic at the peer: checked as an RNIC's responder checks it (rkey, bounds, the atomic
// right, natural alignment; any violation is a remote access error), done with an atomic
// instruction, the original value into the 8 local bytes.
bool FakeEndpoint::RunAtomicLocked(const transport::Work& work, const std::vector<Segment>& local,
                                   WorkStatus& status) {
  FakeEndpoint* peer = FindLocked(peer_);
  const Region* region = RemoteRegion(peer->owner_, work.remote_key, work.remote_address, 8);
  if (region == nullptr || !region->access.remote_atomic || work.remote_address % 8 != 0 || local.empty() ||
      local[0].length < 8) {
    status = WorkStatus::kRemoteAccess;
    return true;
  }
  std::atomic_ref<std::uint64_t> target(*reinterpret_cast<std::uint64_t*>(work.remote_address));
  std::uint64_t original;
  if (work.kind == transport::WorkKind::kFetchAdd) {
    original = target.fetch_add(work.compare_add);
  } else {
    original = work.compare_add;
    target.compare_exchange_strong(original, work.swap);  // on a mismatch, `original` is what it held
  }
  std::memcpy(reinterpret_cast<void*>(local[0].address), &original, sizeof original);
  return true;
}

// A datagram to the endpoint `work.destination` names: it takes that endpoint's next receive
// buffer now, or is dropped (no buffer, no such endpoint: UD allows loss).
void FakeEndpoint::SendDatagramLocked(const transport::Work& work, const std::vector<Segment>& local) {
  const auto* to = static_cast<const FakeAddressHandle*>(work.destination);
  FakeEndpoint* target = FindLocked(to->id());
  if (target == nullptr || !target->datagram_ || target->ended_ || target->rq_.empty()) return;
  Message message{GetFabric().next_arrival++, std::vector<std::uint8_t>(kGrhSize, 0), false, id_, 0};
  const std::vector<std::uint8_t> payload = Gather(local);
  message.bytes.insert(message.bytes.end(), payload.begin(), payload.end());
  message.datagram = true;
  message.source = local_;
  target->inbound_.push_back(std::move(message));
  DeliverLocked();
}

void FakeEndpoint::DeliverLocked() {
  Fabric& fabric = GetFabric();
  for (;;) {
    FakeEndpoint* best = nullptr;
    for (auto& [id, endpoint] : fabric.endpoints) {
      if (endpoint->inbound_.empty() || endpoint->ended_) continue;
      const bool has_buffer = endpoint->srq_ != nullptr ? endpoint->srq_->HasBuffer() : !endpoint->rq_.empty();
      if (!has_buffer) continue;
      if (best == nullptr || endpoint->inbound_.front().arrival < best->inbound_.front().arrival) best = endpoint;
    }
    if (best == nullptr) return;
    Message message = std::move(best->inbound_.front());
    best->inbound_.pop_front();
    PostedRecv buffer;
    if (best->srq_ != nullptr) {
      buffer = best->srq_->PopLocked();
    } else {
      buffer = std::move(best->rq_.front());
      best->rq_.pop_front();
    }
    WorkStatus status = WorkStatus::kSuccess;
    if (!LocalKeysOk(best->owner_, buffer.segments, true)) {
      status = WorkStatus::kLocalProtection;
    } else if (!Scatter(message.bytes, buffer.segments)) {
      status = WorkStatus::kLocalLength;
    }
    transport::RecvInfo info;
    info.length = status == WorkStatus::kSuccess ? static_cast<std::uint32_t>(message.bytes.size()) : 0;
    info.solicited = message.solicited;
    info.extension.immediate = message.immediate;
    info.extension.immediate_data = message.immediate_data;
    info.extension.written = message.written;
    if (message.datagram) {
      info.extension.source_address = message.source.sin_addr.s_addr;
      info.extension.source_port = ntohs(message.source.sin_port);
      info.extension.source_qpn = static_cast<std::uint32_t>(message.sender);
    }
    const RecvReport report{buffer.recv_id, status, info};
    if (best->owner_->behaviour().hold_receive_completions) {
      best->held_.push_back(report);
    } else {
      ReportRecvLocked(best->id_, report);
    }
    if (message.datagram) continue;  // its sender completed when it left
    const std::uint64_t sender = message.sender;
    const std::uint64_t work_id = message.work_id;
    const auto length = message.immediate ? message.written : static_cast<std::uint32_t>(message.bytes.size());
    const WorkStatus sent = status == WorkStatus::kSuccess ? WorkStatus::kSuccess : WorkStatus::kRemoteResponder;
    fabric.work.push_back([sender, work_id, sent, length] {
      transport::EndpointEvents* events = nullptr;
      {
        std::lock_guard lock(GetFabric().mu);
        FakeEndpoint* endpoint = FindLocked(sender);
        if (endpoint == nullptr || endpoint->QueueWorkDoneLocked(work_id, sent, length)) return;
        events = endpoint->events_;
      }
      events->OnWorkDone(work_id, sent, length);
      events->Deliver();  // the fabric lock is released (EndpointEvents::Deliver)
    });
  }
}

void ReportRecvLocked(std::uint64_t id, const RecvReport& report) {
  if (FakeEndpoint* endpoint = FakeEndpoint::FindLocked(id); endpoint != nullptr && endpoint->recv_cq_ != nullptr) {
    endpoint->recv_cq_->PushLocked(CqEntry{id, true, report.recv_id, report.status, 0, report.info});
    return;
  }
  GetFabric().work.push_back([id, report] {
    transport::EndpointEvents* events = nullptr;
    {
      std::lock_guard lock(GetFabric().mu);
      FakeEndpoint* endpoint = FakeEndpoint::FindLocked(id);
      if (endpoint == nullptr) return;
      events = endpoint->events_;
    }
    events->OnDeviceRecvDone(report.recv_id, report.status, report.info);
    events->Deliver();  // the fabric lock is released (EndpointEvents::Deliver)
  });
}

FakeCq::FakeCq(const FakeDeviceTransport* owner, std::uint32_t entries)
    : owner_(owner), capacity_(entries), fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  std::lock_guard lock(GetFabric().mu);
  AllCqs().push_back(this);
}

FakeCq::~FakeCq() {
  Fabric& fabric = GetFabric();
  std::lock_guard run(fabric.run);
  {
    std::lock_guard lock(fabric.mu);
    std::erase(AllCqs(), this);
  }
  close(fd_);
}

std::uint32_t FakeCq::Poll(std::uint32_t max) noexcept {
  // One poller at a time, and none from inside an event of this queue: the events of an
  // endpoint keep their order. Destructors wait on `run`, so an endpoint found here stays.
  Fabric& fabric = GetFabric();
  std::unique_lock run(fabric.run, std::try_to_lock);
  if (!run.owns_lock() || polling_.exchange(true)) return 0;
  polls_.fetch_add(1);
  bool overflowed;
  {
    std::lock_guard lock(fabric.mu);
    overflowed = std::exchange(overflowed_, false);
  }
  if (overflowed) ReportOverflow();
  std::uint32_t taken = 0;
  while (taken < max) {
    CqEntry entry;
    transport::EndpointEvents* events = nullptr;
    {
      std::lock_guard lock(fabric.mu);
      if (entries_.empty()) break;
      entry = entries_.front();
      entries_.pop_front();
      if (FakeEndpoint* endpoint = FakeEndpoint::FindLocked(entry.endpoint)) events = endpoint->events();
    }
    ++taken;
    if (events != nullptr) Report(events, entry);
  }
  polling_ = false;
  return taken;
}

void FakeCq::Arm() noexcept {
  std::lock_guard lock(GetFabric().mu);
  armed_ = true;
}

void FakeCq::SetWatched(bool watched) {
  std::lock_guard lock(GetFabric().mu);
  watched_ = watched;
}

}  // namespace

FakeDeviceTransport& FakeDeviceTransport::Of(transport::Transport& transport) {
  return dynamic_cast<FakeDeviceTransport&>(transport);
}

FakeDeviceTransport::FakeDeviceTransport(const sockaddr_in& address) : address_(address) {
  capabilities_.receive_model = transport::ReceiveModel::kDevice;
  capabilities_.device_memory_keys = true;
  capabilities_.rdma_read = true;
  capabilities_.busy_poll = true;
  capabilities_.srq = true;
  capabilities_.srq_resize = true;
  capabilities_.srq_limit = true;
  capabilities_.max_endpoints = 1024;
  capabilities_.max_send_work = 256;
  capabilities_.max_recv_work = 256;
  capabilities_.max_segments = 4;
  capabilities_.max_message_size = 1u << 20;
  capabilities_.max_rdma_size = 1u << 20;
  capabilities_.max_private_data = 64;
  capabilities_.max_rdma_read_in = 4;
  capabilities_.max_rdma_read_out = 4;
  capabilities_.max_srq_work = 1024;
  capabilities_.max_srq_segments = 4;
  capabilities_.immediate_data = true;
  capabilities_.atomics = true;
  capabilities_.datagrams = true;
  capabilities_.max_datagram = 1024;
}

FakeDeviceTransport::~FakeDeviceTransport() = default;

std::size_t FakeDeviceTransport::registered_regions() const {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  return static_cast<std::size_t>(std::count_if(fabric.regions.begin(), fabric.regions.end(),
                                                [this](const auto& entry) { return entry.second.owner == this; }));
}

std::size_t FakeDeviceTransport::device_srq_depth() const {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  std::size_t depth = 0;
  for (const FakeSrq* srq : AllSrqs())
    if (srq->owner() == this) depth += srq->depth();
  return depth;
}

void FakeDeviceTransport::ReleaseHeldReceives() {
  std::lock_guard lock(GetFabric().mu);
  for (auto& [id, endpoint] : GetFabric().endpoints)
    if (endpoint->owner() == this) endpoint->ReleaseHeldLocked();
}

void FakeDeviceTransport::ReleaseHeldEstablished() {
  std::lock_guard lock(GetFabric().mu);
  for (auto& established : HeldEstablished()) GetFabric().work.push_back(std::move(established));
  HeldEstablished().clear();
}

void FakeDeviceTransport::InjectStrayReceive(std::uint64_t recv_id) {
  std::lock_guard lock(GetFabric().mu);
  for (auto& [id, endpoint] : GetFabric().endpoints)
    if (endpoint->owner() == this && endpoint->connected()) ReportRecvLocked(id, RecvReport{recv_id, WorkStatus::kSuccess, {}});
}

Status FakeDeviceTransport::CreateProtectionDomain(std::unique_ptr<transport::ProtectionDomain>& out) {
  out = std::make_unique<FakePd>();
  return Status::Ok();
}

Status FakeDeviceTransport::RegisterMemory(transport::ProtectionDomain&, void* address, std::uint64_t length,
                                           transport::MemoryAccess access,
                                           std::unique_ptr<transport::MemoryRegion>& out) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  const std::uint32_t n = fabric.next_key++;
  // Distinct, and unlike the slot << 8 | generation keys core issues itself.
  const std::uint32_t lkey = 0x10000000u | n << 4 | 0x5;
  const std::uint32_t rkey = 0x20000000u | n << 4 | 0xA;
  fabric.regions[lkey] = Region{this, lkey, rkey, reinterpret_cast<std::uint64_t>(address), length, access};
  out = std::make_unique<FakeRegion>(lkey, rkey);
  return Status::Ok();
}

Status FakeDeviceTransport::CreateDeviceSrq(transport::ProtectionDomain&, std::uint32_t max_work,
                                            std::uint32_t max_segments, transport::DeviceSrqEvents* events,
                                            std::unique_ptr<transport::DeviceSrq>& out) {
  if (max_work > capabilities_.max_srq_work || max_segments > capabilities_.max_srq_segments)
    return Status(Code::kInsufficientResources);
  auto srq = std::make_unique<FakeSrq>(this, max_work, max_segments, events);
  {
    std::lock_guard lock(GetFabric().mu);
    AllSrqs().push_back(srq.get());
  }
  out = std::move(srq);
  return Status::Ok();
}

std::size_t FakeDeviceTransport::queued_completions() const {
  std::lock_guard lock(GetFabric().mu);
  std::size_t queued = 0;
  for (const FakeCq* cq : AllCqs())
    if (cq->owner() == this) queued += cq->size();
  return queued;
}

std::size_t FakeDeviceTransport::quiet_posts() const {
  std::lock_guard lock(GetFabric().mu);
  return quiet_posts_;
}

std::size_t FakeDeviceTransport::completion_polls() const {
  std::lock_guard lock(GetFabric().mu);
  std::size_t polls = 0;
  for (const FakeCq* cq : AllCqs())
    if (cq->owner() == this) polls += cq->polls();
  return polls;
}

Status FakeDeviceTransport::CreateCompletionQueue(std::uint32_t entries,
                                                  std::unique_ptr<transport::CompletionQueue>& out) {
  if (!behaviour_.completion_queues) return Status(Code::kModelNotSupported);
  out = std::make_unique<FakeCq>(this, entries);
  return Status::Ok();
}

Status FakeDeviceTransport::CreateEndpoint(const transport::EndpointConfig& config,
                                           transport::EndpointEvents* events,
                                           std::unique_ptr<transport::Endpoint>& out) {
  if (behaviour_.refuse_endpoints) return Status(Code::kInsufficientResources, Detail::kTep);
  out = std::make_unique<FakeEndpoint>(this, config, events);
  return Status::Ok();
}

Status FakeDeviceTransport::Listen(std::uint16_t port, transport::ListenEvents* events,
                                   std::unique_ptr<transport::Listener>& out) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  if (port == 0) {
    while (fabric.listeners.count(fabric.next_port) > 0) ++fabric.next_port;
    port = fabric.next_port++;
  }
  if (fabric.listeners.count(port) > 0) return Status(Code::kConnQualInUse);
  auto listener = std::make_unique<FakeListener>(port, events);
  fabric.listeners[port] = listener.get();
  out = std::move(listener);
  return Status::Ok();
}

Status FakeDeviceTransport::ListenDatagram(std::uint16_t port, transport::ListenEvents* events,
                                           std::unique_ptr<transport::Listener>& out) {
  Fabric& fabric = GetFabric();
  std::lock_guard lock(fabric.mu);
  if (!capabilities_.datagrams) return Status(Code::kModelNotSupported);
  if (fabric.datagram_listeners.count(port) > 0) return Status(Code::kConnQualInUse);
  auto listener = std::make_unique<FakeListener>(port, events, true);
  fabric.datagram_listeners[port] = listener.get();
  out = std::move(listener);
  return Status::Ok();
}

bool FakeDeviceTransport::Step() {
  Fabric& fabric = GetFabric();
  std::unique_lock run(fabric.run, std::try_to_lock);
  if (!run.owns_lock()) return false;
  std::function<void()> step;
  {
    std::lock_guard lock(fabric.mu);
    if (fabric.work.empty()) return false;
    step = std::move(fabric.work.front());
    fabric.work.pop_front();
  }
  step();
  return true;
}

bool FakeDeviceTransport::Progress() noexcept {
  progress_calls_.fetch_add(1, std::memory_order_relaxed);
  bool any = false;
  // Bounded, so a wait that polls is never stuck inside one call.
  for (int steps = 0; steps < 10000 && Step(); ++steps) any = true;
  std::vector<FakeCq*> watched;
  {
    std::lock_guard lock(GetFabric().mu);
    for (FakeCq* cq : AllCqs())
      if (cq->owner() == this && cq->watched()) watched.push_back(cq);
  }
  // A watched queue cannot go meanwhile: its EVD is the caller's (busy-poll, one thread here).
  for (FakeCq* cq : watched) any |= cq->Poll(UINT32_MAX) > 0;
  return any;
}

Status FakeDeviceTransport::Create(const IaParams& params, std::string& why,
                                   std::unique_ptr<transport::Transport>& out) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (inet_pton(AF_INET, params.address.c_str(), &address.sin_addr) != 1) {
    why = "the fake device wants an IPv4 literal";
    return Status(Code::kInvalidParameter);
  }
  out = std::make_unique<FakeDeviceTransport>(address);
  return Status::Ok();
}
}  // namespace softdat::testing::fake_device
