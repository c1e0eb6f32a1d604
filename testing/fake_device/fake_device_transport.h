// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// An in-process fake of a *device* transport (receive model kDevice, device memory keys), for
// testing core/'s device path without hardware. It behaves like an RC NIC just enough for that:
// memory registration gives distinct lkeys and rkeys, endpoints of any fake IA in the process
// pair up by port, each endpoint has a FIFO receive queue, a DeviceSrq is a FIFO the "device"
// consumes in message-arrival order across the endpoints on it, RDMA Write and Read check the
// rkey, segments must carry a registered lkey, and the SRQ has a one-shot limit event. The DAT IB
// extensions too: RDMA Write with immediate data (the immediate takes a receive), 64-bit atomics
// (rkey, bounds, the atomic right and alignment checked as a responder checks them) and datagram
// endpoints (Resolve through a datagram listener; a datagram with no receive posted is dropped;
// receives start with InfiniBand's 40-byte GRH room). A test turns an extension off through
// mutable_capabilities() before it creates what uses it.
//
// Busy-poll: nothing moves until someone calls Progress() (the EVD waits of an IA on it do). All
// fake IAs share one "fabric" with one queue of pending device work, so any of them progresses
// all. Test-only: it allocates freely and takes one global lock.
//
// Injected, not registered: open a core::Ia with FakeDeviceTransport::Create as its transport
// factory and tcp-style params naming an IPv4 literal ("tcp 127.0.0.1"), and reach the fake
// through Of(ia->transport()).
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include <string>

#include "transport/ia_params.h"
#include "transport/transport.h"

namespace softdat::testing::fake_device {

// Knobs a test turns to reach the rules under test.
struct Behaviour {
  bool refuse_srq_resize = false;  // DeviceSrq::Resize answers kModelNotSupported (as siw does)
  // On a connection's end, report each receive still on an endpoint's own queue as a kFlushed
  // completion before OnEnded (as verbs does with IBV_WC_WR_FLUSH_ERR); otherwise report only
  // OnEnded and leave the flush to core.
  bool flush_receives_before_end = true;
  // The device consumes receive buffers as messages arrive but reports their completions only at
  // ReleaseHeldReceives(), or as kFlushed when the connection ends first: a window in which the
  // device holds buffers nobody has heard of.
  bool hold_receive_completions = false;
  // ArmLimit on an SRQ already holding fewer buffers than the limit fails with
  // kInvalidParameter, as rxe's ibv_modify_srq does (EINVAL); otherwise the event fires at once.
  bool refuse_limit_below_depth = false;
  // CreateEndpoint fails with kInsufficientResources (kTep), as a NIC out of QPs does.
  bool refuse_endpoints = false;
  // ProgressDue answers yes, as a transport holding back much posted Work does.
  bool progress_due = false;
  // CreateCompletionQueue makes a completion queue (as verbs does): the completions of endpoints
  // that name one wait there until an EVD's dequeue or wait polls it (or the connection ends);
  // otherwise the transport refuses (kModelNotSupported) and Progress reports them.
  bool completion_queues = false;
  // An accepted connection is reported established to the passive side only at
  // ReleaseHeldEstablished(): the active side may send, and the device deliver, before the passive
  // side hears of its connection (as rdma_cm's ESTABLISHED may come after the first receive).
  bool hold_passive_established = false;
  // Called once, on the reading thread, the next time an endpoint's local address is read (then
  // cleared): core reads it while it takes a connection's ESTABLISHED, so a test can act in the
  // middle of that step. Set it from the test's thread while nothing else reads addresses.
  std::function<void()> on_local_address;
  // Disconnect finds the connection already reset by its peer: the endpoint ends kBroken at once,
  // ahead of the work queued, as when the peer's reset or Terminate came in before the close took
  // effect; the peer, which closed abruptly, ends kBroken too.
  bool peer_resets_at_disconnect = false;
};

class FakeDeviceTransport : public transport::Transport {
 public:
  // A transport::TransportFactory: a fake device on the IPv4 literal `params.address`.
  static Status Create(const IaParams& params, std::string& why, std::unique_ptr<transport::Transport>& out);
  // The fake under `transport` (which must be one).
  static FakeDeviceTransport& Of(transport::Transport& transport);

  explicit FakeDeviceTransport(const sockaddr_in& address);
  ~FakeDeviceTransport() override;

  Behaviour& behaviour() { return behaviour_; }
  // What the fake reports; a test may lower limits before it creates objects.
  transport::Capabilities& mutable_capabilities() { return capabilities_; }

  // How many regions are registered now (a test sees an LMR's registration go with it).
  std::size_t registered_regions() const;
  // Receives posted to the device SRQs of this transport and not yet consumed by the device.
  std::size_t device_srq_depth() const;
  // Reports the completions held back (Behaviour::hold_receive_completions), in their order.
  void ReleaseHeldReceives();
  // Reports the passive sides' ESTABLISHED held back (Behaviour::hold_passive_established).
  void ReleaseHeldEstablished();
  // A broken device: reports a successful receive `recv_id` that nobody posted, on every
  // connected endpoint of this transport.
  void InjectStrayReceive(std::uint64_t recv_id);

  const transport::Capabilities& capabilities() const override { return capabilities_; }
  sockaddr_in address() const override { return address_; }
  Status CreateProtectionDomain(std::unique_ptr<transport::ProtectionDomain>& out) override;
  Status RegisterMemory(transport::ProtectionDomain& pd, void* address, std::uint64_t length,
                        transport::MemoryAccess access,
                        std::unique_ptr<transport::MemoryRegion>& out) override;
  Status CreateDeviceSrq(transport::ProtectionDomain& pd, std::uint32_t max_work, std::uint32_t max_segments,
                         transport::DeviceSrqEvents* events,
                         std::unique_ptr<transport::DeviceSrq>& out) override;
  Status CreateCompletionQueue(std::uint32_t entries, std::unique_ptr<transport::CompletionQueue>& out) override;
  Status CreateEndpoint(const transport::EndpointConfig& config, transport::EndpointEvents* events,
                        std::unique_ptr<transport::Endpoint>& out) override;
  Status Listen(std::uint16_t port, transport::ListenEvents* events,
                std::unique_ptr<transport::Listener>& out) override;
  Status ListenDatagram(std::uint16_t port, transport::ListenEvents* events,
                        std::unique_ptr<transport::Listener>& out) override;
  // Runs pending device work of every fake IA, and polls the watched completion queues of this
  // one (an EVD with a CNO: nobody else would); true when anything ran.
  bool Progress() noexcept override;
  bool ProgressDue() const noexcept override { return behaviour_.progress_due; }
  // Runs only the oldest pending step (a test stops the device between two of them).
  bool Step();
  // How often Progress was called on this transport (by the IA's EVDs or a test).
  std::size_t progress_calls() const { return progress_calls_.load(std::memory_order_relaxed); }
  // Completions waiting in this transport's completion queues, and how often they were polled.
  std::size_t queued_completions() const;
  std::size_t completion_polls() const;
  // Work posted with quiet_success (what a NIC would post unsignalled), under the fabric's lock.
  std::size_t quiet_posts() const;
  void CountQuietPost() { ++quiet_posts_; }

 private:
  transport::Capabilities capabilities_;
  sockaddr_in address_;
  Behaviour behaviour_;
  // Waits on several threads (a sleeper and a poller of one IA) call Progress at once.
  std::atomic<std::size_t> progress_calls_{0};
  std::size_t quiet_posts_ = 0;  // under the fabric's lock
};

}  // namespace softdat::testing::fake_device
