// VerbsTransport: the device's channels, the progress loop that reads them, and the static
// registrar that makes "verbs <device> <port>" IA params open this transport.
#include "transport/verbs/verbs_transport.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
      options_(options) {}

Status VerbsTransport::Start(std::string& why) {
  cm_channel_ = rdma_create_event_channel();
  comp_channel_ = ibv_create_comp_channel(device_.context);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (cm_channel_ == nullptr || comp_channel_ == nullptr || epoll_fd_ < 0 || wake_fd_ < 0 ||
      !SetNonBlocking(cm_channel_->fd) || !SetNonBlocking(comp_channel_->fd) ||
      !SetNonBlocking(device_.context->async_fd)) {
    why = std::string("cannot set up the event channels of ") + device_.name + ": " + std::strerror(errno);
    return Status(Code::kInsufficientResources);
  }
  for (int fd : {cm_channel_->fd, comp_channel_->fd, device_.context->async_fd, wake_fd_}) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e) != 0) {
      why = std::string("epoll_ctl: ") + std::strerror(errno);
      return Status(Code::kInsufficientResources);
    }
  }
  if (options_.progress == ProgressMode::kThread) thread_ = std::thread([this] { Run(); });
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
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void VerbsTransport::AddEndpoint(VerbsEndpoint* endpoint) {
  std::lock_guard lock(endpoints_mutex_);
  for (VerbsEndpoint*& slot : endpoints_) {
    if (slot == nullptr) {
      slot = endpoint;
      return;
    }
  }
  endpoints_.push_back(endpoint);
}

void VerbsTransport::RemoveEndpoint(VerbsEndpoint* endpoint) {
  std::lock_guard lock(endpoints_mutex_);
  for (VerbsEndpoint*& slot : endpoints_)
    if (slot == endpoint) slot = nullptr;
}

bool VerbsTransport::Progress() noexcept {
  if (options_.progress != ProgressMode::kPoll) return false;
  std::unique_lock lock(dispatch_, std::try_to_lock);
  if (!lock.owns_lock() || dispatching_) return false;
  return DrainAll();
}

void VerbsTransport::Run() {
  epoll_event events[8];
  while (!stop_) {
    epoll_wait(epoll_fd_, events, 8, timers_ ? 20 : -1);
    if (stop_) break;
    std::lock_guard lock(dispatch_);
    DrainAll();
  }
}

bool VerbsTransport::DrainAll() {
  dispatching_ = true;
  bool any = false;
  bool timers = false;
  for (int round = 0; round < 8; ++round) {
    bool did = false;
    std::uint64_t count;
    while (read(wake_fd_, &count, sizeof count) == sizeof count) did = true;
    // Async QP errors before rdma_cm events: iWARP reports a Terminate as both, and the QP error
    // says why the connection ended (kBroken) where DISCONNECTED alone would say kDisconnected.
    did |= DrainAsync();
    did |= DrainCm();
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    while (ibv_get_cq_event(comp_channel_, &cq, &context) == 0) {
      did = true;
      ibv_ack_cq_events(cq, 1);
      ibv_req_notify_cq(cq, 0);
      if (context != nullptr) static_cast<VerbsEndpoint*>(context)->PollCqs();  // null: being destroyed
    }
    timers = false;
    did |= SweepEndpoints(timers);
    any |= did;
    if (!did) break;
  }
  timers_ = timers;
  dispatching_ = false;
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
  bool any = false;
  ibv_async_event event;
  while (ibv_get_async_event(device_.context, &event) == 0) {
    any = true;
    const ibv_event_type type = event.event_type;
    VerbsEndpoint* endpoint = nullptr;
    VerbsSrq* srq = nullptr;
    switch (type) {
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
      case IBV_EVENT_COMM_EST:
        endpoint = static_cast<VerbsEndpoint*>(event.element.qp->qp_context);  // null: being destroyed
        break;
      case IBV_EVENT_SRQ_LIMIT_REACHED:
        srq = static_cast<VerbsSrq*>(event.element.srq->srq_context);
        break;
      default:
        break;
    }
    SOFTDAT_LOG(kDebug, "verbs: async event %s", ibv_event_type_str(type));
    // Acked before dispatch: a destructor called from the event waits for the ack.
    ibv_ack_async_event(&event);
    // Another transport on the same device may own the object: only ours are dispatched here.
    if (endpoint != nullptr && &endpoint->transport() == this) {
      if (type == IBV_EVENT_COMM_EST)
        endpoint->OnCommEstablished();
      else
        endpoint->OnQpError();
    }
    if (srq != nullptr && &srq->transport() == this) srq->OnLimitReached();
  }
  return any;
}

bool VerbsTransport::SweepEndpoints(bool& timers) {
  bool any = false;
  const auto now = VerbsEndpoint::Clock::now();
  // Slots only go null under the dispatch lock (which we hold) and only grow otherwise, so an
  // index walk is safe while events create or destroy endpoints.
  for (std::size_t i = 0;; ++i) {
    VerbsEndpoint* endpoint;
    {
      std::lock_guard lock(endpoints_mutex_);
      if (i >= endpoints_.size()) break;
      endpoint = endpoints_[i];
    }
    if (endpoint != nullptr) any |= endpoint->Service(now, timers);
  }
  return any;
}

}  // namespace softdat::transport::verbs
