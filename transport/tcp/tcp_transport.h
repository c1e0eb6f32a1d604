// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The TCP transport: iWARP (MPA/DDP/RDMAP) over kernel TCP sockets. Connection setup, timers and a
// write that waits for socket room run on one Boost.Asio io_context per IA; the data path does
// not wait on Asio: connected sockets sit in one level-triggered epoll set (PollSet), and
// whoever drives progress reads the ready ones directly.
//
// Who drives progress (the guarantee is softdat(7)'s PROGRESS and docs/ARCHITECTURE.md's):
//  - busy-poll (progress=poll): the consumer's calls. A post writes at once whatever the socket
//    takes (ConnectionOptions::post_writes_all); arrivals are read in Progress(), which every EVD
//    wait and dequeue and every CNO wait on the IA runs. No progress thread: a watchdog thread
//    (Watch) only warns when input waits a second for a call.
//  - default: a progress thread, and the consumers' own waits while they spin. The thread sleeps
//    in its io_context until a socket, a kick or a timer needs it, handles that, then busy-polls
//    for thread_spin_us while a CPU is idle (SpareCpu). A consumer that spins on the sockets (a
//    streak of Progress() calls close together) parks it on a timer its polls put off
//    (ParkTimer), outside the io_context (Asio's edge-triggered epoll would wake it for every
//    arrival the consumer takes anyway, and on a small machine each wake-up preempts a spinning
//    consumer); the parked thread sleeps until handoff_us after the consumers' last call and
//    takes the sockets back then, or at once when a consumer about to sleep says so (Pause()).
//    Kicks wake the thread only when no consumer polled within handoff_us (a polling consumer
//    drains them with what it posted meanwhile); once a kick is left so, a timer at the last
//    poll + handoff_us drains it should the polls stop (WatchConsumers, or the park as it ends).
//    So an arrival or a posted Work waits for someone handoff_us at most, whatever the consumer
//    does. One exception: the completion of a consumer's own Post that put its Work whole on the
//    socket, with no consumer asleep in a wait and no CNO (core reports both: ReportWaits),
//    waits in the kick ring for the next poll, as a completion waits in a device's CQ, rather
//    than wake the thread (Connection::Defer).
// Same-host connections (shm=auto; local_path.h) are polled with the sockets: each poll looks at
// their rings first (loads, no syscall), their sockets are in the PollSet (doorbells, the peer's
// end), and the progress thread announces its sleep to their peers first (RunOne), so that they
// ring a doorbell; the guarantees above, and their exception, hold for them alike (the deferred
// completion marks the connection for the next poll: LocalConnection::Defer).
// Software receive model: srq/ picks receive buffers.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <condition_variable>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "base/mutex.h"
#include "transport/tcp/kick_queue.h"
#include "transport/tcp/local_path.h"
#include "transport/tcp/park_timer.h"
#include "transport/tcp/poll_set.h"
#include "transport/tcp/spare_cpu.h"
#include "transport/tcp/connection.h"
#include "transport/transport.h"

namespace softdat::transport::tcp {

class TcpTransport final : public Transport {
 public:
  TcpTransport(const sockaddr_in& address, const IaOptions& options);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  const Capabilities& capabilities() const override { return capabilities_; }
  sockaddr_in address() const override { return address_; }
  Status CreateProtectionDomain(std::unique_ptr<ProtectionDomain>& out) override;
  Status RegisterMemory(ProtectionDomain& pd, void* address, std::uint64_t length, MemoryAccess access,
                        std::unique_ptr<MemoryRegion>& out) override;
  Status CreateDeviceSrq(ProtectionDomain& pd, std::uint32_t max_work, std::uint32_t max_segments,
                         DeviceSrqEvents* events, std::unique_ptr<DeviceSrq>& out) override;
  Status CreateEndpoint(const EndpointConfig& config, EndpointEvents* events, std::unique_ptr<Endpoint>& out) override;
  Status Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) override;
  // UD endpoints (CreateEndpoint with EndpointConfig::datagram) and their resolution over UDP:
  // ud_endpoint.h, ud_listener.h.
  Status ListenDatagram(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) override;
  bool Progress() noexcept override;
  // True once kDueDepth connections hold Work back for the next drain (see Progress).
  bool ProgressDue() const noexcept override;
  // The same-host path's key table (LocalPaths): what peers' one-sided RDMA checks.
  void PublishKey(const PublishedKey& key) override;
  void RevokeKey(std::uint32_t key) override;
  // Connections queued for a drain at which a consumer reaping events drains them before it
  // reaps on: one answering each completion with a post over many connections would otherwise
  // write its copies only once its EVD is empty, from memory instead of the cache (32
  // connections of four 4 KiB Sends are 512 KiB of copies; PERFORMANCE.md, "SRQ fan-in and many connections").
  static constexpr std::size_t kDueDepth = 32;
  void Pause() noexcept override;
  void Resume() noexcept override;
  void ReportWaits() noexcept override { kicks_.ReportWaits(); }
  void ConsumerWatches(int delta) noexcept override { kicks_.AddWaiters(delta); }

  // The pools every connection takes its buffers from (for tests and reports).
  const ConnectionBuffers& buffers() const { return *connection_options_.buffers; }

 private:
  friend struct TcpTransportTestAccess;  // test_seams.h
  void Run() noexcept;
  bool RunOne();  // progress thread: one handler, sleeping for it if none is ready
  void Watch() noexcept;  // progress=poll: warns of data that waits for a DAT call
  // Reads every ready connection until none is (bounded); `wait` blocks on a busy connection.
  bool PollReady(bool wait) noexcept;
  void ArmPollSet();
  void OnPollSetReady();
  // Progress thread, after traffic: polls the sockets and kicks until thread_spin_us pass with
  // nothing to do, or consumers start polling.
  void SpinAfterTraffic();
  void ArmParkFromConsumer();
  void BeginConsumerSpell();
  // Whether a kick wakes the progress thread (KickQueue's needs_wake).
  bool KickWakes() noexcept;
  // Something was left for the polling consumers: make sure the spell's end is watched.
  void WatchSpell() noexcept;
  void WatchConsumers();
  void EndConsumerSpell();
  void Park();
  bool RunAsio() noexcept;
  // Whether a consumer's poll (the `calls`th; `any`: it moved something) runs the io_context.
  bool AsioDue(std::uint32_t calls, bool any) noexcept;
  // Counts a consumer's poll in `calls`; the count before it.
  static std::uint32_t CountCall(std::atomic<std::uint32_t>& calls) noexcept;
  // Whether kIdleLookNs passed since `last` (then `last` becomes `now`).
  static bool LookDue(std::atomic<std::uint64_t>& last, std::uint64_t now) noexcept;

  const sockaddr_in address_;
  Capabilities capabilities_;
  const bool busy_poll_;
  ConnectionOptions connection_options_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  PollSet poll_set_;
  asio::posix::stream_descriptor poll_descriptor_;  // the PollSet's epoll fd, in the io_context
  const std::uint64_t handoff_ns_;
  const std::uint64_t thread_spin_ns_;
  std::atomic<bool> park_armed_{false};  // the progress thread parks (or is about to): consumers polled
  std::atomic<bool> parked_{false};      // it is parked: consumers run the io_context's handlers
  softdat::Mutex park_mutex_;
  std::condition_variable_any park_cv_;  // the watchdog's sleep; the park's without a ParkTimer
  ParkTimer park_timer_;  // the parked thread's sleep, which consumers' polls postpone
  std::atomic<std::uint64_t> park_wakeups_{0};  // times the parked thread woke (test_seams.h)
  // When a consumer last called Progress() (0: it paused), and how many calls in a row came
  // within kStreakGapNs of each other (the spin that parks the progress thread).
  std::atomic<std::uint64_t> last_poll_ns_{0};
  std::atomic<std::uint32_t> poll_streak_{0};
  SpareCpu spare_cpu_;  // progress thread: may it busy-poll (SpinAfterTraffic)
  bool poll_armed_ = false;          // progress thread: a wait on poll_descriptor_ is pending
  KickQueue kicks_;  // after io_: destroyed before it
  std::unique_ptr<LocalPaths> local_;  // shm=auto: the same-host path (null: TCP only)
  std::atomic<std::uint32_t> pd_numbers_{0};
  std::atomic<std::uint32_t> indirect_polls_{0};  // consumer polls of a PollSet of same-host sockets only
  std::atomic<std::uint64_t> last_indirect_look_ns_{0};  // a consumer's last epoll_wait on those
  std::atomic<std::uint64_t> last_asio_ns_{0};           // a consumer's last run of the io_context
  // A consumer polled within handoff_us: kicks do not wake the progress thread, and the watch
  // (a timer in the io_context, at the last poll + handoff_us) drains what they leave. The watch
  // runs only once something was left (spell_watched_): a spell that leaves nothing ends unseen.
  std::atomic<bool> consumers_active_{false};
  std::atomic<bool> spell_watched_{false};
  asio::steady_timer consumer_watch_;
  bool watching_consumers_ = false;  // io_context handlers only
  std::atomic<bool> asio_turn_{false};  // one consumer thread at a time runs the io_context's handlers
  std::atomic<std::uint32_t> progress_calls_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // the default mode's progress thread; progress=poll's watchdog
};

// Resolves the IA address of `params` and makes the transport: a transport::TransportFactory
// (transport/factory.h).
Status CreateTcpTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out);

}  // namespace softdat::transport::tcp
