// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A passive shm::Connection before the active side's Ready (handshake.h): it is established as
// its Accept goes out, reports so at its first poll and sends at once (large Sends through the
// ring until the Ready says the peer may pull them); the Ready then tells it whether the peer
// attaches. A peer that leaves before its Ready, sends something else first, or sends none in
// time breaks the connection.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "transport/shm/shm_connection.h"
#include "transport/shm/test_pair.h"

namespace softdat::transport::shm {
namespace {

using testing::Drive;
using testing::LocalEndOf;
using testing::Loopback;
using testing::SegmentOver;
using testing::WaitReadable;
using transport::testing::Bytes;
using transport::testing::RecordingEvents;
using transport::testing::SmallEndpointConfig;

// The passive side accepted; the active side has not read the Accept (so sent no Ready).
struct AcceptedNotReady {
  explicit AcceptedNotReady(ConnectionOptions options = ConnectionOptions()) {
    EXPECT_TRUE(KeyTable::Create(8, false, active_table).ok());
    EXPECT_TRUE(KeyTable::Create(8, false, passive_table).ok());
    const std::uint16_t port = testing::NextPort();
    UniqueFd listener;
    EXPECT_TRUE(ListenRendezvous(Loopback(), port, listener).ok());
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr = Loopback();
    EXPECT_EQ(active->Start(Loopback(), port, Geometry{{65536, 65536}}, address, {},
                           LocalEndOf(active_table.get(), testing::kActiveBinding, true)),
              Dial::kConnected);
    EXPECT_TRUE(WaitReadable(listener.get()));
    PassiveHandshake handshake(AcceptRendezvous(listener.get()));
    EXPECT_TRUE(WaitReadable(handshake.fd()));
    EXPECT_EQ(handshake.OnReadable(), PassiveHandshake::Step::kRequest);
    EXPECT_TRUE(handshake.AcceptWith({}, LocalEndOf(passive_table.get(), testing::kPassiveBinding, true)));
    passive = std::make_unique<Connection>(handshake.Take(), SmallEndpointConfig(), options, *passive_table,
                                           &passive_events, nullptr);
  }
  // The active side reads the Accept (and sends its Ready) and gets its Connection.
  void ActiveReads() {
    ASSERT_TRUE(WaitReadable(active->fd()));
    ASSERT_EQ(active->OnReadable(), ActiveHandshake::Step::kEstablished);
    active_connection = std::make_unique<Connection>(active->Take(), SmallEndpointConfig(), ConnectionOptions(),
                                                     *active_table, &active_events, nullptr);
  }
  bool PassiveEnded() {
    return Drive({passive.get()}, [&] { return passive_events.Get(passive_events.ended_count) == 1; });
  }

  std::unique_ptr<KeyTable> active_table, passive_table;
  std::unique_ptr<ActiveHandshake> active = std::make_unique<ActiveHandshake>();
  RecordingEvents active_events, passive_events;
  std::unique_ptr<Connection> passive, active_connection;
};

TEST(ShmReady, ThePassiveSideIsEstablishedAndSendsBeforeTheActiveSidesReady) {
  AcceptedNotReady s;
  ASSERT_TRUE(Drive({s.passive.get()}, [&] { return s.passive_events.Get(s.passive_events.established) == 1; }))
      << "the passive side's ESTABLISHED waits for nothing of the active side";
  EXPECT_FALSE(s.passive->peer_attaches()) << "not known before the Ready";
  // Posted before the Ready: the large one goes through the ring, as nobody may pull it yet.
  std::vector<std::uint8_t> small = Bytes(8, 1), large = Bytes(256 << 10, 2);
  const Segment small_out[] = {SegmentOver(small)}, large_out[] = {SegmentOver(large)};
  Work send;
  send.kind = WorkKind::kSend;
  send.id = 1;
  send.local = small_out;
  send.length = small.size();
  ASSERT_TRUE(s.passive->Post(send).ok());
  send.id = 2;
  send.local = large_out;
  send.length = large.size();
  ASSERT_TRUE(s.passive->Post(send).ok());

  ASSERT_NO_FATAL_FAILURE(s.ActiveReads());
  std::vector<std::uint8_t> small_sink(8), large_sink(large.size());
  const Segment small_in[] = {SegmentOver(small_sink)}, large_in[] = {SegmentOver(large_sink)};
  s.active_events.AddBuffer(small_in);
  s.active_events.AddBuffer(large_in);
  ASSERT_TRUE(Drive({s.passive.get(), s.active_connection.get()},
                    [&] { return s.active_events.Get(s.active_events.recvs).size() == 2; }));
  EXPECT_EQ(small_sink, small);
  EXPECT_EQ(large_sink, large);
  ASSERT_TRUE(Drive({s.passive.get(), s.active_connection.get()},
                    [&] { return s.passive_events.Get(s.passive_events.work_done).size() == 2; }));
  for (const auto& done : s.passive_events.Get(s.passive_events.work_done)) EXPECT_EQ(done.status, WorkStatus::kSuccess);
  EXPECT_TRUE(s.passive->peer_attaches()) << "the Ready said the active side attaches (a process may attach to itself)";
  EXPECT_FALSE(s.passive->ended());
}

TEST(ShmReady, APeerThatLeavesBeforeItsReadyBreaksTheConnection) {
  AcceptedNotReady s;
  s.active.reset();  // closes its socket without reading the Accept
  ASSERT_TRUE(s.PassiveEnded());
  EXPECT_EQ(s.passive_events.Get(s.passive_events.ended), ConnectionEnd::kBroken);
}

TEST(ShmReady, NoReadyInTimeBreaksTheConnection) {
  ConnectionOptions options;
  options.ready_timeout_ms = 50;
  AcceptedNotReady s(options);
  ASSERT_TRUE(s.PassiveEnded());
  EXPECT_EQ(s.passive_events.Get(s.passive_events.ended), ConnectionEnd::kBroken);
}

// A Ready that came in time but was not read until after the deadline (a consumer with
// progress=poll that made no call meanwhile; the poll looks at the rings before the socket) is
// read then: the connection stays.
TEST(ShmReady, AReadyInTimeButReadLateKeepsTheConnection) {
  ConnectionOptions options;
  options.ready_timeout_ms = 50;
  AcceptedNotReady s(options);
  ASSERT_TRUE(Drive({s.passive.get()}, [&] { return s.passive_events.Get(s.passive_events.established) == 1; }));
  ASSERT_NO_FATAL_FAILURE(s.ActiveReads());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (void)s.passive->Poll();  // the rings and the deadline only, as a consumer's poll
  EXPECT_FALSE(s.passive->ended()) << "the Ready in the socket was not looked at";
  EXPECT_TRUE(s.passive->peer_attaches());
}

TEST(ShmReady, AnythingButTheReadyFirstBreaksTheConnection) {
  AcceptedNotReady s;
  std::uint8_t bytes[kMaxMessage];
  const std::size_t length = EncodeClose(CloseReason::kGraceful, 0, bytes);
  ASSERT_TRUE(SendMessage(s.active->fd(), {bytes, length}));
  ASSERT_TRUE(s.PassiveEnded());
  EXPECT_EQ(s.passive_events.Get(s.passive_events.ended), ConnectionEnd::kBroken);
}

}  // namespace
}  // namespace softdat::transport::shm
