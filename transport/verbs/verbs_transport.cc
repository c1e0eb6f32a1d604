// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsTransport: the device's channels, the progress that reads them (thread or consumer), and
// the factory that makes "verbs <device> <port>" IA params open this transport.
#include "transport/verbs/verbs_transport.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "base/deferred_calls.h"
#include "base/log.h"
#include "transport/verbs/verbs_cq.h"
#include "transport/verbs/verbs_endpoint.h"
#include "transport/verbs/verbs_listener.h"
#include "transport/verbs/verbs_memory.h"
#include "transport/verbs/verbs_srq.h"
#include "transport/verbs/verbs_ud.h"

namespace softdat::transport::verbs {
namespace {

bool SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// The transport's own CQ (endpoints without an EVD on a side): what such endpoints may have
// completed and nobody polled yet, within what the device allows.
constexpr std::uint32_t kOwnCqEntries = 4096;
// How often the progress thread looks at endpoints waiting for a deadline.
constexpr int kDeadlineLookMs = 20;

}  // namespace

Status CreateVerbsTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out) {
  Device device;
  if (Status s = OpenDevice(params.device, params.port, device, why); !s.ok()) return s;
  auto transport = std::make_unique<VerbsTransport>(device, params.options);
  if (Status s = transport->Start(why); !s.ok()) return s;
  out = std::move(transport);
  return Status::Ok();
}

VerbsTransport::VerbsTransport(const Device& device, const IaOptions& options)
    : device_(device),
      capabilities_(CapabilitiesOf(device, options.progress == ProgressMode::kPoll)),
      options_(options),
      busy_poll_(options.progress == ProgressMode::kPoll) {}

Status VerbsTransport::Start(std::string& why) {
  auto failed = [&](const char* what) {
    why = std::string(what) + " for " + device_.name + ": " + std::strerror(errno);
    return Status(Code::kInsufficientResources);
  };
  async_events_ = AsyncEventRouter::For(device_.context);
  cm_channel_ = rdma_create_event_channel();
  if (async_events_ == nullptr || cm_channel_ == nullptr || !SetNonBlocking(cm_channel_->fd))
    return failed("cannot set up the event channels");
  // Busy-poll: the consumer's Progress reads the rdma_cm and async fds itself; there is nothing
  // to wait on, so no epoll or eventfd.
  if (busy_poll_) return Status::Ok();
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return failed("cannot set up the event channels");
  for (int fd : {cm_channel_->fd, async_events_->fd(), wake_fd_}) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.ptr = nullptr;  // not a CQ
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e) != 0) return failed("epoll_ctl");
  }
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

VerbsTransport::~VerbsTransport() {
  stop_ = true;
  if (thread_.joinable()) {
    Wake();
    thread_.join();
  }
  own_cq_.reset();
  if (wake_fd_ >= 0) close(wake_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (cm_channel_ != nullptr) rdma_destroy_event_channel(cm_channel_);
  async_events_.reset();
  CloseDevice(device_);
}

Status VerbsTransport::CreateProtectionDomain(std::unique_ptr<ProtectionDomain>& out) {
  return VerbsPd::Create(device_.context, out);
}

Status VerbsTransport::RegisterMemory(ProtectionDomain& pd, void* address, std::uint64_t length, MemoryAccess access,
                                      std::unique_ptr<MemoryRegion>& out) {
  return verbs::RegisterMemory(static_cast<VerbsPd&>(pd), address, length, access, out);
}

Status VerbsTransport::CreateDeviceSrq(ProtectionDomain& pd, std::uint32_t max_work, std::uint32_t max_segments,
                                       DeviceSrqEvents* events, std::unique_ptr<DeviceSrq>& out) {
  return VerbsSrq::Create(*this, static_cast<VerbsPd&>(pd), max_work, max_segments, events, out);
}

Status VerbsTransport::CreateCompletionQueue(std::uint32_t entries, std::unique_ptr<CompletionQueue>& out) {
  std::unique_ptr<VerbsCq> cq;
  if (Status s = VerbsCq::Create(*this, entries, cq); !s.ok()) return s;
  out = std::move(cq);
  return Status::Ok();
}

VerbsCq* VerbsTransport::OwnCq() {
  if (VerbsCq* made = own_cq_made_.load(std::memory_order_acquire)) return made;
  std::lock_guard lock(own_cq_mutex_);
  if (own_cq_ == nullptr) {
    const auto entries = static_cast<std::uint32_t>(std::max(1, std::min<int>(kOwnCqEntries, device_.attr.max_cqe)));
    if (!VerbsCq::Create(*this, entries, own_cq_).ok()) return nullptr;
    own_cq_->SetWatched(true);
    own_cq_made_.store(own_cq_.get(), std::memory_order_release);
  }
  return own_cq_.get();
}

Status VerbsTransport::CreateEndpoint(const EndpointConfig& config, EndpointEvents* events,
                                      std::unique_ptr<Endpoint>& out) {
  return VerbsEndpoint::Create(*this, config, events, out);
}

Status VerbsTransport::Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) {
  return VerbsListener::Create(*this, port, events, out);
}

Status VerbsTransport::ListenDatagram(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) {
  return VerbsUdListener::Create(*this, port, events, out);
}

void VerbsTransport::Wake() {
  if (busy_poll_) {
    requested_.store(true, std::memory_order_release);
    return;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void VerbsTransport::RequestService(VerbsEndpoint* endpoint) {
  {
    std::lock_guard lock(service_mutex_);
    if (endpoint->queued_for_service()) return;
    endpoint->queued_for_service() = true;
    service_.push_back(endpoint);
  }
  Wake();
}

void VerbsTransport::Forget(VerbsEndpoint* endpoint) {
  std::lock_guard lock(service_mutex_);
  std::erase(service_, endpoint);
  std::erase(deadlines_, endpoint);
  endpoint->queued_for_service() = false;
}

void VerbsTransport::Watch(VerbsCq* cq, bool watched) {
  std::lock_guard lock(service_mutex_);
  if (watched) {
    watched_.push_back(cq);
  } else {
    std::erase(watched_, cq);
  }
  if (busy_poll_ || cq->wait_fd() < 0) return;
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.ptr = cq;
  if (epoll_ctl(epoll_fd_, watched ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, cq->wait_fd(), &e) != 0)
    SOFTDAT_LOG(kWarn, "verbs: epoll_ctl on a completion channel failed: %s", std::strerror(errno));
}

bool VerbsTransport::IsWatched(const VerbsCq* cq) {
  std::lock_guard lock(service_mutex_);
  return std::find(watched_.begin(), watched_.end(), cq) != watched_.end();
}

bool VerbsTransport::Progress() noexcept {
  // With a progress thread the consumer's waits and dequeues poll their own CQs and need nothing
  // more from here.
  if (!busy_poll_) return false;
  TurnGuard turn(turn_);
  if (!turn.held()) return false;
  // The watched CQs always (no syscall on rxe or siw: their CQs are mapped into user space); the
  // rest costs a read() per fd: when asked, else now and then.
  bool any = PollWatched();
  const std::uint32_t calls = progress_calls_++;
  const bool asked = requested_.load(std::memory_order_relaxed) && requested_.exchange(false, std::memory_order_acquire);
  if (asked || (calls & 63) == 0 || (!any && (calls & 7) == 0)) {
    bool timers = false;
    any |= DrainAll(timers);
    if (timers) requested_.store(true, std::memory_order_relaxed);  // deadlines: look again soon
  }
  return any;
}

bool VerbsTransport::PollWatched() {
  bool any = false;
  // Index walk: an event may unwatch a CQ (its EVD freed by a CNO agent).
  for (std::size_t i = 0;; ++i) {
    VerbsCq* cq;
    {
      std::lock_guard lock(service_mutex_);
      if (i >= watched_.size()) break;
      cq = watched_[i];
    }
    any |= cq->Poll(UINT32_MAX) > 0;
  }
  return any;
}

void VerbsTransport::Run() {
  pthread_setname_np(pthread_self(), "softdat-verbs");
  epoll_event events[16];
  bool timers = false;
  while (!stop_) {
    // Endpoints waiting for a deadline are looked at every few ms; otherwise only the channels
    // wake the thread.
    const int n = epoll_wait(epoll_fd_, events, 16, timers ? kDeadlineLookMs : -1);
    if (stop_) break;
    // Only this thread runs the progress in this mode: the turn is free but for a moment.
    while (!turn_.TryTake()) std::this_thread::yield();
    for (int i = 0; i < n; ++i) {
      auto* cq = static_cast<VerbsCq*>(events[i].data.ptr);
      // A CQ unwatched since epoll reported it may be gone: only a watched one is touched (and
      // stays while this thread holds the turn: its destructor waits for it).
      if (cq != nullptr && IsWatched(cq)) cq->OnNotification();
    }
    DrainAll(timers);
    turn_.Release();
    RunDeferredCalls();  // this thread's safe point: CNO agents its deliveries triggered
  }
}

bool VerbsTransport::DrainAll(bool& timers) {
  bool any = false;
  for (int round = 0; round < 8; ++round) {
    bool did = false;
    std::uint64_t count;
    while (wake_fd_ >= 0 && read(wake_fd_, &count, sizeof count) == sizeof count) did = true;
    // Async QP errors before rdma_cm events: iWARP reports a Terminate as both, and the QP error
    // says why the connection ended (kBroken) where DISCONNECTED alone would say kDisconnected.
    did |= DrainAsync();
    did |= DrainCm();
    did |= ServiceEndpoints(round == 0, timers);
    any |= did;
    if (!did) break;
  }
  return any;
}

bool VerbsTransport::ServiceEndpoints(bool with_deadlines, bool& timers) {
  {
    std::lock_guard lock(service_mutex_);
    if (with_deadlines) {
      for (VerbsEndpoint* endpoint : deadlines_) {
        if (endpoint->queued_for_service()) continue;
        endpoint->queued_for_service() = true;
        service_.push_back(endpoint);
      }
      deadlines_.clear();
    }
  }
  bool any = false;
  const auto now = VerbsEndpoint::Clock::now();
  // One at a time, taken off the list under the lock: a service may end another endpoint's life
  // (a CNO agent freeing an EP), which takes it off the list (Forget).
  for (;;) {
    VerbsEndpoint* endpoint;
    {
      std::lock_guard lock(service_mutex_);
      if (service_.empty()) break;
      endpoint = service_.back();
      service_.pop_back();
      endpoint->queued_for_service() = false;
    }
    bool deadline = false;
    any |= endpoint->Service(now, deadline);
    if (deadline) {
      std::lock_guard lock(service_mutex_);
      deadlines_.push_back(endpoint);
    }
  }
  std::lock_guard lock(service_mutex_);
  timers = !deadlines_.empty();
  return any;
}

bool VerbsTransport::DrainCm() {
  bool any = false;
  rdma_cm_event* raw = nullptr;
  while (rdma_get_cm_event(cm_channel_, &raw) == 0) {
    any = true;
    CmEvent e;
    e.type = raw->event;
    e.status = raw->status;
    e.id = raw->id;
    const rdma_conn_param& conn = raw->param.conn;
    if (conn.private_data != nullptr && e.type != RDMA_CM_EVENT_ADDR_RESOLVED && e.type != RDMA_CM_EVENT_ROUTE_RESOLVED) {
      e.private_data_length = static_cast<std::uint8_t>(std::min<std::size_t>(conn.private_data_len, sizeof e.private_data));
      std::memcpy(e.private_data, conn.private_data, e.private_data_length);
    }
    e.responder_resources = conn.responder_resources;
    e.initiator_depth = conn.initiator_depth;
    if (raw->id->ps == RDMA_PS_UDP) {  // the same private data fields lead both param layouts
      e.ud = true;
      e.ah_attr = raw->param.ud.ah_attr;
      e.qp_num = raw->param.ud.qp_num;
      e.qkey = raw->param.ud.qkey;
    }
    CmOwner* owner;
    if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      owner = static_cast<CmOwner*>(std::atomic_ref<void*>(raw->listen_id->context).load());
      std::atomic_ref<void*>(raw->id->context).store(nullptr);  // until an endpoint takes it: its events are only acked
    } else {
      // Cleared by an object going away (then only acked), which waits for this turn to end.
      owner = static_cast<CmOwner*>(std::atomic_ref<void*>(raw->id->context).load());
    }
    SOFTDAT_LOG(kDebug, "verbs: %s status %d", rdma_event_str(e.type), e.status);
    rdma_ack_cm_event(raw);
    if (owner != nullptr) owner->OnCmEvent(e);
  }
  return any;
}

bool VerbsTransport::DrainAsync() {
  // Reads the device's events for every IA on it; then delivers those queued for this one.
  bool any = async_events_->Read();
  AsyncTarget* target = nullptr;
  ibv_event_type type;
  while (async_events_->Next(*this, target, type)) {
    any = true;
    target->OnAsyncEvent(type);
  }
  return any;
}

}  // namespace softdat::transport::verbs
