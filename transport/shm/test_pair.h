// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test helper: two ends of a shared-memory connection, either both in this process (the
// handshake's two halves run in this thread; a process may attach to itself, so every path runs)
// or one per process (each half on its own, for tests that fork a peer). Each side has its own
// key table and recorder (transport/test_recorder.h); Drive polls until a condition holds,
// bounded, reading each side's socket when it is readable as a poll set would.
#pragma once

#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "transport/shm/handshake.h"
#include "transport/shm/shm_connection.h"
#include "transport/test_recorder.h"

namespace softdat::transport::shm::testing {

using transport::testing::RecordingEvents;

inline in_addr Loopback() {
  in_addr a;
  a.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A port for this process's next rendezvous: abstract names are shared by every process of the
// namespace, so each test process takes its own range.
inline std::uint16_t NextPort() {
  static std::atomic<int> next{0};
  return static_cast<std::uint16_t>(30000 + (::getpid() % 2000) * 16 + next++ % 16);
}

// What both sides' handshakes use: the tests' endpoint numbers and one PZ.
inline constexpr Binding kActiveBinding{1, 11};
inline constexpr Binding kPassiveBinding{1, 22};

struct PairConfig {
  Geometry geometry{{65536, 65536}};
  bool active_attach = true;
  bool passive_attach = true;
  ConnectionOptions options;
  EndpointConfig config = transport::testing::SmallEndpointConfig();
  std::vector<std::uint8_t> request_data;
  std::vector<std::uint8_t> reply_data;
  // The passive side's pulls fail as if its kernel refused them after the probe passed (its
  // peer was told it attaches): the resend path.
  bool passive_refuses_pulls = false;
  // Events the passive connection reports to instead of its recorder (a test's wrapper).
  EndpointEvents* passive_events = nullptr;
  // The passive side's table says a thread of its owner reads its rings while awake, as an IA
  // with a progress thread says (KeyTable::Create).
  bool passive_thread_reads = false;
};

inline bool WaitReadable(int fd, int timeout_ms = 30000) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

// The passive half: waits for one Request on `listener` and accepts it.
inline bool PassiveHalf(int listener, const LocalEnd& local, const std::vector<std::uint8_t>& reply, Established& out) {
  if (!WaitReadable(listener)) return false;
  PassiveHandshake handshake(AcceptRendezvous(listener));
  if (!WaitReadable(handshake.fd()) || handshake.OnReadable() != PassiveHandshake::Step::kRequest) return false;
  if (!handshake.AcceptWith(reply, local)) return false;
  out = handshake.Take();  // the Ready comes to the Connection
  return true;
}

// The active half: dials `port` and waits for the Accept.
inline bool ActiveHalf(std::uint16_t port, const Geometry& geometry, const LocalEnd& local,
                       const std::vector<std::uint8_t>& request, Established& out) {
  ActiveHandshake handshake;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr = Loopback();
  if (handshake.Start(Loopback(), port, geometry, address, request, local) != Dial::kConnected) return false;
  if (!WaitReadable(handshake.fd()) || handshake.OnReadable() != ActiveHandshake::Step::kEstablished) return false;
  out = handshake.Take();
  return true;
}

struct Side {
  std::uint8_t* segment = nullptr;  // this side's mapping of the connection segment (for hostile tests)
  Geometry geometry;
  std::unique_ptr<KeyTable> table;
  std::unique_ptr<RecordingEvents> events = std::make_unique<RecordingEvents>();
  std::unique_ptr<Connection> connection;
  Connection* operator->() { return connection.get(); }
};

inline LocalEnd LocalEndOf(KeyTable* table, const Binding& binding, bool attach) {
  LocalEnd local;
  local.table = table;
  local.binding = binding;
  local.ird = local.ord = 4;
  local.attach = attach;
  return local;
}

// Both ends in this process; false (with a test failure) when the handshake failed.
inline bool MakePair(const PairConfig& c, Side& active, Side& passive) {
  if (!KeyTable::Create(64, false, active.table).ok() ||
      !KeyTable::Create(64, c.passive_thread_reads, passive.table).ok())
    return false;
  const std::uint16_t port = NextPort();
  UniqueFd listener;
  if (!ListenRendezvous(Loopback(), port, listener).ok()) return false;
  ActiveHandshake handshake;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr = Loopback();
  if (handshake.Start(Loopback(), port, c.geometry, address, c.request_data,
                      LocalEndOf(active.table.get(), kActiveBinding, c.active_attach)) != Dial::kConnected)
    return false;
  Established passive_end;
  if (!WaitReadable(listener.get())) return false;
  PassiveHandshake passive_handshake(AcceptRendezvous(listener.get()));
  if (!WaitReadable(passive_handshake.fd()) || passive_handshake.OnReadable() != PassiveHandshake::Step::kRequest)
    return false;
  if (!passive_handshake.AcceptWith(c.reply_data, LocalEndOf(passive.table.get(), kPassiveBinding, c.passive_attach)))
    return false;
  if (!WaitReadable(handshake.fd()) || handshake.OnReadable() != ActiveHandshake::Step::kEstablished) return false;
  Established a = handshake.Take();
  Established p = passive_handshake.Take();
  if (c.passive_refuses_pulls) p.attach = false;
  active.segment = a.segment.data();
  passive.segment = p.segment.data();
  active.geometry = passive.geometry = c.geometry;
  active.connection = std::make_unique<Connection>(std::move(a), c.config, c.options, *active.table, active.events.get(), nullptr);
  passive.connection = std::make_unique<Connection>(std::move(p), c.config, c.options, *passive.table,
                                                    c.passive_events != nullptr ? c.passive_events : passive.events.get(), nullptr);
  // The passive side takes the active side's Ready, as its poll set would at once.
  if (!WaitReadable(passive.connection->socket_fd())) return false;
  passive.connection->OnSocketReadable();
  return true;
}

// Polls `connections` (and reads their sockets when readable) until `done` holds; false when
// the bound passed first.
inline bool Drive(std::initializer_list<Connection*> connections, const std::function<bool()>& done,
                  std::chrono::seconds bound = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (int round = 0;; ++round) {
    for (Connection* c : connections) {
      if (c == nullptr) continue;
      c->Poll();
      if ((round & 15) == 0 && !c->ended() && WaitReadable(c->socket_fd(), 0)) c->OnSocketReadable();
    }
    if (done()) return true;
    if ((round & 255) == 255 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

// The segment of registered memory over `v` (the key is ignored by this transport).
inline Segment SegmentOver(std::vector<std::uint8_t>& v, std::size_t offset = 0, std::size_t length = SIZE_MAX) {
  return transport::testing::SegmentOf(v, offset, length);
}

}  // namespace softdat::transport::shm::testing
