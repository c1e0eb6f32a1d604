// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The same-host path of the TCP transport (issue 36): a connection between two softdat IAs of one
// host and network namespace runs on transport/shm's engine instead of iWARP over TCP, with the
// same EndpointEvents, so core sees no difference. Every other peer goes over TCP as before: the
// active side dials the listener's rendezvous first and uses TCP when nobody answers there.
//
//  LocalPaths       one per IA with shm=auto: the key table peers check this IA's keys in, the
//                   live shared-memory connections (polled beside the sockets: Poll; checked
//                   before the progress thread sleeps: PrepareSleep), the engine's options.
//  LocalConnection  one connection: its handshake (active: dialed by TcpEndpoint::Connect;
//                   passive: the request a listener read, accepted by the consumer), then the
//                   shm::Connection. A ProgressTarget (its socket in the IA's PollSet: doorbells and
//                   the peer's end; kicks through the IA's KickQueue) and the engine's Kicker.
//
// Threads: the handshake's waits and timers run in the IA's io_context (the progress thread, or
// the consumer's polls in busy-poll mode); once established the engine's own rules hold
// (shm_connection.h): Post and the notes from consumer threads, Poll from whoever polls.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/container/static_vector.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/device_resources.h"
#include "transport/endpoint.h"
#include "transport/shm/handshake.h"
#include "transport/shm/key_table.h"
#include "transport/shm/shm_connection.h"
#include "transport/tcp/progress_target.h"
#include "transport/transport.h"

namespace softdat::transport::tcp {

class KickQueue;
class PollSet;
class LocalConnection;

// The bits of an IA's activity table its connections hold. Shared by the IA's LocalPaths and each
// connection, which gives its bit back when it goes, whenever that is (a handler the io_context
// drops at the transport's end may hold the last reference).
class ActivitySlots {
 public:
  // A free bit, or shm::kNoActivitySlot when none is left.
  std::uint32_t Allocate();
  void Free(std::uint32_t slot);

 private:
  softdat::Mutex mutex_;
  std::vector<std::uint32_t> free_;
  std::uint32_t next_ = 0;  // never given out at or above it
};

// The TCP transport's protection domain: a number, which the keys it publishes and the endpoints
// of the same-host path name (shm::Binding).
class TcpProtectionDomain final : public ProtectionDomain {
 public:
  explicit TcpProtectionDomain(std::uint32_t number) : number_(number) {}
  std::uint32_t number() const { return number_; }

 private:
  const std::uint32_t number_;
};

struct TcpTransportTestAccess;

class LocalPaths {
 public:
  struct Options {
    sockaddr_in address{};  // the IA's
    std::uint32_t rnr_timeout_ms = 0;
    std::uint32_t max_private_data = 0;
    // The IA has a progress thread (not progress=poll): peers are told so in the key table.
    bool progress_thread = false;
  };
  // Null (with a warning) when the key table cannot be made: the IA then uses TCP only.
  static std::unique_ptr<LocalPaths> Create(boost::asio::io_context& io, KickQueue& kicks, PollSet& poll_set,
                                            const Options& options);
  ~LocalPaths();
  LocalPaths(const LocalPaths&) = delete;
  LocalPaths& operator=(const LocalPaths&) = delete;

  // Keys core published and revoked (Transport::PublishKey, RevokeKey).
  void Publish(const PublishedKey& key);
  void Revoke(std::uint32_t key);

  // Progress: live connections that have something to do move. With few connections every one is
  // looked at (a few loads each); with more, those whose bits their peers set in the IA's
  // activity table (shm/activity.h), and a few more in turn, so that every connection is looked
  // at within live / 4 polls whatever the bits say. `progress_thread`: the caller is the IA's
  // progress thread, awake (the sleep word goes even). True when something moved.
  bool Poll(bool progress_thread);
  // Whether a live connection has something to do (lock-free per connection; the watchdog).
  bool HasWork() { return Scan(nullptr); }
  // Progress thread, about to sleep: announces the sleep (peers ring doorbells from now on) and
  // looks once more. True when a live connection has work (polled, moved or not: another thread
  // may hold it): the sleep is off, do not sleep.
  bool PrepareSleep();
  void EndSleep();

  // Connections (LocalConnection).
  // The bits of the IA's activity table (null: no table) and the table.
  const std::shared_ptr<ActivitySlots>& slots() const { return slots_; }
  shm::ActivityTable* activity() const { return activity_.get(); }
  void Add(const std::shared_ptr<LocalConnection>& connection);
  void Remove(const LocalConnection* connection);
  // A port number for the active side of a connection (dat_cr_query shows it to the peer): the
  // shared-memory path has no TCP port, so it is a number of the ephemeral range, cycling.
  std::uint16_t NextPort();

  std::size_t live() const { return live_count_.load(std::memory_order_relaxed); }  // established, not ended
  boost::asio::io_context& io() { return io_; }
  KickQueue& kicks() { return kicks_; }
  PollSet& poll_set() { return poll_set_; }
  shm::KeyTable& keys() { return *keys_; }
  const Options& options() const { return options_; }
  const shm::ConnectionOptions& connection_options() const { return connection_options_; }
  const shm::Geometry& geometry() const { return geometry_; }

 private:
  friend struct TcpTransportTestAccess;  // test_seams.h
  LocalPaths(boost::asio::io_context& io, KickQueue& kicks, PollSet& poll_set, const Options& options,
             std::unique_ptr<shm::KeyTable> keys);
  // Connections one poll moves; the next poll starts after the last one it took.
  static constexpr std::size_t kReadyPerScan = 16;
  // The connections a poll found ready, each held (its own reference: the live list may drop it
  // meanwhile) from when it is found. A fixed-capacity vector, not an array: an array of
  // kReadyPerScan shared_ptrs, built and destroyed on every poll, was about 100 instructions of a
  // same-host round trip (shm_profile).
  using ReadyConnections = boost::container::static_vector<std::shared_ptr<LocalConnection>, kReadyPerScan>;

  // Whether a live connection has work; `earliest` (if given) gets the earliest deadline of those
  // that have none (0: no deadline); `completions` as shm::Connection::HasWork's.
  bool Scan(std::uint64_t* earliest, bool completions = true);
  // Under mutex_: of up to `limit` live connections from the cursor on, the ones with work into
  // `ready` while it has room.
  void ScanLocked(ReadyConnections& ready, std::size_t limit);
  // Under mutex_: the connections whose bits are set (taken), into `ready` while it has room.
  void TakeMarkedLocked(ReadyConnections& ready);

  boost::asio::io_context& io_;
  KickQueue& kicks_;
  PollSet& poll_set_;
  const Options options_;
  shm::ConnectionOptions connection_options_;
  shm::Geometry geometry_;
  std::unique_ptr<shm::KeyTable> keys_;
  std::unique_ptr<shm::ActivityTable> activity_;  // null: every connection is looked at
  std::atomic<std::uint32_t> next_port_{0};
  std::shared_ptr<ActivitySlots> slots_;          // null without activity_
  // The live connections (established, not yet ended). A poller looks at each under the mutex
  // (HasWork: loads only) and moves the ones that have work after releasing it (they deliver
  // events, which no lock may be held across); a poller that finds the mutex taken leaves the
  // scan to its holder.
  softdat::Mutex mutex_;
  std::vector<std::shared_ptr<LocalConnection>> live_;
  std::atomic<std::size_t> live_count_{0};
  std::size_t cursor_ = 0;  // where the next scan starts (mutex_): a bounded scan treats all alike
  std::vector<std::shared_ptr<LocalConnection>> by_slot_;  // mutex_: live connections by activity slot
  std::size_t word_cursor_ = 0;  // mutex_: the activity word the next take starts at
  std::size_t in_turn_;          // mutex_: connections a poll by bits also looks at in turn
  // Wakes the sleeping progress thread for a connection's deadline (an RNR wait, a graceful
  // close's linger): the peer rings no doorbell for those. Progress thread only.
  boost::asio::steady_timer deadline_timer_;
  std::uint64_t deadline_armed_ns_ = 0;
};

class LocalConnection final : public ProgressTarget, public shm::Kicker,
                              public std::enable_shared_from_this<LocalConnection> {
 public:
  LocalConnection(LocalPaths& paths, const EndpointConfig& config, EndpointEvents* events);
  ~LocalConnection();
  LocalConnection(const LocalConnection&) = delete;
  LocalConnection& operator=(const LocalConnection&) = delete;

  enum class Dialed : std::uint8_t { kStarted, kNobody };
  // Active side: dials the rendezvous of `remote`:`port` and sends the request. kNobody: no
  // softdat listener there in this namespace (or no resources for this path): use TCP, nothing
  // was reported. kStarted: OnEstablished or OnEnded follows (kTimedOut after `timeout_us`).
  Dialed Dial(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
              std::uint64_t timeout_us);
  // Passive side: the consumer accepted the request `handshake` read (addresses as dat_cr_query
  // showed them). OnEstablished or OnEnded(kAcceptFailed) follows.
  void Accept(std::unique_ptr<shm::PassiveHandshake> handshake, std::span<const std::uint8_t> private_data,
              const sockaddr_in& local, const sockaddr_in& remote);

  // Consumer threads (endpoint.h).
  Status Post(const Work& work);
  void RecvBuffersAvailable();
  void Disconnect(bool graceful);
  void Detach();  // the endpoint goes: no event after it returns
  sockaddr_in local_address() const;
  sockaddr_in remote_address() const;

  // ProgressTarget: the socket of an established connection is readable (a doorbell, the peer's
  // close notice or end); a kick.
  bool PollIo(bool wait) override;
  bool OnKick(bool consumer, std::uint64_t ia_last_write_ns) override;
  // shm::Kicker: the engine asks for a poll (consumer threads' notes).
  void Kick(shm::Connection& connection) override;
  bool Defer(shm::Connection& connection) override;

  // LocalPaths' scan (established connections only).
  bool HasWork(bool completions = true) const { return engine_->HasWork(completions); }
  std::uint32_t activity_slot() const { return activity_slot_; }
  std::uint64_t deadline_ns() const { return engine_->deadline_ns(); }
  bool Poll();

 private:
  friend struct TcpTransportTestAccess;  // test_seams.h
  enum class Phase : std::uint8_t { kIdle, kDialed, kAccepting, kEstablished, kEnded };

  // mutex_ for a handshake step; what it reported is delivered after the unlock.
  class Locked;
  void UnlockAndDeliver();
  void WaitReadable();  // the handshake's socket, in the io_context (a duplicate descriptor)
  void OnHandshakeReadable();
  void OnTimeout();
  void StartAccept(std::vector<std::uint8_t> private_data);
  // A Post between the passive side's ESTABLISHED and its engine (StartAccept): queued for the
  // engine, which takes it first; or, once the Accept failed, left to the end to flush.
  Status PostEarly(const Work& work);
  // The engine takes the early Works, then is published for Posts (mutex_ held).
  void Publish(shm::Connection& engine);
  // The Accept failed or the endpoint went: no engine comes (early_mutex_ is taken).
  void EndEarly();
  // The handshake finished: the engine takes over (mutex_ held). Returns the engine to poll once
  // the lock is released (its first poll reports OnEstablished, unless StartAccept did).
  shm::Connection* Establish(shm::Established&& established);
  void EndHandshake(ConnectionEnd why, std::span<const std::uint8_t> private_data = {});  // mutex_ held
  void StopWaiting();  // mutex_ held
  bool AfterPoll(bool moved);  // an engine that ended leaves the poll set and the live list
  shm::LocalEnd LocalEndOf() const;
  std::array<char, 64> Describe() const;

  LocalPaths& paths_;
  const EndpointConfig config_;
  const std::shared_ptr<ActivitySlots> slots_;
  const std::uint32_t activity_slot_;  // this connection's bit in the IA's activity table

  softdat::Mutex mutex_;  // the handshake and the phase
  Phase phase_ = Phase::kIdle;
  EndpointEvents* events_;  // null once detached
  bool report_pending_ = false;
  std::atomic<int> delivering_{0};
  std::unique_ptr<shm::ActiveHandshake> active_;
  std::unique_ptr<shm::PassiveHandshake> passive_;
  boost::asio::posix::stream_descriptor wait_;  // a duplicate of the handshake's socket
  boost::asio::steady_timer timer_;
  std::vector<std::uint8_t> private_data_;  // the active side's, kept for a dial's life

  // The engine's queues, made in the consumer's Dial or Accept and handed to the engine at the
  // establishment (shm::Connection::Queues says why).
  shm::Connection::Queues queues_;
  // The engine, once established (set once, before engine_ready_).
  std::unique_ptr<shm::Connection> engine_;
  std::atomic<shm::Connection*> engine_ready_{nullptr};
  // The passive side's ESTABLISHED went to the consumer before its Accept went out (StartAccept).
  enum class AcceptReport : std::uint8_t { kNone, kReported, kFailed };
  std::atomic<AcceptReport> accept_report_{AcceptReport::kNone};
  // Works posted after that ESTABLISHED and before the engine, in order. Not waited for in Post:
  // the consumer posts under the EP's lock, which the ESTABLISHED's own delivery pass may still
  // need (a wait here hung kill_peer_test_shm).
  softdat::Mutex early_mutex_;
  std::vector<Work> early_;  // under early_mutex_
  std::uint64_t poll_token_ = 0;
  std::atomic<bool> registered_{false};  // in the live list (and the poll set, unless socket_out_)
  bool socket_out_ = false;  // the socket left the poll set before the end (engine->socket_done())
  softdat::Mutex registration_mutex_;    // leaving them, and closing the socket after

  mutable softdat::Mutex address_mutex_;
  sockaddr_in local_{};
  sockaddr_in remote_{};
};

}  // namespace softdat::transport::tcp
