// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// shm::Connection between two processes (this test and a child it forks), where cross-memory
// attach is the kernel's decision: every path moves data (a Send through the ring, a pulled
// Send, a one-sided Write and Read); across users the side that may not attach gets the ring
// path and the other keeps its one-sided accesses; a peer killed with SIGKILL is seen through
// the socket, in the middle of a message as broken; and nothing of the connection (mapping,
// descriptor) is left once it is gone.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "transport/shm/test_pair.h"

namespace softdat::transport::shm {
namespace {

using testing::ActiveHalf;
using testing::Drive;
using testing::LocalEndOf;
using testing::PassiveHalf;
using testing::SegmentOver;
using transport::testing::Bytes;
using transport::testing::RecordingEvents;
using transport::testing::SmallEndpointConfig;

constexpr std::uint32_t kKey = (2u << 8) | 1;
constexpr std::size_t kRegion = 1 << 20;
constexpr Geometry kGeometry{{65536, 65536}};

// Runs `body` in a child process; its return value is the child's exit code.
pid_t Fork(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

// The child's exit code, or -1 (after killing it) when it did not end within the bound.
int WaitChild(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    ::usleep(10000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

std::vector<std::uint8_t> AddressBytes(const void* p) {
  const auto address = reinterpret_cast<std::uint64_t>(p);
  std::vector<std::uint8_t> bytes(8);
  std::memcpy(bytes.data(), &address, 8);
  return bytes;
}

std::uint64_t AddressOf(std::span<const std::uint8_t> bytes) {
  std::uint64_t address = 0;
  if (bytes.size() == 8) std::memcpy(&address, bytes.data(), 8);
  return address;
}

void PublishRegion(KeyTable& table, RecordingEvents& events, std::vector<std::uint8_t>& region, const Binding& binding) {
  KeyGrant grant;
  grant.key = kKey;
  grant.address = reinterpret_cast<std::uint64_t>(region.data());
  grant.length = region.size();
  grant.access = kRemoteRead | kRemoteWrite;
  grant.pz = binding.pz;
  table.Publish(grant);
  events.Expose(region, kKey, true);
}

Work MakeWork(std::uint64_t id, WorkKind kind, std::span<const Segment> local, std::uint64_t remote = 0) {
  Work w;
  w.id = id;
  w.kind = kind;
  w.local = local;
  for (const Segment& s : local) w.length += s.length;
  w.remote_address = remote;
  w.remote_key = kKey;
  return w;
}

// What the child does: connects to `port`, exposes its own region (its address as the
// Request's private data), sends an 8-byte and a 1 MiB Send, Writes 1 MiB into the parent's
// region and Reads it back, receives the parent's 1 MiB Send, then disconnects. Once its four
// Works are posted it writes a byte to `posted_fd`. Returns 0 when all went as expected, else a
// code saying what failed.
int ChildScenario(std::uint16_t port, bool as_other_user, int posted_fd) {
  if (as_other_user && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 90;
  std::unique_ptr<KeyTable> table;
  if (!KeyTable::Create(16, false, table).ok()) return 91;
  RecordingEvents events;
  std::vector<std::uint8_t> region(kRegion, 0);
  PublishRegion(*table, events, region, testing::kActiveBinding);
  Established established;
  if (!ActiveHalf(port, kGeometry, LocalEndOf(table.get(), testing::kActiveBinding, true), AddressBytes(region.data()),
                  established))
    return 92;
  if (established.attach == as_other_user) return 93;  // across users the kernel refuses us
  const std::uint64_t parent_region = AddressOf(established.peer_private_data.view());
  Connection connection(std::move(established), SmallEndpointConfig(), ConnectionOptions(), *table, &events, nullptr);
  std::vector<std::uint8_t> small = Bytes(8, 1), large = Bytes(kRegion, 2), back(kRegion, 0), sink(kRegion, 0);
  const Segment small_out[] = {SegmentOver(small)}, large_out[] = {SegmentOver(large)};
  const Segment back_in[] = {SegmentOver(back)}, sink_in[] = {SegmentOver(sink)};
  events.AddBuffer(sink_in);
  if (!connection.Post(MakeWork(1, WorkKind::kSend, small_out)).ok()) return 94;
  if (!connection.Post(MakeWork(2, WorkKind::kSend, large_out)).ok()) return 94;
  if (!connection.Post(MakeWork(3, WorkKind::kRdmaWrite, large_out, parent_region)).ok()) return 94;
  if (!connection.Post(MakeWork(4, WorkKind::kRdmaRead, back_in, parent_region)).ok()) return 94;
  const char posted = 1;
  if (::write(posted_fd, &posted, 1) != 1) return 94;
  // Done when our four Works completed, the parent's Send arrived and its one-sided Write landed.
  const std::vector<std::uint8_t> parent_write = Bytes(4096, 4);
  if (!Drive({&connection}, [&] {
        return events.Get(events.work_done).size() == 4 && events.Get(events.recvs).size() == 1 &&
               std::equal(parent_write.begin(), parent_write.end(), region.begin() + 4096);
      }))
    return 95;
  for (const auto& done : events.Get(events.work_done))
    if (done.status != WorkStatus::kSuccess) return 96;
  if (back != large) return 97;
  if (sink != Bytes(kRegion, 3)) return 98;
  connection.Disconnect(true);
  if (!Drive({&connection}, [&] { return events.Get(events.ended_count) == 1; })) return 99;
  return events.Get(events.ended) == ConnectionEnd::kDisconnected ? 0 : 100;
}

// The parent's half of ChildScenario: accepts, receives the two Sends, sends its own 1 MiB Send,
// Writes 1 MiB into the child's region, and waits for the child's disconnect. Its first poll
// comes only after the child's Sends are in the ring (the order in which a poll finds a Send
// before the consumer's buffers, and holds it until RecvBuffersAvailable): the parent's buffers
// are there before that poll, as a consumer posts its receives before it connects.
void ParentScenario(bool child_is_other_user) {
  std::unique_ptr<KeyTable> table;
  ASSERT_TRUE(KeyTable::Create(16, false, table).ok());
  RecordingEvents events;
  std::vector<std::uint8_t> region(kRegion, 0);
  PublishRegion(*table, events, region, testing::kPassiveBinding);
  const std::uint16_t port = testing::NextPort();
  UniqueFd listener;
  ASSERT_TRUE(ListenRendezvous(testing::Loopback(), port, listener).ok());
  int posted_pipe[2];
  ASSERT_EQ(::pipe(posted_pipe), 0);
  UniqueFd posted(posted_pipe[0]), posted_write(posted_pipe[1]);
  const pid_t child = Fork([&] {
    listener.Reset();
    posted.Reset();
    return ChildScenario(port, child_is_other_user, posted_write.get());
  });
  ASSERT_GT(child, 0);
  posted_write.Reset();
  Established established;
  ASSERT_TRUE(PassiveHalf(listener.get(), LocalEndOf(table.get(), testing::kPassiveBinding, true),
                          AddressBytes(region.data()), established));
  EXPECT_TRUE(established.attach) << "we may attach to our child (same user, or root)";
  EXPECT_EQ(established.peer_pid, child);
  const std::uint64_t child_region = AddressOf(established.peer_private_data.view());
  {
    Connection connection(std::move(established), SmallEndpointConfig(), ConnectionOptions(), *table, &events, nullptr);
    std::vector<std::uint8_t> small_sink(8), large_sink(kRegion), mine = Bytes(kRegion, 3), child_bytes = Bytes(4096, 4);
    const Segment small_in[] = {SegmentOver(small_sink)}, large_in[] = {SegmentOver(large_sink)};
    const Segment mine_out[] = {SegmentOver(mine)}, child_out[] = {SegmentOver(child_bytes)};
    events.AddBuffer(small_in);
    events.AddBuffer(large_in);
    ASSERT_TRUE(testing::WaitReadable(posted.get())) << "the child posts its Works";
    // The child's Ready says whether it attaches to us: taken before our large Send is posted,
    // so that the Send is pulled (the path under test) where the child may pull.
    ASSERT_TRUE(testing::WaitReadable(connection.socket_fd()));
    connection.OnSocketReadable();
    EXPECT_EQ(connection.peer_attaches(), !child_is_other_user);
    ASSERT_TRUE(connection.Post(MakeWork(1, WorkKind::kSend, mine_out)).ok());
    ASSERT_TRUE(connection.Post(MakeWork(2, WorkKind::kRdmaWrite, child_out, child_region + 4096)).ok());
    ASSERT_TRUE(Drive({&connection}, [&] { return events.Get(events.ended_count) == 1; }));
    EXPECT_EQ(events.Get(events.ended), ConnectionEnd::kDisconnected);
    const auto recvs = events.Get(events.recvs);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(small_sink, Bytes(8, 1));
    EXPECT_EQ(large_sink, Bytes(kRegion, 2));
    EXPECT_EQ(region, Bytes(kRegion, 2)) << "the child's RDMA Write";
    const auto done = events.Get(events.work_done);
    ASSERT_EQ(done.size(), 2u);
    for (const auto& d : done) EXPECT_EQ(d.status, WorkStatus::kSuccess);
  }
  EXPECT_EQ(WaitChild(child), 0);
}

TEST(ShmAcrossProcesses, EveryPathMovesData) { ParentScenario(false); }

TEST(ShmAcrossProcesses, AcrossUsersTheSideThatMayNotAttachUsesTheRing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the child as another user";
  ParentScenario(true);
}

// Whether this process maps or holds a connection segment.
bool HoldsASegment() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("softdat-shm-connection") != std::string::npos) return true;
  return false;
}

// The child connects, writes the first record of a two-record Send by hand (or nothing), and
// dies by SIGKILL: the parent sees the end through the socket.
ConnectionEnd PeerKilled(bool mid_message) {
  std::unique_ptr<KeyTable> table;
  EXPECT_TRUE(KeyTable::Create(16, false, table).ok());
  RecordingEvents events;
  const std::uint16_t port = testing::NextPort();
  UniqueFd listener;
  EXPECT_TRUE(ListenRendezvous(testing::Loopback(), port, listener).ok());
  const pid_t child = Fork([&] {
    listener.Reset();
    std::unique_ptr<KeyTable> child_table;
    if (!KeyTable::Create(16, false, child_table).ok()) return 1;
    Established established;
    if (!ActiveHalf(port, kGeometry, LocalEndOf(child_table.get(), testing::kActiveBinding, true), {}, established)) return 2;
    if (mid_message) {
      RingWriter writer;
      writer.Attach(established.segment.data() + RingOffset(kGeometry, kActive), kGeometry.ring_bytes[0],
                    &reinterpret_cast<SideControl*>(established.segment.data() + kControlOffset)[kPassive].consumed);
      RecordHeader* header = writer.Begin(100);
      header->opcode = Opcode::kSend;
      header->flags = 0;  // not the last record
      header->msn = 1;
      header->total = 200;
      header->offset = 0;
      writer.Commit(header, 100);
    }
    ::raise(SIGKILL);
    return 3;
  });
  Established established;
  EXPECT_TRUE(PassiveHalf(listener.get(), LocalEndOf(table.get(), testing::kPassiveBinding, true), {}, established));
  std::vector<std::uint8_t> sink(200), mine = Bytes(1 << 20, 1);
  const Segment in[] = {SegmentOver(sink)}, out[] = {SegmentOver(mine)};
  events.AddBuffer(in);
  ConnectionEnd why = ConnectionEnd::kTimedOut;
  {
    Connection connection(std::move(established), SmallEndpointConfig(), ConnectionOptions(), *table, &events, nullptr);
    EXPECT_TRUE(HoldsASegment());
    // A pulled Send the dead peer never consumes: left for core's flush, never completed.
    EXPECT_TRUE(connection.Post(MakeWork(1, WorkKind::kSend, out)).ok());
    EXPECT_TRUE(Drive({&connection}, [&] { return events.Get(events.ended_count) == 1; }));
    why = events.Get(events.ended).value_or(ConnectionEnd::kTimedOut);
    EXPECT_TRUE(events.Get(events.work_done).empty());
  }
  EXPECT_FALSE(HoldsASegment()) << "the segment is unmapped with its connection";
  EXPECT_EQ(WaitChild(child), 128 + SIGKILL);
  return why;
}

TEST(ShmAcrossProcesses, APeerKilledIsSeenThroughTheSocket) {
  EXPECT_EQ(PeerKilled(false), ConnectionEnd::kDisconnected) << "as a TCP peer's FIN";
}

TEST(ShmAcrossProcesses, APeerKilledInTheMiddleOfAMessageBreaksTheConnection) {
  EXPECT_EQ(PeerKilled(true), ConnectionEnd::kBroken);
}

}  // namespace
}  // namespace softdat::transport::shm
