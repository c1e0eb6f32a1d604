// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsTransport: one rdma-core device port per IA. It owns the rdma_cm event channel, the
// completion channel every endpoint's CQs report to, and the progress that reads them with the
// device's async events (through the device's AsyncEventRouter, shared with the other IAs of the
// process on that device).
//
// Who drives it:
//  - progress=poll: only the consumer's dat_evd_wait/dat_evd_dequeue, through Progress(), which
//    polls every endpoint's CQs directly (no CQ notification is armed, no eventfd, no epoll, no
//    thread); rdma_cm and async events and the endpoints' requests are looked at when an endpoint
//    asked (Wake sets a flag) and every few calls otherwise.
//  - default: a progress thread sleeps in epoll on the channels. A consumer spinning in
//    dat_evd_wait polls the CQs itself (Progress()); while it does (it polled in the last
//    millisecond), the thread leaves a CQ whose notification it took unarmed, so completions do
//    not wake it needlessly. Pause() (the consumer is about to sleep), or a millisecond without a
//    consumer poll, makes the thread re-arm them and poll once more.
//
// Locking: every event reaches core while the progress holds the dispatch lock (recursive, so a
// destructor called from inside another object's event works). Destructors of endpoints,
// listeners and SRQs take it, which is how "no event runs after the destructor returns" holds.
// Calls from core (Connect, Accept, Disconnect, Post, PostRecv) never take it: they record a
// request and wake the progress, or post straight to the device under the endpoint's own lock.
#pragma once

#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/transport.h"
#include "transport/verbs/async_events.h"
#include "transport/verbs/verbs_device.h"

namespace softdat::transport::verbs {

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
  Status CreateEndpoint(const EndpointConfig& config, EndpointEvents* events, std::unique_ptr<Endpoint>& out) override;
  Status Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) override;
  bool Progress() noexcept override;
  void Pause() noexcept override;
  void WakeForAsyncEvents() override { Wake(); }

  // For the objects of this transport.
  const Device& device() const { return device_; }
  bool busy_poll() const { return busy_poll_; }
  rdma_event_channel* cm_channel() const { return cm_channel_; }
  ibv_comp_channel* comp_channel() const { return comp_channel_; }  // null with progress=poll
  AsyncEventRouter& async_events() const { return *async_events_; }
  std::unique_lock<std::recursive_mutex> LockDispatch() { return std::unique_lock(dispatch_); }
  void Wake();  // the progress looks at the endpoints' requests and async events soon
  void AddEndpoint(VerbsEndpoint* endpoint);     // takes the dispatch lock
  void RemoveEndpoint(VerbsEndpoint* endpoint);  // under the dispatch lock

 private:
  void Run();
  // Under the dispatch lock (dispatching_ set by the caller).
  bool DrainAll();
  bool DrainCm();
  bool DrainAsync();
  bool DrainCqEvents();
  bool PollAllCqs();
  bool SweepEndpoints(bool& timers);
  // Default mode: re-arms the CQ notifications left unarmed once no consumer polls.
  void RearmIfIdle();
  bool ConsumerPolling() const;

  Device device_;
  Capabilities capabilities_;
  IaOptions options_;
  const bool busy_poll_;
  std::shared_ptr<AsyncEventRouter> async_events_;
  rdma_event_channel* cm_channel_ = nullptr;
  ibv_comp_channel* comp_channel_ = nullptr;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::recursive_mutex dispatch_;
  bool dispatching_ = false;  // under dispatch_: Progress() called from inside an event does nothing
  std::atomic<bool> timers_{false};  // some endpoint waits for a deadline: wake up periodically
  std::vector<VerbsEndpoint*> endpoints_;  // under dispatch_; slots, null when free
  // progress=poll: an endpoint or the async router asked for the progress (Wake); how many
  // times Progress ran (to look at the rdma_cm and async fds every few calls).
  std::atomic<bool> requested_{false};
  std::uint32_t progress_calls_ = 0;  // under dispatch_
  // Default mode: when a consumer last polled (steady clock ns, 0 after Pause), and whether the
  // thread left some CQ unarmed because of it.
  std::atomic<std::int64_t> consumer_poll_ns_{0};
  std::atomic<bool> unarmed_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Opens the device `params` names ("verbs <device> <port>") and starts its transport. A
// transport::TransportFactory (transport/factory.h).
Status CreateVerbsTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out);

}  // namespace softdat::transport::verbs
