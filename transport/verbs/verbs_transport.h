// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsTransport: one rdma-core device port per IA. It owns the rdma_cm event channel, the
// progress that reads it with the device's async events (through the device's AsyncEventRouter,
// shared with the other IAs of the process on that device), and the endpoints' requests.
//
// Completions are not the progress's business: each DTO EVD has its CQ (VerbsCq), which the
// consumer's dat_evd_dequeue polls and dat_evd_wait arms and sleeps on. The progress polls a CQ
// only where nobody else would: a watched one (its EVD has a CNO; and the transport's own CQ,
// for endpoints without an EVD on a side), and an ending endpoint's, whose flushes it reports
// before the end.
//
// Who drives it:
//  - progress=poll: only the consumer's dat_evd_wait/dat_evd_dequeue. Their Progress() polls the
//    watched CQs and, when an endpoint asked (RequestService) or every few calls, reads the
//    rdma_cm and async fds and serves the endpoints that asked: no thread, no epoll, no channel.
//  - default: a progress thread sleeps in epoll on the rdma_cm and async fds, an eventfd the
//    endpoints' requests write, and the channels of the watched CQs; Progress() does nothing.
//
// Serialization: whoever runs the progress holds its turn (turn.h), taken without blocking; an
// event that calls Progress() (a CNO agent in a dat_evd_wait) finds the turn held and goes on.
// Destructors of endpoints, listeners, SRQs and CQs clear what names them, then wait until no
// other thread holds the turn: after that no event of theirs runs. Calls from core (Connect,
// Accept, Disconnect, Post, PostRecv) never wait for the turn: they record a request and wake
// the progress, or post straight to the device under the endpoint's own mutex.
#pragma once

#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "transport/transport.h"
#include "transport/verbs/async_events.h"
#include "transport/verbs/turn.h"
#include "transport/verbs/verbs_device.h"

namespace softdat::transport::verbs {

class VerbsCq;
class VerbsEndpoint;

// A rdma_cm event copied out of librdmacm's buffer, so it can be acked before dispatch.
struct CmEvent {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_ERROR;
  int status = 0;
  rdma_cm_id* id = nullptr;
  std::uint8_t private_data[256] = {};
  std::uint8_t private_data_length = 0;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  // RDMA_PS_UDP (UD address resolution): the answering QP and how to reach it (ESTABLISHED).
  bool ud = false;
  ibv_ah_attr ah_attr{};
  std::uint32_t qp_num = 0;
  std::uint32_t qkey = 0;
};

// What a cm_id's context points to.
class CmOwner {
 public:
  virtual void OnCmEvent(const CmEvent& event) = 0;

 protected:
  ~CmOwner() = default;
};

class VerbsTransport final : public Transport, public AsyncSink {
 public:
  VerbsTransport(const Device& device, const IaOptions& options);
  ~VerbsTransport() override;
  Status Start(std::string& why);

  const Capabilities& capabilities() const override { return capabilities_; }
  sockaddr_in address() const override { return device_.address; }
  Status CreateProtectionDomain(std::unique_ptr<ProtectionDomain>& out) override;
  Status RegisterMemory(ProtectionDomain& pd, void* address, std::uint64_t length, MemoryAccess access,
                        std::unique_ptr<MemoryRegion>& out) override;
  Status CreateDeviceSrq(ProtectionDomain& pd, std::uint32_t max_work, std::uint32_t max_segments,
                         DeviceSrqEvents* events, std::unique_ptr<DeviceSrq>& out) override;
  Status CreateCompletionQueue(std::uint32_t entries, std::unique_ptr<CompletionQueue>& out) override;
  Status CreateEndpoint(const EndpointConfig& config, EndpointEvents* events, std::unique_ptr<Endpoint>& out) override;
  Status Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) override;
  // UD endpoints' address resolution (RDMA_PS_UDP, SIDR) on `port`: verbs_ud.h.
  Status ListenDatagram(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) override;
  bool Progress() noexcept override;
  void WakeForAsyncEvents() override { Wake(); }

  // For the objects of this transport.
  const Device& device() const { return device_; }
  bool busy_poll() const { return busy_poll_; }
  rdma_event_channel* cm_channel() const { return cm_channel_; }
  AsyncEventRouter& async_events() const { return *async_events_; }
  Turn& turn() const { return turn_; }
  // A new endpoint's generation, which tags its work requests.
  std::uint64_t NextGeneration() { return generation_.fetch_add(1, std::memory_order_relaxed); }
  // The CQ of endpoints that have no EVD on a side (made on first use, watched); null when the
  // device refuses it.
  VerbsCq* OwnCq();
  // The progress looks at `endpoint` soon (a request, a completion error); any thread.
  void RequestService(VerbsEndpoint* endpoint);
  // `endpoint` leaves the service lists (its destructor).
  void Forget(VerbsEndpoint* endpoint);
  // The progress polls `cq` on its notifications (watched) or no more.
  void Watch(VerbsCq* cq, bool watched);
  void Wake();  // the progress runs soon

 private:
  void Run();
  // With the turn held.
  bool DrainAll(bool& timers);
  bool DrainCm();
  bool DrainAsync();
  bool ServiceEndpoints(bool with_deadlines, bool& timers);
  bool PollWatched();
  // Whether `cq` is watched now (the progress thread checks what epoll reported).
  bool IsWatched(const VerbsCq* cq);

  Device device_;
  Capabilities capabilities_;
  IaOptions options_;
  const bool busy_poll_;
  std::shared_ptr<AsyncEventRouter> async_events_;
  rdma_event_channel* cm_channel_ = nullptr;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  mutable Turn turn_;
  std::atomic<std::uint64_t> generation_{1};
  softdat::Mutex own_cq_mutex_;
  std::unique_ptr<VerbsCq> own_cq_;  // under own_cq_mutex_ until made, then fixed
  std::atomic<VerbsCq*> own_cq_made_{nullptr};
  softdat::Mutex service_mutex_;
  std::vector<VerbsEndpoint*> service_;    // asked for service, under service_mutex_
  std::vector<VerbsEndpoint*> deadlines_;  // waiting for a deadline, under service_mutex_
  std::vector<VerbsCq*> watched_;          // under service_mutex_
  // progress=poll: an endpoint or the async router asked for the progress (Wake); how many
  // times Progress ran (to look at the rdma_cm and async fds every few calls; under the turn).
  std::atomic<bool> requested_{false};
  std::uint32_t progress_calls_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Opens the device `params` names ("verbs <device> <port>") and starts its transport. A
// transport::TransportFactory (transport/factory.h).
Status CreateVerbsTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out);

}  // namespace softdat::transport::verbs
