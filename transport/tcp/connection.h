// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One iWARP-over-TCP connection: its setup (connection_setup.cc: TCP connect, the MPA exchange,
// graceful and abrupt close, Terminate, the one place it ends), its receive stream (RxStream) and
// its transmit stream (TxStream), each with an explicit state (connection_state.h), and the
// entry points that drive them (connection_progress.cc: polls, kicks, detach; connection_post.cc:
// what consumer threads call). The TcpEndpoint a core EP owns forwards to it.
//
// Threads, and what each may touch:
//  - The progress context — whoever drives the transport's progress now: a consumer thread in an
//    EVD wait or dequeue (TcpTransport::Progress), or the progress thread — owns the setup state,
//    the socket, both streams and the RDMA Read rings, under io_mutex_ (taken through IoLock).
//    It runs PollIo when the PollSet finds the socket readable, OnKick when consumer threads left
//    a note, and Asio handlers (setup, timers, a wait for socket room).
//  - Consumer threads call Connect, Accept, Post, RecvBuffersAvailable, Disconnect and Detach.
//    They leave Work in the PostQueue (its own mutex) and notes in atomics (a disconnect, posted
//    buffers, a pending kick), then Kick. Post also writes at once when it gets io_mutex_ with
//    try_lock and the transmit stream may write (the latency path); it never reports an event
//    (core holds the EP's state lock around it).
//  - Reports to core (EndpointEvents) only record; IoLock delivers them (EndpointEvents::Deliver)
//    after it releases io_mutex_, so no softdat lock is held when they reach an EVD. Detach waits
//    for a delivery that began before it; after Detach returns nothing touches the consumer's
//    memory or calls the EP. The Connection itself lives on (shared_ptr) until its last holder
//    lets go.
// Locks: io_mutex_, then the PostQueue's; address_mutex_ alone (log lines and queries).
#pragma once

#include <netinet/in.h>

#include <array>
#include <atomic>
#include <chrono>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/endpoint.h"
#include "transport/tcp/connection_buffers.h"
#include "transport/tcp/connection_state.h"
#include "transport/tcp/poll_set.h"
#include "transport/tcp/post_queue.h"
#include "transport/tcp/progress_target.h"
#include "transport/tcp/rdma_reads.h"
#include "transport/tcp/rx_stream.h"
#include "transport/tcp/tx_stream.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {

namespace asio = boost::asio;

class KickQueue;
class PollSet;

// How long a graceful close is given, either way: our FIN waits this long for the peer's, and the
// messages a peer sent before its FIN wait this long for receive buffers (RxStream::HoldAfterPeerClosed).
inline constexpr std::chrono::milliseconds kCloseLinger{3000};

// What the transport's IA options say about every connection.
struct ConnectionOptions {
  KickQueue* kicks = nullptr;       // how consumer threads wake the progress context
  PollSet* poll_set = nullptr;      // where the connected socket waits to be read
  std::shared_ptr<ConnectionBuffers> buffers;  // the pools of receive, send and inline blocks
  sockaddr_in local{};              // the IA address: active connections bind to it
  std::uint32_t rnr_timeout_ms = 0;  // 0: a message waits for a receive buffer forever
  std::uint32_t timeout_ms = 0;      // TCP_USER_TIMEOUT and keepalive; 0: the kernel's limits
  std::uint64_t coalesce_ns = 16'000;  // a send-only stream's coalescing window (TxStream); 0: none
  // progress=poll: nothing writes between the consumer's DAT calls, so a Post writes everything
  // queued that the socket takes, with no coalescing and no wait for earlier completions.
  bool post_writes_all = false;
  bool mpa_crc = true;
  std::uint32_t max_private_data = 0;
  std::string congestion = "auto";  // the IA's congestion= (congestion.h)
};

class Connection final : public ProgressTarget, public std::enable_shared_from_this<Connection> {
 public:
  Connection(asio::io_context& io, const ConnectionOptions& options, const EndpointConfig& config,
             EndpointEvents* events);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Consumer threads (see Endpoint in transport/endpoint.h for each contract; connection_post.cc).
  Status Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us);
  // Passive side: takes over `socket`, whose MPA Request `request` a listener read.
  Status Accept(asio::ip::tcp::socket socket, const wire::MpaFrame& request,
                std::span<const std::uint8_t> private_data);
  Status Post(const Work& work);
  void RecvBuffersAvailable();
  void Disconnect(bool graceful);
  // The endpoint goes away: no event runs after this returns.
  void Detach();

  // The progress context (connection_progress.cc). A poller found the socket readable (or polls
  // its only connection): reads and places what arrived, reports completions, sends what is
  // queued. `wait` takes io_mutex_ even when another thread holds it (the progress thread);
  // otherwise a busy connection is left to its holder. True when bytes arrived or it ended.
  bool PollIo(bool wait) override;
  // Acts on what consumer threads left (a disconnect, buffers for a held message, Work to send).
  // False when a consumer's poll should leave it for later (coalescing); `ia_last_write_ns`:
  // when the IA last wrote, as the caller's drain began (TxStream::Due).
  bool OnKick(bool consumer, std::uint64_t ia_last_write_ns = 0) override;
  void Kick();  // any thread: OnKick runs soon, once however often this is called
  // Any thread, after a consumer's Post put all it had on the socket: only its completion is left
  // to report. Queued for the next poll without a wake while nobody can be waiting for it
  // (KickQueue::MayBeWaitedOn); kicked otherwise.
  void Defer();

  sockaddr_in local_address() const;
  sockaddr_in remote_address() const;
  // "LOCAL -> PEER" (addresses and ports) for log lines: the peer is known from the connect
  // request on, the local end once connected (before that: "-> PEER").
  std::array<char, 64> Describe() const;

 private:
  friend class RxStream;
  friend class TxStream;
  friend struct ConnectionTestAccess;  // testing/tcp_seams: connections over a socketpair

  // A consumer's request to end the connection, left for the progress context.
  enum class DisconnectRequest : std::uint8_t { kNone, kGraceful, kAbrupt };

  // io_mutex_, taken for a section of the progress context; on release, what the section
  // reported to the EndpointEvents is delivered (EndpointEvents::Deliver) with no lock held.
  class IoLock {
   public:
    explicit IoLock(Connection& connection, bool wait = true) : connection_(connection) {
      if (wait) {
        connection_.io_mutex_.lock();
        owns_ = true;
      } else {
        owns_ = connection_.io_mutex_.try_lock();
      }
    }
    ~IoLock() {
      if (owns_) connection_.UnlockAndDeliver();
    }
    IoLock(const IoLock&) = delete;
    IoLock& operator=(const IoLock&) = delete;
    bool owns_lock() const { return owns_; }

   private:
    Connection& connection_;
    bool owns_ = false;
  };
  void UnlockAndDeliver();

  SetupState setup() const { return setup_.load(std::memory_order_relaxed); }
  void Enter(SetupEvent event);
  bool detached() const { return events_ == nullptr; }
  // A report went to the EndpointEvents: IoLock delivers when it unlocks.
  void Reported() { report_pending_ = true; }
  int fd() { return socket_.native_handle(); }

  // Setup (connection_setup.cc).
  void StartConnect(sockaddr_in remote, std::uint64_t timeout_us);
  void OnConnected(const boost::system::error_code& error);
  void SendMpaRequest();
  bool ReadMpaReply();  // true once the Reply is read (or the connection ended)
  void StartAccept(wire::MpaFrame request);
  // StartAccept's two sections: the Reply made and held, the ESTABLISHED reported (false: the
  // accept ended here); then, once it is delivered, the Reply sent.
  bool ReportAccepted(const wire::MpaFrame& request, bool& await_rtr);
  void SendAcceptReply(bool await_rtr);
  void Establish(SetupEvent event, std::span<const std::uint8_t> private_data);  // Enter, then report
  void OnFirstFpdu();  // the initiator's first FPDU (or the ready-to-receive one) arrived
  void BeginClose();
  void MaybeFinishClose();
  void End(ConnectionEnd why, std::span<const std::uint8_t> private_data = {});
  void Terminate(wire::TerminateCode code);
  void CloseSocket();
  void RecordAddresses();
  void ApplySocketOptions();  // the socket is connected: no delay, non-blocking, the IA's timeout
  void ApplyCongestion();     // the IA's congestion= on the connected socket (after RecordAddresses)

  // Progress (connection_progress.cc).
  void StartPolling();  // the socket is connected: into the transport's PollSet
  void SetWatch(PollSet::Watch watch);  // a held receive stream watches only for the peer's end
  bool EndIfPeerGone();  // held, and reported: ends the connection if the peer reset it (true then)

  asio::io_context& io_;
  const ConnectionOptions options_;
  const EndpointConfig config_;

  // Consumer threads' notes (atomics: read and cleared by the progress context).
  std::atomic<bool> started_{false};  // Connect or Accept happened (once)
  // Queued for OnKick (KickQueue's once-only rule): kQueued without a wake (Defer), kKicked with
  // one asked for. A Kick that finds kQueued asks for the wake the Defer spared.
  enum class KickState : std::uint8_t { kNone, kQueued, kKicked };
  std::atomic<KickState> kick_state_{KickState::kNone};
  std::atomic<DisconnectRequest> disconnect_{DisconnectRequest::kNone};

  // Progress context, under io_mutex_ (setup_ is also read without it: Post sees the end).
  softdat::Mutex io_mutex_;
  std::atomic<SetupState> setup_{SetupState::kIdle};
  EndpointEvents* events_;            // null once detached
  bool report_pending_ = false;       // an event was reported: IoLock delivers when it unlocks
  std::atomic<int> delivering_{0};    // deliveries running after their IoLock released io_mutex_
  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;  // connect timeout, ready-to-receive wait, graceful close linger
  bool crc_;                  // the MPA exchange's verdict (either side asking turns it on)
  std::vector<std::uint8_t> private_data_;  // ours to send
  struct PollRegistration {
    std::uint64_t token = 0;
    bool registered = false;  // in the PollSet ...
    PollSet::Watch watch = PollSet::Watch::kData;  // ... and reported readable, or not (held)
  } poll_;
  PostQueue posts_;
  FixedRing<OutboundRead> reads_out_;  // ours, at most the ORD the peer granted (ord_)
  FixedRing<InboundRead> reads_in_;    // the peer's, at most our IRD
  std::uint32_t ord_ = 1;
  RxStream rx_;
  TxStream tx_;

  mutable softdat::Mutex address_mutex_;
  sockaddr_in local_{};
  sockaddr_in remote_{};
};

}  // namespace softdat::transport::tcp
