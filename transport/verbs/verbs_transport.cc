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
#include <chrono>
#include <cstring>

#include "base/deferred_calls.h"
#include "base/log.h"
#include "transport/verbs/verbs_endpoint.h"
#include "transport/verbs/verbs_listener.h"
#include "transport/verbs/verbs_memory.h"
#include "transport/verbs/verbs_srq.h"

namespace softdat::transport::verbs {
namespace {

bool SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// How long after a consumer's last poll the progress thread still counts on it (and leaves CQs
// unarmed): the same handover period as the TCP transport's.
constexpr std::int64_t kConsumerPollNs = 1'000'000;

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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
  // Busy-poll: the consumer's Progress polls the CQs and reads the rdma_cm and async fds itself;
  // there is nothing to wait on, so no completion channel, epoll or eventfd.
  if (busy_poll_) return Status::Ok();
  comp_channel_ = ibv_create_comp_channel(device_.context);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (comp_channel_ == nullptr || epoll_fd_ < 0 || wake_fd_ < 0 || !SetNonBlocking(comp_channel_->fd))
    return failed("cannot set up the event channels");
  for (int fd : {cm_channel_->fd, comp_channel_->fd, async_events_->fd(), wake_fd_}) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
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
  if (wake_fd_ >= 0) close(wake_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (comp_channel_ != nullptr) ibv_destroy_comp_channel(comp_channel_);
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

Status VerbsTransport::CreateEndpoint(const EndpointConfig& config, EndpointEvents* events,
                                      std::unique_ptr<Endpoint>& out) {
  return VerbsEndpoint::Create(*this, config, events, out);
}

Status VerbsTransport::Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) {
  return VerbsListener::Create(*this, port, events, out);
}

void VerbsTransport::Wake() {
  if (busy_poll_) {
    requested_.store(true, std::memory_order_release);
    return;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void VerbsTransport::AddEndpoint(VerbsEndpoint* endpoint) {
  std::lock_guard lock(dispatch_);
  for (VerbsEndpoint*& slot : endpoints_) {
    if (slot == nullptr) {
      slot = endpoint;
      return;
    }
  }
  endpoints_.push_back(endpoint);
}

void VerbsTransport::RemoveEndpoint(VerbsEndpoint* endpoint) {
  for (VerbsEndpoint*& slot : endpoints_)
    if (slot == endpoint) slot = nullptr;
}

bool VerbsTransport::Progress() noexcept {
  if (!busy_poll_) consumer_poll_ns_.store(NowNs(), std::memory_order_relaxed);
  std::unique_lock lock(dispatch_, std::try_to_lock);
  if (!lock.owns_lock() || dispatching_) return false;
  dispatching_ = true;
  // The CQs first and always: no syscall on rxe or siw (their CQs are mapped into user space).
  bool any = PollAllCqs();
  if (busy_poll_) {
    // The rest costs a read() per fd and a lock per endpoint: when asked, else now and then.
    const std::uint32_t calls = progress_calls_++;
    const bool asked = requested_.load(std::memory_order_relaxed) && requested_.exchange(false, std::memory_order_acquire);
    if (asked || (calls & 63) == 0 || (!any && (calls & 7) == 0)) any |= DrainAll();
  }
  dispatching_ = false;
  return any;
}

void VerbsTransport::Pause() noexcept {
  if (busy_poll_) return;
  consumer_poll_ns_.store(0, std::memory_order_relaxed);
  // The thread re-arms what it left unarmed for this consumer, now rather than a millisecond on.
  if (unarmed_.load(std::memory_order_acquire)) Wake();
}

bool VerbsTransport::ConsumerPolling() const {
  const std::int64_t last = consumer_poll_ns_.load(std::memory_order_relaxed);
  return last != 0 && NowNs() - last < kConsumerPollNs;
}

void VerbsTransport::Run() {
  pthread_setname_np(pthread_self(), "softdat-verbs");
  epoll_event events[8];
  while (!stop_) {
    // Unarmed CQs need a look within a millisecond of the consumer's last poll; deadlines of
    // endpoints every 20 ms; otherwise only the channels wake the thread.
    const int timeout = unarmed_.load(std::memory_order_relaxed) ? 1 : timers_ ? 20 : -1;
    epoll_wait(epoll_fd_, events, 8, timeout);
    if (stop_) break;
    {
      std::lock_guard lock(dispatch_);
      dispatching_ = true;
      DrainAll();
      RearmIfIdle();
      dispatching_ = false;
    }
    RunDeferredCalls();  // this thread's safe point: CNO agents its deliveries triggered
  }
}

bool VerbsTransport::DrainAll() {
  bool any = false;
  bool timers = false;
  for (int round = 0; round < 8; ++round) {
    bool did = false;
    std::uint64_t count;
    while (wake_fd_ >= 0 && read(wake_fd_, &count, sizeof count) == sizeof count) did = true;
    // Async QP errors before rdma_cm events: iWARP reports a Terminate as both, and the QP error
    // says why the connection ended (kBroken) where DISCONNECTED alone would say kDisconnected.
    did |= DrainAsync();
    did |= DrainCm();
    did |= DrainCqEvents();
    timers = false;
    did |= SweepEndpoints(timers);
    any |= did;
    if (!did) break;
  }
  timers_ = timers;
  return any;
}

bool VerbsTransport::DrainCqEvents() {
  if (comp_channel_ == nullptr) return false;
  bool any = false;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(comp_channel_, &cq, &context) == 0) {
    any = true;
    ibv_ack_cq_events(cq, 1);
    auto* endpoint = static_cast<VerbsEndpoint*>(context);  // null: being destroyed
    if (endpoint == nullptr) continue;
    // A consumer polling now gets this CQ's completions itself: leave it unarmed so the next
    // ones do not wake this thread (RearmIfIdle arms it when the consumer stops).
    if (ConsumerPolling()) {
      endpoint->LeaveUnarmed();
      unarmed_.store(true, std::memory_order_release);
    } else {
      ibv_req_notify_cq(cq, 0);
    }
    endpoint->PollCqs();
  }
  return any;
}

void VerbsTransport::RearmIfIdle() {
  if (!unarmed_.load(std::memory_order_acquire) || ConsumerPolling()) return;
  unarmed_.store(false, std::memory_order_relaxed);
  // Armed first, then polled: a completion that came before the arm is polled here, one after
  // it raises an event.
  for (std::size_t i = 0; i < endpoints_.size(); ++i)
    if (VerbsEndpoint* endpoint = endpoints_[i]; endpoint != nullptr) endpoint->Rearm();
}

bool VerbsTransport::PollAllCqs() {
  bool any = false;
  // Index walk: an event may add endpoints (the vector may grow) or remove them (slots go null).
  for (std::size_t i = 0; i < endpoints_.size(); ++i)
    if (VerbsEndpoint* endpoint = endpoints_[i]; endpoint != nullptr) any |= endpoint->PollCqs();
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
    CmOwner* owner;
    if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      owner = static_cast<CmOwner*>(raw->listen_id->context);
      raw->id->context = nullptr;  // until an endpoint takes it: its events are only acked
    } else {
      owner = static_cast<CmOwner*>(raw->id->context);
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

bool VerbsTransport::SweepEndpoints(bool& timers) {
  bool any = false;
  const auto now = VerbsEndpoint::Clock::now();
  // Index walk: an event may add endpoints (the vector may grow) or remove them (slots go null).
  for (std::size_t i = 0; i < endpoints_.size(); ++i)
    if (VerbsEndpoint* endpoint = endpoints_[i]; endpoint != nullptr) any |= endpoint->Service(now, timers);
  return any;
}

}  // namespace softdat::transport::verbs
