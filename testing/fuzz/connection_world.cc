// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// See connection_world.h.
#include "testing/fuzz/connection_world.h"

#include <dat2/udat.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/cr.h"
#include "core/dat_ib.h"
#include "core/ep.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/lmr.h"
#include "core/pz.h"
#include "core/rmr.h"
#include "core/service_point.h"
#include "core/srq.h"
#include "transport/tcp/tcp_endpoint.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/test_seams.h"

#if defined(__SANITIZE_ADDRESS__)
#define SOFTDAT_FUZZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOFTDAT_FUZZ_ASAN 1
#endif
#endif
#ifdef SOFTDAT_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace softdat::fuzz {
namespace {

constexpr std::uint8_t kGuard = 0xA5;
constexpr DAT_CONN_QUAL kPort = 4791;
constexpr std::uint32_t kSpinRounds = 8;  // Progress calls per Step: Asio's handlers run every 8th when idle
// Cookies: receive buffer i is i; our own operations and the bind are above.
constexpr std::uint64_t kCookieSend = 100, kCookieWrite = 101, kCookieRead = 102, kCookieExtension = 103;

[[noreturn]] void Die(const char* what, const Status& status = Status::Ok()) {
  std::fprintf(stderr, "connection_world: %s failed (%s)\n", what, CodeName(status.code()));
  std::abort();
}

void Must(const Status& status, const char* what) {
  if (!status.ok()) Die(what, status);
}

// The fixed-address region of one base, mapped once and never unmapped (worlds come and go
// thousands of times a second).
std::uint8_t* Region(std::uintptr_t base) {
  static std::mutex mutex;
  static std::map<std::uintptr_t, std::uint8_t*> mapped;
  std::lock_guard lock(mutex);
  auto it = mapped.find(base);
  if (it != mapped.end()) return it->second;
  void* p = ::mmap(reinterpret_cast<void*>(base), Layout::kSize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p != reinterpret_cast<void*>(base)) {
    std::fprintf(stderr, "connection_world: cannot map %#zx bytes at %#lx\n", Layout::kSize,
                 static_cast<unsigned long>(base));
    std::abort();
  }
  auto* region = static_cast<std::uint8_t*>(p);
  mapped[base] = region;
  return region;
}

// [begin, end) ranges of the region that only a bug may write.
std::vector<std::pair<std::size_t, std::size_t>> GuardRanges(std::uint32_t read_bytes) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  ranges.emplace_back(Layout::kWindowSize, Layout::kRecv);
  for (std::uint32_t i = 0; i < kRecvBuffers; ++i) {
    ranges.emplace_back(Layout::kRecv + RecvOffset(i) + kRecvSizes[i], Layout::kRecv + RecvOffset(i + 1));
  }
  // Our Read's sink is the one place of kLocal a peer reaches.
  ranges.emplace_back(Layout::kRecv + Layout::kRecvArea, Layout::kLocal);
  ranges.emplace_back(Layout::kReadSink + read_bytes, Layout::kAtomicResults);
  ranges.emplace_back(Layout::kAtomicResults + 16, Layout::kLocal + Layout::kLocalSize);
  ranges.emplace_back(Layout::kLocal + Layout::kLocalSize, Layout::kOtherPz);
  ranges.emplace_back(Layout::kOtherPz + Layout::kOtherPzSize, Layout::kSize);
  return ranges;
}

// The transport: softdat-tcp itself, except that connections run over the socket the world is
// given (adopted_socket.cc) instead of a TCP connect or a listener's accept.
class AdoptedEndpoint;

class SocketPairTransport final : public transport::Transport {
 public:
  explicit SocketPairTransport(std::unique_ptr<transport::Transport> inner)
      : inner_(std::move(inner)), tcp_(static_cast<transport::tcp::TcpTransport&>(*inner_)) {}

  const transport::Capabilities& capabilities() const override { return inner_->capabilities(); }
  sockaddr_in address() const override { return inner_->address(); }
  Status CreateProtectionDomain(std::unique_ptr<transport::ProtectionDomain>& out) override {
    return inner_->CreateProtectionDomain(out);
  }
  Status RegisterMemory(transport::ProtectionDomain& pd, void* address, std::uint64_t length,
                        transport::MemoryAccess access, std::unique_ptr<transport::MemoryRegion>& out) override {
    return inner_->RegisterMemory(pd, address, length, access, out);
  }
  Status CreateDeviceSrq(transport::ProtectionDomain& pd, std::uint32_t max_work, std::uint32_t max_segments,
                         transport::DeviceSrqEvents* events, std::unique_ptr<transport::DeviceSrq>& out) override {
    return inner_->CreateDeviceSrq(pd, max_work, max_segments, events, out);
  }
  Status CreateEndpoint(const transport::EndpointConfig& config, transport::EndpointEvents* events,
                        std::unique_ptr<transport::Endpoint>& out) override;
  // The PSP's listener: requests come from Deliver, not from a port.
  Status Listen(std::uint16_t port, transport::ListenEvents* events, std::unique_ptr<transport::Listener>& out) override {
    class NoListener final : public transport::Listener {
     public:
      explicit NoListener(std::uint16_t port) : port_(port) {}
      std::uint16_t port() const override { return port_; }

     private:
      std::uint16_t port_;
    };
    listen_events_ = events;
    out = std::make_unique<NoListener>(port);
    return Status::Ok();
  }
  bool Progress() noexcept override { return inner_->Progress(); }
  void Pause() noexcept override { inner_->Pause(); }

  // Passive: the connection request over `fd` reaches the PSP.
  void Deliver(int fd, const wire::MpaFrame& request, std::span<const std::uint8_t> private_data);
  // Active: the socket the EP's next Connect runs over.
  void SetConnectSocket(int fd) { connect_fd_ = fd; }
  int TakeConnectSocket() { return std::exchange(connect_fd_, -1); }

 private:
  std::unique_ptr<transport::Transport> inner_;
  transport::tcp::TcpTransport& tcp_;
  transport::ListenEvents* listen_events_ = nullptr;
  int connect_fd_ = -1;
};

// softdat-tcp's endpoint, whose Connect runs over the world's socket.
class AdoptedEndpoint final : public transport::Endpoint {
 public:
  AdoptedEndpoint(std::unique_ptr<transport::Endpoint> inner, SocketPairTransport& transport)
      : inner_(std::move(inner)), transport_(transport) {}
  Status Connect(const sockaddr_in&, std::uint16_t, std::span<const std::uint8_t> private_data,
                 std::uint64_t) override {
    const int fd = transport_.TakeConnectSocket();
    if (fd < 0) return Status(Code::kInvalidState);
    transport::tcp::Connection* connection = static_cast<transport::tcp::TcpEndpoint&>(*inner_).connection();
    if (connection == nullptr) return Status(Code::kInsufficientResources);
    return transport::tcp::ConnectionTestAccess::ConnectOver(*connection, fd, private_data);
  }
  Status Post(const transport::Work& work) override { return inner_->Post(work); }
  Status PostRecv(std::uint64_t id, std::span<const Segment> segments) override { return inner_->PostRecv(id, segments); }
  void RecvBuffersAvailable() override { inner_->RecvBuffersAvailable(); }
  void Disconnect(bool graceful) override { inner_->Disconnect(graceful); }
  sockaddr_in local_address() const override { return inner_->local_address(); }
  sockaddr_in remote_address() const override { return inner_->remote_address(); }
  transport::Endpoint& inner() { return *inner_; }

 private:
  std::unique_ptr<transport::Endpoint> inner_;
  SocketPairTransport& transport_;
};

// softdat-tcp's connection request, accepted onto the endpoint inside an AdoptedEndpoint.
class AdoptedRequest final : public transport::PendingConnection {
 public:
  explicit AdoptedRequest(std::unique_ptr<transport::PendingConnection> inner) : inner_(std::move(inner)) {}
  std::span<const std::uint8_t> private_data() const override { return inner_->private_data(); }
  sockaddr_in remote_address() const override { return inner_->remote_address(); }
  sockaddr_in local_address() const override { return inner_->local_address(); }
  Status Accept(transport::Endpoint& endpoint, std::span<const std::uint8_t> private_data) override {
    return inner_->Accept(static_cast<AdoptedEndpoint&>(endpoint).inner(), private_data);
  }
  void Reject(std::span<const std::uint8_t> private_data) override { inner_->Reject(private_data); }

 private:
  std::unique_ptr<transport::PendingConnection> inner_;
};

Status SocketPairTransport::CreateEndpoint(const transport::EndpointConfig& config, transport::EndpointEvents* events,
                                           std::unique_ptr<transport::Endpoint>& out) {
  std::unique_ptr<transport::Endpoint> inner;
  if (Status status = inner_->CreateEndpoint(config, events, inner); !status.ok()) return status;
  out = std::make_unique<AdoptedEndpoint>(std::move(inner), *this);
  return Status::Ok();
}

void SocketPairTransport::Deliver(int fd, const wire::MpaFrame& request,
                                  std::span<const std::uint8_t> private_data) {
  auto pending = transport::tcp::TcpTransportTestAccess::AdoptRequest(
      tcp_, fd, request, std::vector<std::uint8_t>(private_data.begin(), private_data.end()));
  if (pending == nullptr || listen_events_ == nullptr) Die("adopting the passive socket");
  listen_events_->OnConnectRequest(std::make_unique<AdoptedRequest>(std::move(pending)));
}

Status MakeTransport(const IaParams& params, std::string& why, std::unique_ptr<transport::Transport>& out) {
  std::unique_ptr<transport::Transport> inner;
  IaParams tcp_only = params;
  tcp_only.options.shm = ShmMode::kOff;  // the world's connections are socketpairs, never the rendezvous
  if (Status status = transport::tcp::CreateTcpTransport(tcp_only, why, inner); !status.ok()) return status;
  out = std::make_unique<SocketPairTransport>(std::move(inner));
  return Status::Ok();
}

DAT_DTO_COOKIE Cookie(std::uint64_t value) {
  DAT_DTO_COOKIE cookie{};
  cookie.as_64 = value;
  return cookie;
}

}  // namespace

wire::MpaFrame PeerRequest(bool crc) {
  wire::MpaFrame request;
  request.crc = crc;
  request.enhanced = true;
  request.revision = 2;
  request.peer_to_peer = true;
  request.rtr_write = true;
  request.ird = request.ord = 4;
  return request;
}

struct World::Impl {
  DAT_PROVIDER provider{};
  core::Ia* ia = nullptr;
  core::Evd* async = nullptr;
  core::Pz* pz = nullptr;
  core::Pz* other_pz = nullptr;
  core::Lmr* window = nullptr;
  core::Lmr* recv = nullptr;
  core::Lmr* local = nullptr;
  core::Lmr* other = nullptr;
  DAT_LMR_CONTEXT recv_context = 0, local_context = 0, window_context = 0;
  core::Evd* recv_evd = nullptr;
  core::Evd* request_evd = nullptr;
  core::Evd* connect_evd = nullptr;
  core::Evd* cr_evd = nullptr;
  core::Srq* srq = nullptr;
  core::Ep* ep = nullptr;
  core::Psp* psp = nullptr;
  core::Rmr* rmr = nullptr;
  SocketPairTransport* transport = nullptr;
};

World::World(const WorldConfig& config) : config_(config), impl_(std::make_unique<Impl>()) {}

std::unique_ptr<World> World::Open(const WorldConfig& config) {
  std::unique_ptr<World> world(new World(config));
  Impl& w = *world->impl_;
  world->base_ = config.active ? kActiveBase : kPassiveBase;
  std::uint8_t* region = Region(world->base_);
  UNPOISON(region, Layout::kSize);
  std::memset(region, kGuard, Layout::kSize);
  std::memset(region + Layout::kWindow, 0, Layout::kWindowSize);

  const std::string params = std::string("tcp 127.0.0.1 progress=poll crc=") + (config.crc ? "on" : "off");
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  Must(core::Ia::Open(&w.provider, "softdat-fuzz", params, MakeTransport, 64, async, &w.ia), "dat_ia_open");
  w.async = static_cast<core::Evd*>(async);
  w.transport = &static_cast<SocketPairTransport&>(w.ia->transport());
  Must(core::Pz::Create(w.ia, &w.pz), "dat_pz_create");
  Must(core::Pz::Create(w.ia, &w.other_pz), "dat_pz_create");

  auto lmr = [&](std::size_t offset, std::size_t size, core::Pz* pz, std::uint32_t privileges, core::Lmr** out,
                 DAT_LMR_CONTEXT* lmr_context, std::uint32_t* rmr_key) {
    DAT_REGION_DESCRIPTION description{};
    description.for_va = region + offset;
    DAT_LMR_CONTEXT local = 0;
    DAT_RMR_CONTEXT remote = 0;
    Must(core::Lmr::Create(w.ia, DAT_MEM_TYPE_VIRTUAL, description, size, pz, privileges, DAT_VA_TYPE_VA, out,
                           &local, &remote, nullptr, nullptr),
         "dat_lmr_create");
    if (lmr_context != nullptr) *lmr_context = local;
    if (rmr_key != nullptr) *rmr_key = remote;
  };
  lmr(Layout::kWindow, Layout::kWindowSize, w.pz, DAT_MEM_PRIV_ALL_FLAG | core::kPrivRemoteAtomic, &w.window,
      &w.window_context,
      &world->window_key_);
  lmr(Layout::kRecv, Layout::kRecvArea, w.pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &w.recv,
      &w.recv_context, &world->recv_key_);
  lmr(Layout::kLocal, Layout::kLocalSize, w.pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &w.local, &w.local_context, nullptr);
  lmr(Layout::kOtherPz, Layout::kOtherPzSize, w.other_pz, DAT_MEM_PRIV_ALL_FLAG, &w.other, nullptr,
      &world->other_pz_key_);
  for (std::uint32_t i = 0; i < kRecvBuffers; ++i) {
    std::memset(region + Layout::kRecv + RecvOffset(i), 0, kRecvSizes[i]);
  }
  if (config.send_bytes > kMaxSendBytes || config.write_bytes > kMaxWriteBytes || config.read_bytes > kMaxReadBytes)
    Die("the world's configuration");
  for (std::size_t i = 0; i < Layout::kReadSink - Layout::kLocal; ++i) {
    region[Layout::kLocal + i] = static_cast<std::uint8_t>(i * 7 + (i >> 8));  // what we send
  }
  std::memset(region + Layout::kReadSink, 0, config.read_bytes);
  std::memset(region + Layout::kAtomicResults, 0, 16);
  std::memset(region + Layout::kOtherPz, 0, Layout::kOtherPzSize);
  for (const auto& [begin, end] : GuardRanges(config.read_bytes)) POISON(region + begin, end - begin);

  Must(core::Evd::Create(w.ia, 64, nullptr, DAT_EVD_DTO_FLAG, &w.recv_evd), "dat_evd_create");
  Must(core::Evd::Create(w.ia, 64, nullptr, static_cast<DAT_EVD_FLAGS>(DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG), &w.request_evd),
       "dat_evd_create");
  Must(core::Evd::Create(w.ia, 16, nullptr, DAT_EVD_CONNECTION_FLAG, &w.connect_evd), "dat_evd_create");
  Must(core::Evd::Create(w.ia, 16, nullptr, DAT_EVD_CR_FLAG, &w.cr_evd), "dat_evd_create");
  if (config.srq) {
    DAT_SRQ_ATTR attr{};
    attr.max_recv_dtos = kRecvBuffers;
    attr.max_recv_iov = 1;
    attr.low_watermark = 2;
    Must(core::Srq::Create(w.ia, w.pz, attr, &w.srq), "dat_srq_create");
  }
  Must(core::Ep::Create(w.ia, w.pz, w.recv_evd, w.request_evd, w.connect_evd, w.srq, nullptr, &w.ep), "dat_ep_create");
  const std::uint32_t initial = config.buffers < kRecvBuffers ? config.buffers : kRecvBuffers;
  for (std::uint32_t i = 0; i < initial; ++i) world->Repost(i);
  world->next_spare_ = initial;
  if (!config.active) Must(core::Psp::Create(w.ia, kPort, w.cr_evd, DAT_PSP_CONSUMER_FLAG, &w.psp), "dat_psp_create");
  return world;
}

World::~World() {
  if (impl_->ia != nullptr) (void)core::Ia::Close(impl_->ia, DAT_CLOSE_ABRUPT_FLAG);
}

void World::Repost(std::uint64_t cookie) {
  Impl& w = *impl_;
  DAT_LMR_TRIPLET triplet{};
  triplet.lmr_context = w.recv_context;
  triplet.virtual_address = base_ + Layout::kRecv + RecvOffset(static_cast<std::uint32_t>(cookie));
  triplet.segment_length = kRecvSizes[cookie];
  // A refusal (the EP or SRQ full, the connection gone) is the consumer's to see, not a bug.
  if (w.srq != nullptr) {
    (void)w.srq->PostRecv(1, &triplet, Cookie(cookie));
  } else {
    (void)w.ep->PostRecv(1, &triplet, Cookie(cookie), DAT_COMPLETION_DEFAULT_FLAG);
  }
}

bool World::PostSpareBuffer() {
  if (next_spare_ >= kRecvBuffers || ended_) return false;
  Repost(next_spare_++);
  return true;
}

void World::Disconnect(bool graceful) {
  (void)impl_->ep->Disconnect(graceful ? DAT_CLOSE_GRACEFUL_FLAG : DAT_CLOSE_ABRUPT_FLAG);
}

void World::Start(int fd, const wire::MpaFrame* request, std::span<const std::uint8_t> private_data) {
  Impl& w = *impl_;
  if (config_.active) {
    w.transport->SetConnectSocket(fd);
    sockaddr_in peer = w.ia->address();
    Must(w.ep->Connect(reinterpret_cast<sockaddr*>(&peer), kPort, DAT_TIMEOUT_INFINITE, 0, nullptr), "dat_ep_connect");
    return;
  }
  w.transport->Deliver(fd, request != nullptr ? *request : PeerRequest(config_.crc), private_data);
  DAT_EVENT event;
  if (!w.cr_evd->Dequeue(event).ok() || event.event_number != DAT_CONNECTION_REQUEST_EVENT) Die("the CR event");
  core::Cr* cr = core::HandleAs<core::Cr>(event.event_data.cr_arrival_event_data.cr_handle);
  if (cr == nullptr) Die("the CR handle");
  Must(core::Cr::Accept(cr, w.ep, 0, nullptr), "dat_cr_accept");
}

void World::OnEstablished() {
  Impl& w = *impl_;
  established_ = true;
  if (config_.bind_rmr) {
    if (core::Rmr::Create(w.pz, &w.rmr).ok()) {
      DAT_LMR_TRIPLET triplet{};
      triplet.lmr_context = w.window_context;
      triplet.virtual_address = base_ + Layout::kRmrOffset;
      triplet.segment_length = Layout::kRmrSize;
      DAT_RMR_CONTEXT context = 0;
      DAT_RMR_COOKIE cookie{};
      if (w.rmr->Bind(w.window, triplet, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, w.ep, cookie,
                      DAT_COMPLETION_DEFAULT_FLAG, context)
              .ok())
        rmr_key_ = context;
    }
  }
  DAT_LMR_TRIPLET local{};
  local.lmr_context = w.local_context;
  local.virtual_address = base_ + Layout::kSendSource;
  local.segment_length = config_.send_bytes;
  for (std::uint32_t i = 0; i < config_.sends; ++i) {
    (void)w.ep->PostSend(1, &local, Cookie(kCookieSend), DAT_COMPLETION_DEFAULT_FLAG, false, 0);
  }
  DAT_RMR_TRIPLET remote{};
  if (config_.write_bytes != 0) {
    local.virtual_address = base_ + Layout::kWriteSource;
    local.segment_length = config_.write_bytes;
    remote.rmr_context = config_.bad_key ? peer_key_ + (1000u << 8) : peer_key_;  // a slot nobody has
    remote.virtual_address = peer_address_;
    remote.segment_length = config_.write_bytes;
    for (std::uint32_t i = 0; i < config_.writes; ++i) {
      (void)w.ep->PostRdma(DAT_DTO_RDMA_WRITE, 1, &local, Cookie(kCookieWrite), &remote, DAT_COMPLETION_DEFAULT_FLAG);
    }
  }
  if (config_.read_bytes != 0) {
    local.virtual_address = base_ + Layout::kReadSink;
    local.segment_length = config_.read_bytes;
    remote.rmr_context = config_.bad_key ? peer_key_ + (1000u << 8) : peer_key_;
    remote.virtual_address = peer_address_ + 0x100;
    remote.segment_length = config_.read_bytes;
    for (std::uint32_t i = 0; i < config_.reads; ++i) {
      (void)w.ep->PostRdma(DAT_DTO_RDMA_READ, 1, &local, Cookie(kCookieRead), &remote, DAT_COMPLETION_DEFAULT_FLAG);
    }
  }
  if (config_.extensions) PostExtensions();
}

void World::PostExtensions() {
  Impl& w = *impl_;
  DAT_LMR_TRIPLET local{};
  local.lmr_context = w.local_context;
  local.virtual_address = base_ + Layout::kWriteSource;
  local.segment_length = kImmediateWriteBytes;
  DAT_RMR_TRIPLET remote{};
  remote.rmr_context = config_.bad_key ? peer_key_ + (1000u << 8) : peer_key_;
  remote.virtual_address = peer_address_ + 0x400;
  remote.segment_length = kImmediateWriteBytes;
  (void)w.ep->PostWriteImmediate(1, &local, Cookie(kCookieExtension), &remote, 0x1234,
                                 DAT_COMPLETION_DEFAULT_FLAG);
  remote.virtual_address = peer_address_ + 0x200;
  remote.segment_length = 8;
  local.segment_length = 8;
  local.virtual_address = base_ + Layout::kAtomicResults;
  (void)w.ep->PostAtomic(transport::WorkKind::kFetchAdd, 3, 0, &local, Cookie(kCookieExtension), &remote,
                         DAT_COMPLETION_DEFAULT_FLAG);
  local.virtual_address += 8;
  (void)w.ep->PostAtomic(transport::WorkKind::kCompareSwap, 3, 9, &local, Cookie(kCookieExtension), &remote,
                         DAT_COMPLETION_DEFAULT_FLAG);
}

void World::Drain() {
  Impl& w = *impl_;
  DAT_EVENT event;
  while (w.connect_evd->Dequeue(event).ok()) {
    if (event.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
      OnEstablished();
    } else {
      ended_ = true;
      end_event_ = event.event_number;
    }
  }
  // DAT_IB_DTO_EVENT: an extension's completion (the DTO data is the same; its extension data says
  // which). A receive's is an RDMA Write with immediate data.
  auto dto_event = [](const DAT_EVENT& e) {
    return e.event_number == DAT_DTO_COMPLETION_EVENT || static_cast<int>(e.event_number) == DAT_IB_DTO_EVENT;
  };
  while (w.recv_evd->Dequeue(event).ok()) {
    if (!dto_event(event)) continue;
    const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
    if (dto.user_cookie.as_64 >= kRecvBuffers) Die("a receive completion with a cookie never posted");
    if (dto.status == DAT_DTO_SUCCESS) {
      ++recvs_done_;
      if (dto.transfered_length > kRecvSizes[dto.user_cookie.as_64])
        Die("a receive completion longer than its buffer");
      if (!ended_) Repost(dto.user_cookie.as_64);
    }
  }
  while (w.request_evd->Dequeue(event).ok()) {
    if (dto_event(event) && event.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS)
      ++requests_done_;
  }
  while (w.async->Dequeue(event).ok()) {
  }
}

bool World::Step() {
  bool any = false;
  for (std::uint32_t i = 0; i < kSpinRounds; ++i) any |= impl_->ia->transport().Progress();
  const bool was_established = established_, was_ended = ended_;
  Drain();
  return any || was_established != established_ || was_ended != ended_;
}

void World::CheckGuards(std::uintptr_t base, std::uint32_t read_bytes) {
  const auto* region = reinterpret_cast<const std::uint8_t*>(base);
  static const std::vector<std::uint8_t> kPattern(Layout::kSize, kGuard);
  for (const auto& [begin, end] : GuardRanges(read_bytes)) {
    UNPOISON(region + begin, end - begin);
    if (std::memcmp(region + begin, kPattern.data(), end - begin) == 0) continue;
    for (std::size_t i = begin; i < end; ++i) {
      if (region[i] != kGuard) {
        std::fprintf(stderr, "connection_world: guard byte at offset %#zx changed to %#x\n", i, region[i]);
        std::abort();
      }
    }
  }
}

}  // namespace softdat::fuzz
