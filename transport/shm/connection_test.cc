// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// shm::Connection, both ends in this process (cross_process_test.cc has two processes):
// establishment with private data; Sends of every size through the ring and by pull, with their
// flags, in order; a Send with no receive buffer held in the ring while the sender waits, then
// delivered (or the RNR timeout); RDMA Writes and Reads one-sided (the target never polls) and
// through the ring, with the remote-key checks either way, and short Writes through the ring
// while the target's own thread reads it; a pull the receiver's kernel refuses,
// resent through the ring; the IB extensions (RDMA Write with immediate data both ways, atomics
// executed by the target, a refused atomic, a datagram Send refused); graceful and abrupt ends; the access rule at revocation and at the
// end; doorbells only while the peer sleeps; and a peer that writes garbage or lies.
#include "transport/shm/shm_connection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/shm/test_pair.h"

namespace softdat::transport::shm {
namespace {

using testing::Drive;
using testing::MakePair;
using testing::PairConfig;
using testing::SegmentOver;
using testing::Side;
using transport::testing::Bytes;
using transport::testing::RecordingEvents;
using transport::testing::SmallEndpointConfig;

constexpr std::uint32_t kKey = (3u << 8) | 1;

Work SendOf(std::uint64_t id, std::span<const Segment> local) {
  Work w;
  w.id = id;
  w.kind = WorkKind::kSend;
  w.local = local;
  for (const Segment& s : local) w.length += s.length;
  return w;
}

Work RdmaOf(std::uint64_t id, WorkKind kind, std::span<const Segment> local, std::uint64_t address,
            std::uint32_t key = kKey) {
  Work w = SendOf(id, local);
  w.kind = kind;
  w.remote_address = address;
  w.remote_key = key;
  return w;
}

// Publishes `region` in `side`'s key table under kKey for the peer's one-sided access, and
// exposes it to the peer's records (ResolveRemote) the same way.
void Publish(Side& side, std::vector<std::uint8_t>& region, std::uint32_t access = kRemoteRead | kRemoteWrite,
             std::uint32_t key = kKey) {
  KeyGrant grant;
  grant.key = key;
  grant.address = reinterpret_cast<std::uint64_t>(region.data());
  grant.length = region.size();
  grant.access = access;
  grant.pz = testing::kPassiveBinding.pz;
  ASSERT_TRUE(side.table->Publish(grant));
  side.events->Expose(region, key, (access & kRemoteWrite) != 0);
}

struct Fixture {
  explicit Fixture(const PairConfig& config = PairConfig()) { EXPECT_TRUE(MakePair(config, active, passive)); }
  bool Until(const std::function<bool()>& done) { return Drive({active.connection.get(), passive.connection.get()}, done); }
  bool Established() {
    return Until([&] { return active.events->Get(active.events->established) == 1 && passive.events->Get(passive.events->established) == 1; });
  }
  bool BothEnded() {
    return Until([&] { return active.events->Get(active.events->ended_count) == 1 && passive.events->Get(passive.events->ended_count) == 1; });
  }
  Side active;
  Side passive;
};

// 8-byte Sends from the active side, and two 8-byte buffers the passive side holds for them.
struct SmallSends {
  explicit SmallSends(Fixture& f) {
    f.passive.events->AddBuffer({&in[0], 1});
    f.passive.events->AddBuffer({&in[1], 1});
  }
  std::vector<std::uint8_t> source = Bytes(8, 1);
  std::vector<std::uint8_t> sink = std::vector<std::uint8_t>(8);
  const Segment out[1] = {SegmentOver(source)};
  const Segment in[2] = {SegmentOver(sink), SegmentOver(sink)};
};

TEST(ShmConnection, EstablishedCarriesTheReplysPrivateDataToTheActiveSide) {
  PairConfig config;
  config.request_data = {1, 2, 3};
  config.reply_data = {9, 8};
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  EXPECT_EQ(f.active.events->Get(f.active.events->peer_data), (std::vector<std::uint8_t>{9, 8}));
  EXPECT_TRUE(f.passive.events->Get(f.passive.events->peer_data).empty());
  EXPECT_TRUE(f.active->attaches());
  EXPECT_TRUE(f.passive->peer_attaches());
}

TEST(ShmConnection, AnIdleConnectionHasNoWork) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  EXPECT_FALSE(f.active->HasWork());
  EXPECT_FALSE(f.passive->HasWork());
  EXPECT_FALSE(f.active->Poll());
}

// Sends of every size through each path, in order, each in its own buffer. `whole`: the MSNs
// handed to core whole (EndpointEvents::ReceiveWhole): the Sends of one record, up to
// Connection::kMaxWholeReceive bytes.
void SendsArriveInOrder(const PairConfig& config, const std::vector<std::uint32_t>& whole) {
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  const std::size_t sizes[] = {0, 1, 8, 4000, 70000, 200000, 1 << 20, 64};
  std::vector<std::vector<std::uint8_t>> sources, sinks;
  std::vector<Segment> send_segments, recv_segments;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    sources.push_back(Bytes(sizes[i], static_cast<std::uint8_t>(i + 1)));
    sinks.emplace_back(sizes[i] + 16, 0xee);
  }
  send_segments.reserve(std::size(sizes));
  recv_segments.reserve(std::size(sizes));
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    send_segments.push_back(SegmentOver(sources[i]));
    recv_segments.push_back(SegmentOver(sinks[i]));
    f.passive.events->AddBuffer({&recv_segments[i], 1});
  }
  for (std::size_t i = 0; i < std::size(sizes); ++i)
    ASSERT_TRUE(f.active->Post(SendOf(100 + i, {&send_segments[i], 1})).ok());
  ASSERT_TRUE(f.Until([&] {
    return f.passive.events->Get(f.passive.events->recvs).size() == std::size(sizes) &&
           f.active.events->Get(f.active.events->work_done).size() == std::size(sizes);
  }));
  const auto recvs = f.passive.events->Get(f.passive.events->recvs);
  const auto done = f.active.events->Get(f.active.events->work_done);
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    SCOPED_TRACE(sizes[i]);
    EXPECT_EQ(recvs[i].id, i + 1) << "MSNs from 1, in order";
    EXPECT_EQ(recvs[i].status, WorkStatus::kSuccess);
    EXPECT_EQ(recvs[i].info.length, sizes[i]);
    EXPECT_TRUE(std::equal(sources[i].begin(), sources[i].end(), sinks[i].begin()));
    EXPECT_EQ(sinks[i][sizes[i]], 0xee) << "nothing past the message";
    EXPECT_EQ(done[i].id, 100 + i);
    EXPECT_EQ(done[i].status, WorkStatus::kSuccess);
    EXPECT_EQ(done[i].length, sizes[i]);
  }
  EXPECT_EQ(f.passive.events->Get(f.passive.events->whole_msns), whole);
}

// 0, 1, 8, 4000 and 64 bytes go whole; 70000 takes records, the rest are pulled.
TEST(ShmConnection, SendsArriveInOrderWithPulls) { SendsArriveInOrder(PairConfig(), {1, 2, 3, 4, 8}); }

TEST(ShmConnection, SendsArriveInOrderThroughTheRingOnly) {
  PairConfig config;
  config.active_attach = config.passive_attach = false;
  config.geometry = Geometry{{8192, 4096}};  // small: long Sends take many records and wraps
  // Records of at most 2016 bytes here: 4000 bytes take two, so they do not go whole.
  SendsArriveInOrder(config, {1, 2, 3, 8});
}

TEST(ShmConnection, ScatteredSendsGatherAndScatter) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  for (const std::size_t size : {3000u, 300000u}) {  // through the ring, then pulled
    std::vector<std::uint8_t> source = Bytes(size, 7), sink(size, 0);
    const Segment out[] = {SegmentOver(source, 0, 1000), SegmentOver(source, 1000, 7), SegmentOver(source, 1007)};
    const Segment in[] = {SegmentOver(sink, 0, 5), SegmentOver(sink, 5, 2000), SegmentOver(sink, 2005)};
    const std::size_t before = f.passive.events->Get(f.passive.events->recvs).size();
    f.passive.events->AddBuffer(in);
    ASSERT_TRUE(f.active->Post(SendOf(1, out)).ok());
    ASSERT_TRUE(f.Until([&] { return f.passive.events->Get(f.passive.events->recvs).size() == before + 1; }));
    EXPECT_EQ(sink, source) << size;
  }
}

TEST(ShmConnection, SolicitedAndInvalidateReachTheReceiver) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> source = Bytes(100, 1), big = Bytes(100000, 2), sink(100), big_sink(100000);
  const Segment out[] = {SegmentOver(source)}, out_big[] = {SegmentOver(big)};
  const Segment in[] = {SegmentOver(sink)}, in_big[] = {SegmentOver(big_sink)};
  f.passive.events->AddBuffer(in);
  f.passive.events->AddBuffer(in_big);
  Work solicited = SendOf(1, out);
  solicited.solicited = true;
  Work invalidate = SendOf(2, out_big);  // pulled
  invalidate.invalidate = true;
  invalidate.invalidate_key = 0x4711;
  std::vector<std::uint8_t> small_sink(100);
  const Segment in_small[] = {SegmentOver(small_sink)};
  f.passive.events->AddBuffer(in_small);
  Work small_invalidate = SendOf(3, out);  // whole
  small_invalidate.invalidate = true;
  small_invalidate.invalidate_key = 0x4712;
  ASSERT_TRUE(f.active->Post(solicited).ok());
  ASSERT_TRUE(f.active->Post(invalidate).ok());
  ASSERT_TRUE(f.active->Post(small_invalidate).ok());
  ASSERT_TRUE(f.Until([&] { return f.passive.events->Get(f.passive.events->recvs).size() == 3; }));
  const auto recvs = f.passive.events->Get(f.passive.events->recvs);
  EXPECT_TRUE(recvs[0].info.solicited);
  EXPECT_FALSE(recvs[0].info.invalidated);
  EXPECT_FALSE(recvs[1].info.solicited);
  EXPECT_TRUE(recvs[1].info.invalidated);
  EXPECT_EQ(recvs[1].info.invalidate_key, 0x4711u);
  EXPECT_FALSE(recvs[2].info.solicited);
  EXPECT_TRUE(recvs[2].info.invalidated);
  EXPECT_EQ(recvs[2].info.invalidate_key, 0x4712u);
  EXPECT_EQ(small_sink, source);
  EXPECT_EQ(f.passive.events->Get(f.passive.events->whole_msns), (std::vector<std::uint32_t>{1, 3}));
}

TEST(ShmConnection, ASendLongerThanItsBufferFailsItAndBreaksTheConnection) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> source = Bytes(200, 1), sink(100);
  const Segment out[] = {SegmentOver(source)};
  const Segment in[] = {SegmentOver(sink)};
  f.passive.events->AddBuffer(in);
  ASSERT_TRUE(f.active->Post(SendOf(1, out)).ok());
  ASSERT_TRUE(f.BothEnded());
  const auto recvs = f.passive.events->Get(f.passive.events->recvs);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].status, WorkStatus::kLocalLength);
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kBroken);
  EXPECT_EQ(f.active.events->Get(f.active.events->ended), ConnectionEnd::kBroken);
}

// No receive buffer: the first Send stays in the ring and nothing behind it is read; the sender
// fills its ring and waits (its Sends stop completing); buffers come and everything arrives.
TEST(ShmConnection, ASendWithoutABufferWaitsInTheRingAndTheSenderWaitsToo) {
  PairConfig config;
  config.geometry = Geometry{{8192, 8192}};
  config.config.max_send_work = 64;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  constexpr int kSends = 40;
  std::vector<std::uint8_t> source = Bytes(1000, 3);
  const Segment out[] = {SegmentOver(source)};
  for (int i = 0; i < kSends; ++i) ASSERT_TRUE(f.active->Post(SendOf(i, out)).ok());
  ASSERT_TRUE(f.Until([&] { return f.passive.events->Get(f.passive.events->not_ready) >= 1; }));
  // Let the sender run dry: more polls change nothing.
  for (int i = 0; i < 1000; ++i) {
    f.active->Poll();
    f.passive->Poll();
  }
  const std::size_t completed = f.active.events->Get(f.active.events->work_done).size();
  EXPECT_LT(completed, 8u) << "an 8 KiB ring holds 7 of these";
  EXPECT_TRUE(f.passive.events->Get(f.passive.events->recvs).empty());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->not_ready), 1) << "asked again only after RecvBuffersAvailable";
  std::vector<std::vector<std::uint8_t>> sinks(kSends, std::vector<std::uint8_t>(1000));
  std::vector<Segment> in;
  in.reserve(kSends);
  for (auto& sink : sinks) {
    in.push_back(SegmentOver(sink));
    f.passive.events->AddBuffer({&in.back(), 1});
  }
  f.passive->RecvBuffersAvailable();
  ASSERT_TRUE(f.Until([&] {
    return f.passive.events->Get(f.passive.events->recvs).size() == kSends &&
           f.active.events->Get(f.active.events->work_done).size() == kSends;
  }));
  for (const auto& sink : sinks) EXPECT_EQ(sink, source);
}

// The peer ends while its Send waits for a buffer: the connection breaks (the Send took no
// buffer and is dropped), as a held TCP connection that sees its peer's FIN.
TEST(ShmConnection, ThePeersEndWhileASendWaitsForABufferBreaksTheConnection) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> source = Bytes(10, 3);
  const Segment out[] = {SegmentOver(source)};
  ASSERT_TRUE(f.active->Post(SendOf(1, out)).ok());
  ASSERT_TRUE(f.Until([&] { return f.passive.events->Get(f.passive.events->not_ready) == 1; }));
  f.active->Disconnect(true);
  ASSERT_TRUE(f.BothEnded());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kBroken);
  EXPECT_TRUE(f.passive.events->Get(f.passive.events->recvs).empty());
}

// A Work posted after the end (before core heard of it) is accepted and left to the end's flush.
TEST(ShmConnection, APostThatMeetsTheEndIsLeftToItsFlush) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> source = Bytes(10, 3);
  const Segment out[] = {SegmentOver(source)};
  f.active.events->on_ended = [&] { EXPECT_TRUE(f.active->Post(SendOf(7, out)).ok()); };
  f.passive->Disconnect(false);
  ASSERT_TRUE(f.BothEnded());
  EXPECT_TRUE(f.active.events->Get(f.active.events->work_done).empty());
}

// Reports to a recorder, but the first time a Send asks for a buffer, one is posted (and
// RecvBuffersAvailable called) while core is still answering "not ready": the race of a consumer
// posting while the transport asks.
class PostsWhileAsked final : public EndpointEvents {
 public:
  PostsWhileAsked(RecordingEvents& recorder, std::span<const Segment> buffer) : recorder_(recorder), buffer_(buffer) {}
  void OnEstablished(std::span<const std::uint8_t> data) override { recorder_.OnEstablished(data); }
  void OnEnded(ConnectionEnd why, std::span<const std::uint8_t> data) override { recorder_.OnEnded(why, data); }
  RecvAcquire AcquireRecv(std::uint32_t msn, RecvTarget& target) override {
    if (raced_) return recorder_.AcquireRecv(msn, target);
    raced_ = true;
    recorder_.AddBuffer(buffer_);
    connection->RecvBuffersAvailable();
    return RecvAcquire::kNotReady;
  }
  void OnRecvDone(std::uint32_t msn, WorkStatus status, const RecvInfo& info) override { recorder_.OnRecvDone(msn, status, info); }
  void OnDeviceRecvDone(std::uint64_t, WorkStatus, const RecvInfo&) override {}
  void OnWorkDone(std::uint64_t id, WorkStatus status, std::uint32_t length) override { recorder_.OnWorkDone(id, status, length); }
  RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length, RemoteAccess access) override {
    return recorder_.ResolveRemote(key, address, length, access);
  }
  Connection* connection = nullptr;

 private:
  RecordingEvents& recorder_;
  std::span<const Segment> buffer_;
  bool raced_ = false;
};

TEST(ShmConnection, ABufferPostedWhileCoreAnswersNotReadyIsNotMissed) {
  std::vector<std::uint8_t> source = Bytes(10, 3), sink(10);
  const Segment out[] = {SegmentOver(source)}, in[] = {SegmentOver(sink)};
  RecordingEvents recorder;
  PostsWhileAsked events(recorder, in);
  PairConfig config;
  config.passive_events = &events;
  Fixture f(config);
  events.connection = f.passive.connection.get();
  ASSERT_TRUE(f.active->Post(SendOf(1, out)).ok());
  ASSERT_TRUE(f.Until([&] { return recorder.Get(recorder.recvs).size() == 1; }));
  EXPECT_EQ(sink, source);
}

TEST(ShmConnection, TheRnrTimeoutBreaksTheConnection) {
  PairConfig config;
  config.options.rnr_timeout_ms = 20;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> source = Bytes(10, 3);
  const Segment out[] = {SegmentOver(source)};
  ASSERT_TRUE(f.active->Post(SendOf(1, out)).ok());
  ASSERT_TRUE(f.BothEnded());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kBroken);
  EXPECT_EQ(f.active.events->Get(f.active.events->ended), ConnectionEnd::kBroken);
}

// An RDMA Write lands while the target never polls (no CPU of its own), and a Read reads.
TEST(ShmConnection, OneSidedWritesAndReadsNeedNoTargetPoll) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(3 << 20, 0);
  Publish(f.passive, region);
  std::vector<std::uint8_t> small = Bytes(8, 1), large = Bytes(2 << 20, 2);
  const Segment small_out[] = {SegmentOver(small)}, large_out[] = {SegmentOver(large)};
  const auto base = reinterpret_cast<std::uint64_t>(region.data());
  ASSERT_TRUE(f.active->Post(RdmaOf(1, WorkKind::kRdmaWrite, small_out, base + 100)).ok());
  ASSERT_TRUE(f.active->Post(RdmaOf(2, WorkKind::kRdmaWrite, large_out, base + (1 << 20))).ok());
  std::vector<std::uint8_t> back(2 << 20, 0);
  const Segment back_in[] = {SegmentOver(back)};
  ASSERT_TRUE(f.active->Post(RdmaOf(3, WorkKind::kRdmaRead, back_in, base + (1 << 20))).ok());
  ASSERT_TRUE(Drive({f.active.connection.get()}, [&] { return f.active.events->Get(f.active.events->work_done).size() == 3; }));
  EXPECT_TRUE(std::equal(small.begin(), small.end(), region.begin() + 100));
  EXPECT_TRUE(std::equal(large.begin(), large.end(), region.begin() + (1 << 20)));
  EXPECT_EQ(back, large);
  for (const auto& d : f.active.events->Get(f.active.events->work_done)) EXPECT_EQ(d.status, WorkStatus::kSuccess);
  EXPECT_EQ(f.active.events->Get(f.active.events->work_done)[2].length, 2u << 20);
}

// A short RDMA Write to a target whose own thread reads its rings while awake (an IA with a
// progress thread) goes through the ring: it completes at the initiator and lands when the target
// reads. A longer one, or one while the target sleeps, lands one-sided with no read by the target.
TEST(ShmConnection, AShortWriteGoesThroughTheRingWhileTheTargetsThreadReads) {
  PairConfig config;
  config.passive_thread_reads = true;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(16384, 0);
  Publish(f.passive, region);
  const auto base = reinterpret_cast<std::uint64_t>(region.data());
  std::vector<std::uint8_t> awake = Bytes(8, 1), asleep = Bytes(8, 2), longer = Bytes(8192, 3);
  const Segment awake_out[] = {SegmentOver(awake)}, asleep_out[] = {SegmentOver(asleep)},
                longer_out[] = {SegmentOver(longer)};
  auto done = [&] { return f.active.events->Get(f.active.events->work_done).size(); };
  auto lands = [&](const std::vector<std::uint8_t>& data, std::size_t at) {
    return std::equal(data.begin(), data.end(), region.begin() + static_cast<std::ptrdiff_t>(at));
  };

  ASSERT_TRUE(f.active->Post(RdmaOf(1, WorkKind::kRdmaWrite, awake_out, base)).ok());
  ASSERT_TRUE(Drive({f.active.connection.get()}, [&] { return done() == 1; }));
  EXPECT_FALSE(lands(awake, 0)) << "through the ring: not there before the target reads";
  EXPECT_TRUE(f.passive->HasWork());
  ASSERT_TRUE(Drive({f.passive.connection.get()}, [&] { return lands(awake, 0); }));

  ASSERT_TRUE(f.active->Post(RdmaOf(2, WorkKind::kRdmaWrite, longer_out, base + 4096)).ok());
  ASSERT_TRUE(Drive({f.active.connection.get()}, [&] { return done() == 2; }));
  EXPECT_TRUE(lands(longer, 4096)) << "longer than a ring Write: one-sided";

  f.passive.table->BeginSleep();
  ASSERT_TRUE(f.active->Post(RdmaOf(3, WorkKind::kRdmaWrite, asleep_out, base + 100)).ok());
  ASSERT_TRUE(Drive({f.active.connection.get()}, [&] { return done() == 3; }));
  EXPECT_TRUE(lands(asleep, 100)) << "the target sleeps: one-sided";
  EXPECT_FALSE(f.passive->HasWork());
  f.passive.table->EndSleep();
  for (const auto& d : f.active.events->Get(f.active.events->work_done)) EXPECT_EQ(d.status, WorkStatus::kSuccess);
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended_count), 0);
}

// A Write through the ring, then a one-sided Write over the same bytes and a one-sided Read of
// them: the one-sided accesses wait until the ring Write is placed, so the later Write wins and
// the Read sees it, as on the wire.
TEST(ShmConnection, OneSidedAccessesAfterARingWriteKeepTheirOrder) {
  PairConfig config;
  config.passive_thread_reads = true;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(200000, 0);
  Publish(f.passive, region);
  const auto base = reinterpret_cast<std::uint64_t>(region.data());
  std::vector<std::uint8_t> first = Bytes(64, 1), second = Bytes(100000, 2), back(64, 0);
  const Segment first_out[] = {SegmentOver(first)}, second_out[] = {SegmentOver(second)}, back_in[] = {SegmentOver(back)};
  ASSERT_TRUE(f.active->Post(RdmaOf(1, WorkKind::kRdmaWrite, first_out, base)).ok());
  ASSERT_TRUE(f.active->Post(RdmaOf(2, WorkKind::kRdmaWrite, second_out, base)).ok());
  ASSERT_TRUE(f.active->Post(RdmaOf(3, WorkKind::kRdmaRead, back_in, base)).ok());
  ASSERT_TRUE(f.Until([&] { return f.active.events->Get(f.active.events->work_done).size() == 3; }));
  EXPECT_TRUE(std::equal(second.begin(), second.end(), region.begin()));
  EXPECT_TRUE(std::equal(back.begin(), back.end(), second.begin()));
  for (const auto& d : f.active.events->Get(f.active.events->work_done)) EXPECT_EQ(d.status, WorkStatus::kSuccess);
}

// A ring Write placed by the target's own thread, then a one-sided Read behind it: once the Read
// completes the Write's bytes are in place, and the initiator's thread may read them. Both ends
// in one process map the segment at two addresses, so ThreadSanitizer sees that order only
// through tsan_sync.h's annotation; without it, the read of the region below is a reported race
// (as it was in ep_post_completion_flags_test_shm, where the Read is the test's fence).
TEST(ShmConnection, ARingWriteFencedByAReadIsSeenByTheInitiatorsThread) {
  PairConfig config;
  config.passive_thread_reads = true;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(64, 0);
  Publish(f.passive, region);
  const auto base = reinterpret_cast<std::uint64_t>(region.data());
  std::vector<std::uint8_t> data = Bytes(8, 7), back(8, 0);
  const Segment out[] = {SegmentOver(data)}, in[] = {SegmentOver(back)};
  std::atomic<bool> stop{false};
  std::thread target([&] {
    while (!stop.load(std::memory_order_relaxed)) (void)f.passive->Poll();
  });
  ASSERT_TRUE(f.active->Post(RdmaOf(1, WorkKind::kRdmaWrite, out, base)).ok());
  ASSERT_TRUE(f.active->Post(RdmaOf(2, WorkKind::kRdmaRead, in, base)).ok());
  const bool done =
      Drive({f.active.connection.get()}, [&] { return f.active.events->Get(f.active.events->work_done).size() == 2; });
  // Read while the target's thread still runs: its end (the join) would order everything it did
  // before this read, annotation or not.
  const bool landed = done && std::equal(data.begin(), data.end(), region.begin());
  stop.store(true, std::memory_order_relaxed);
  target.join();
  ASSERT_TRUE(done);
  EXPECT_TRUE(landed);
  EXPECT_EQ(back, data);
}

// A one-sided access the table refuses fails the Work with a remote access error and ends the
// connection at both ends, as a Terminate does on the wire. The same when the target's thread
// reads its rings (a short Write would go through the ring): the refusal does not depend on it.
void OneSidedRefused(WorkKind kind, std::uint64_t offset, std::uint32_t key, std::uint32_t access, const char* what,
                     bool target_thread_reads = false) {
  SCOPED_TRACE(what);
  PairConfig config;
  config.passive_thread_reads = target_thread_reads;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(4096, 0x11);
  Publish(f.passive, region, access);
  std::vector<std::uint8_t> local = Bytes(64, 5);
  const Segment seg[] = {SegmentOver(local)};
  ASSERT_TRUE(f.active->Post(RdmaOf(1, kind, seg, reinterpret_cast<std::uint64_t>(region.data()) + offset, key)).ok());
  ASSERT_TRUE(f.BothEnded());
  const auto done = f.active.events->Get(f.active.events->work_done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WorkStatus::kRemoteAccess);
  EXPECT_EQ(f.active.events->Get(f.active.events->ended), ConnectionEnd::kBroken);
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kBroken);
  EXPECT_TRUE(std::all_of(region.begin(), region.end(), [](std::uint8_t b) { return b == 0x11; }));
}

TEST(ShmConnection, OneSidedAccessIsCheckedAgainstTheTargetsTable) {
  OneSidedRefused(WorkKind::kRdmaWrite, 0, kKey + 1, kRemoteWrite, "a stale generation");
  OneSidedRefused(WorkKind::kRdmaWrite, 4090, kKey, kRemoteWrite, "past the end");
  OneSidedRefused(WorkKind::kRdmaWrite, 0, kKey, kRemoteRead, "no remote write");
  OneSidedRefused(WorkKind::kRdmaRead, 0, kKey, kRemoteWrite, "no remote read");
}

TEST(ShmConnection, AWriteTheTableRefusesFailsTheSameWhileTheTargetsThreadReads) {
  OneSidedRefused(WorkKind::kRdmaWrite, 0, kKey + 1, kRemoteWrite, "a stale generation", true);
  OneSidedRefused(WorkKind::kRdmaWrite, 4090, kKey, kRemoteWrite, "past the end", true);
  OneSidedRefused(WorkKind::kRdmaWrite, 0, kKey, kRemoteRead, "no remote write", true);
}

TEST(ShmConnection, OneSidedAccessIsCheckedAgainstTheTargetEndpoint) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(4096, 0x11);
  KeyGrant grant;
  grant.key = kKey;
  grant.address = reinterpret_cast<std::uint64_t>(region.data());
  grant.length = region.size();
  grant.access = kRemoteWrite;
  grant.pz = testing::kPassiveBinding.pz;
  grant.endpoint = testing::kPassiveBinding.endpoint + 1;  // an RMR bound to another endpoint
  ASSERT_TRUE(f.passive.table->Publish(grant));
  std::vector<std::uint8_t> local = Bytes(64, 5);
  const Segment seg[] = {SegmentOver(local)};
  ASSERT_TRUE(f.active->Post(RdmaOf(1, WorkKind::kRdmaWrite, seg, grant.address)).ok());
  ASSERT_TRUE(f.BothEnded());
  EXPECT_EQ(f.active.events->Get(f.active.events->work_done)[0].status, WorkStatus::kRemoteAccess);
}

// Without cross-memory attach, Writes and Reads go through the ring and the target's core
// checks the key (ResolveRemote), as on the wire.
TEST(ShmConnection, RingWritesAndReadsAreCheckedByTheTarget) {
  PairConfig config;
  config.active_attach = config.passive_attach = false;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(300000, 0);
  Publish(f.passive, region);
  std::vector<std::uint8_t> data = Bytes(200000, 4), back(200000, 0);
  const Segment out[] = {SegmentOver(data)}, in[] = {SegmentOver(back)};
  const auto base = reinterpret_cast<std::uint64_t>(region.data());
  ASSERT_TRUE(f.active->Post(RdmaOf(1, WorkKind::kRdmaWrite, out, base + 1000)).ok());
  ASSERT_TRUE(f.active->Post(RdmaOf(2, WorkKind::kRdmaRead, in, base + 1000)).ok());
  ASSERT_TRUE(f.Until([&] { return f.active.events->Get(f.active.events->work_done).size() == 2; }));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), region.begin() + 1000));
  EXPECT_EQ(back, data);
  // A Read past the region: the target refuses, the Read fails, the connection breaks.
  ASSERT_TRUE(f.active->Post(RdmaOf(3, WorkKind::kRdmaRead, in, base + 200000)).ok());
  ASSERT_TRUE(f.BothEnded());
  const auto done = f.active.events->Get(f.active.events->work_done);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[2].status, WorkStatus::kRemoteAccess);
  EXPECT_EQ(f.active.events->Get(f.active.events->ended), ConnectionEnd::kBroken);
}

TEST(ShmConnection, ARingWriteTheTargetRefusesBreaksTheConnection) {
  PairConfig config;
  config.active_attach = config.passive_attach = false;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(100, 0);
  Publish(f.passive, region, kRemoteRead);
  std::vector<std::uint8_t> data = Bytes(10, 4);
  const Segment out[] = {SegmentOver(data)};
  ASSERT_TRUE(f.active->Post(RdmaOf(1, WorkKind::kRdmaWrite, out, reinterpret_cast<std::uint64_t>(region.data()))).ok());
  ASSERT_TRUE(f.BothEnded());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kBroken);
  EXPECT_TRUE(std::all_of(region.begin(), region.end(), [](std::uint8_t b) { return b == 0; }));
}

// An RDMA Write with immediate data, one-sided and through the ring: the Write lands, then the
// immediate takes the receiver's next buffer (placing nothing in it) with the Write's length; with
// no buffer it waits in the ring like a Send and completes once one comes.
void WritesWithImmediate(const PairConfig& config) {
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(4096, 0);
  Publish(f.passive, region);
  std::vector<std::uint8_t> data = Bytes(300, 7);
  const Segment out[] = {SegmentOver(data)};
  Work w = RdmaOf(1, WorkKind::kRdmaWriteImmediate, out, reinterpret_cast<std::uint64_t>(region.data()) + 64);
  w.immediate = 0x12345678;
  ASSERT_TRUE(f.active->Post(w).ok());  // no buffer yet: the immediate waits
  ASSERT_TRUE(f.Until([&] { return f.passive.events->Get(f.passive.events->not_ready) > 0; }));
  EXPECT_TRUE(f.passive.events->Get(f.passive.events->recvs).empty());
  std::vector<std::uint8_t> sink(16, 0xee);
  const Segment in[] = {SegmentOver(sink)};
  f.passive.events->AddBuffer(in);
  f.passive->RecvBuffersAvailable();
  ASSERT_TRUE(f.Until([&] {
    return f.passive.events->Get(f.passive.events->recvs).size() == 1 &&
           f.active.events->Get(f.active.events->work_done).size() == 1;
  }));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), region.begin() + 64));
  const auto recv = f.passive.events->Get(f.passive.events->recvs)[0];
  EXPECT_EQ(recv.status, WorkStatus::kSuccess);
  EXPECT_TRUE(recv.info.extension.immediate);
  EXPECT_EQ(recv.info.extension.immediate_data, 0x12345678u);
  EXPECT_EQ(recv.info.extension.written, 300u);
  EXPECT_TRUE(std::all_of(sink.begin(), sink.end(), [](std::uint8_t b) { return b == 0xee; }));
  const auto done = f.active.events->Get(f.active.events->work_done)[0];
  EXPECT_EQ(done.status, WorkStatus::kSuccess);
  EXPECT_EQ(done.length, 300u);
  // A Send after it takes the next MSN: the immediate was numbered with the Sends.
  std::vector<std::uint8_t> message = Bytes(8, 3), sink2(8, 0);
  const Segment send_out[] = {SegmentOver(message)}, send_in[] = {SegmentOver(sink2)};
  f.passive.events->AddBuffer(send_in);
  ASSERT_TRUE(f.active->Post(SendOf(2, send_out)).ok());
  ASSERT_TRUE(f.Until([&] { return f.passive.events->Get(f.passive.events->recvs).size() == 2; }));
  EXPECT_EQ(sink2, message);
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended_count), 0);
}

TEST(ShmConnection, WritesWithImmediateOneSided) { WritesWithImmediate(PairConfig()); }

TEST(ShmConnection, WritesWithImmediateThroughTheRing) {
  PairConfig config;
  config.active_attach = config.passive_attach = false;
  WritesWithImmediate(config);
}

Work AtomicOf(std::uint64_t id, WorkKind kind, std::span<const Segment> local, std::uint64_t address,
              std::uint64_t compare_add, std::uint64_t swap = 0) {
  Work w = RdmaOf(id, kind, local, address);
  w.compare_add = compare_add;
  w.swap = swap;
  return w;
}

// Fetch and Add and Compare and Swap go through the ring even when the initiator could attach
// (a copy cannot be atomic): the target executes them and the original comes back.
TEST(ShmConnection, AtomicsAreExecutedByTheTargetAndReturnTheOriginal) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(64, 0);
  Publish(f.passive, region);
  const auto word = reinterpret_cast<std::uint64_t>(region.data()) + 8;
  std::uint64_t originals[3] = {~0ull, ~0ull, ~0ull};
  const Segment o0[] = {Segment{reinterpret_cast<std::uint64_t>(&originals[0]), 8, 0}};
  const Segment o1[] = {Segment{reinterpret_cast<std::uint64_t>(&originals[1]), 8, 0}};
  const Segment o2[] = {Segment{reinterpret_cast<std::uint64_t>(&originals[2]), 8, 0}};
  ASSERT_TRUE(f.active->Post(AtomicOf(1, WorkKind::kFetchAdd, o0, word, 5)).ok());
  ASSERT_TRUE(f.active->Post(AtomicOf(2, WorkKind::kCompareSwap, o1, word, 4, 100)).ok());  // no match
  ASSERT_TRUE(f.active->Post(AtomicOf(3, WorkKind::kCompareSwap, o2, word, 5, 100)).ok());  // match
  ASSERT_TRUE(f.Until([&] { return f.active.events->Get(f.active.events->work_done).size() == 3; }));
  for (const auto& d : f.active.events->Get(f.active.events->work_done)) {
    EXPECT_EQ(d.status, WorkStatus::kSuccess);
    EXPECT_EQ(d.length, 8u);
  }
  EXPECT_EQ(originals[0], 0u);
  EXPECT_EQ(originals[1], 5u);
  EXPECT_EQ(originals[2], 5u);
  std::uint64_t value;
  std::memcpy(&value, region.data() + 8, 8);
  EXPECT_EQ(value, 100u);
}

// An atomic the target's core refuses (misaligned, here) fails with a remote access error,
// touches nothing, and ends the connection, as a refused Read does.
TEST(ShmConnection, ARefusedAtomicFailsAndTouchesNothing) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(64, 0x11);
  Publish(f.passive, region);
  std::uint64_t original = 0;
  const Segment out[] = {Segment{reinterpret_cast<std::uint64_t>(&original), 8, 0}};
  ASSERT_TRUE(f.active->Post(AtomicOf(1, WorkKind::kFetchAdd, out, reinterpret_cast<std::uint64_t>(region.data()) + 4, 1)).ok());
  ASSERT_TRUE(f.BothEnded());
  const auto done = f.active.events->Get(f.active.events->work_done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WorkStatus::kRemoteAccess);
  EXPECT_TRUE(std::all_of(region.begin(), region.end(), [](std::uint8_t b) { return b == 0x11; }));
}

// A datagram Send never reaches a connection; were one posted, it is refused, not dropped.
TEST(ShmConnection, ADatagramSendIsRefused) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  Work w;
  w.id = 1;
  w.kind = WorkKind::kSendDatagram;
  EXPECT_EQ(f.active->Post(w).code(), Code::kModelNotSupported);
}

// The receiver's kernel refuses the pull after the probe passed: the Send comes again through the
// ring, whole, and later large Sends go through the ring from the start.
TEST(ShmConnection, ARefusedPullIsResentThroughTheRing) {
  PairConfig config;
  config.passive_refuses_pulls = true;
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  ASSERT_TRUE(f.active->peer_attaches());
  std::vector<std::uint8_t> first = Bytes(300000, 1), second = Bytes(100000, 2);
  std::vector<std::uint8_t> first_sink(300000), second_sink(100000);
  const Segment out1[] = {SegmentOver(first)}, out2[] = {SegmentOver(second)};
  const Segment in1[] = {SegmentOver(first_sink)}, in2[] = {SegmentOver(second_sink)};
  f.passive.events->AddBuffer(in1);
  f.passive.events->AddBuffer(in2);
  ASSERT_TRUE(f.active->Post(SendOf(1, out1)).ok());
  ASSERT_TRUE(f.active->Post(SendOf(2, out2)).ok());
  ASSERT_TRUE(f.Until([&] {
    return f.passive.events->Get(f.passive.events->recvs).size() == 2 && f.active.events->Get(f.active.events->work_done).size() == 2;
  }));
  EXPECT_EQ(first_sink, first);
  EXPECT_EQ(second_sink, second);
  const auto recvs = f.passive.events->Get(f.passive.events->recvs);
  EXPECT_EQ(recvs[0].id, 1u);
  EXPECT_EQ(recvs[0].info.length, 300000u);
  EXPECT_EQ(recvs[1].id, 2u);
  EXPECT_FALSE(f.active->peer_attaches()) << "no more pulls";
  for (const auto& d : f.active.events->Get(f.active.events->work_done)) EXPECT_EQ(d.status, WorkStatus::kSuccess);
}

TEST(ShmConnection, GracefulDisconnectDeliversWhatWasSentFirst) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> source = Bytes(500, 9), sink(500);
  const Segment out[] = {SegmentOver(source)}, in[] = {SegmentOver(sink)};
  f.passive.events->AddBuffer(in);
  ASSERT_TRUE(f.active->Post(SendOf(1, out)).ok());
  f.active->Disconnect(true);
  ASSERT_TRUE(f.BothEnded());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->recvs).size(), 1u);
  EXPECT_EQ(sink, source);
  EXPECT_EQ(f.active.events->Get(f.active.events->ended), ConnectionEnd::kDisconnected);
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kDisconnected);
  EXPECT_TRUE(f.active->ended());
  EXPECT_FALSE(f.active->HasWork());
}

TEST(ShmConnection, AbruptDisconnectEndsBothSides) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  f.passive->Disconnect(false);
  ASSERT_TRUE(f.BothEnded());
  EXPECT_EQ(f.active.events->Get(f.active.events->ended), ConnectionEnd::kDisconnected);
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kDisconnected);
}

TEST(ShmConnection, DetachEndsTheConnectionForThePeerAndReportsNothingMore) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  f.passive->Detach();
  ASSERT_TRUE(Drive({f.active.connection.get()}, [&] { return f.active.events->Get(f.active.events->ended_count) == 1; }));
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended_count), 0) << "a detached endpoint hears nothing";
  EXPECT_FALSE(f.passive->Poll());
}

// The target ended: a one-sided access that starts afterwards touches nothing (the ended word),
// and the initiator ends when the end reaches it.
TEST(ShmConnection, NoOneSidedAccessLandsAfterTheTargetEnded) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(4096, 0);
  Publish(f.passive, region);
  f.passive->Disconnect(false);
  ASSERT_TRUE(Drive({f.passive.connection.get()}, [&] { return f.passive.events->Get(f.passive.events->ended_count) == 1; }));
  std::vector<std::uint8_t> data = Bytes(64, 1);
  const Segment out[] = {SegmentOver(data)};
  ASSERT_TRUE(f.active->Post(RdmaOf(1, WorkKind::kRdmaWrite, out, reinterpret_cast<std::uint64_t>(region.data()))).ok());
  ASSERT_TRUE(Drive({f.active.connection.get()}, [&] { return f.active.events->Get(f.active.events->ended_count) == 1; }));
  EXPECT_TRUE(std::all_of(region.begin(), region.end(), [](std::uint8_t b) { return b == 0; }));
  EXPECT_TRUE(f.active.events->Get(f.active.events->work_done).empty()) << "left to core's flush";
}

// A peer streams one-sided Writes while the target revokes the key: once Revoke returns, nothing
// lands in the region (what it then writes there stays), and the peer's next Write fails.
TEST(ShmConnection, NothingLandsAfterARevocationReturns) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  std::vector<std::uint8_t> region(256 << 10, 0);
  Publish(f.passive, region, kRemoteWrite);
  std::vector<std::uint8_t> data(region.size(), 0xab);
  const Segment out[] = {SegmentOver(data)};
  const auto base = reinterpret_cast<std::uint64_t>(region.data());
  std::atomic<bool> revoked{false};
  std::thread initiator([&] {
    std::uint64_t id = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (f.active.events->Get(f.active.events->ended_count) == 0 && std::chrono::steady_clock::now() < deadline) {
      const std::size_t done = f.active.events->Get(f.active.events->work_done).size();
      if (done == id) (void)f.active->Post(RdmaOf(++id, WorkKind::kRdmaWrite, out, base));
      f.active->Poll();
      if (testing::WaitReadable(f.active->socket_fd(), 0)) f.active->OnSocketReadable();
    }
  });
  // Let some Writes land first.
  while (region[0] != 0xab) std::this_thread::yield();
  ASSERT_TRUE(f.passive.table->Revoke(kKey));
  std::memset(region.data(), 0x5c, region.size());
  revoked.store(true);
  initiator.join();
  EXPECT_TRUE(std::all_of(region.begin(), region.end(), [](std::uint8_t b) { return b == 0x5c; }));
  const auto done = f.active.events->Get(f.active.events->work_done);
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done.back().status, WorkStatus::kRemoteAccess);
}

// The peer sleeps: a Send rings its doorbell (its socket turns readable); awake, nothing rings.
TEST(ShmConnection, TheDoorbellRingsOnlyWhileThePeerSleeps) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  SmallSends sends(f);
  ASSERT_TRUE(f.active->Post(SendOf(1, sends.out)).ok());
  ASSERT_TRUE(f.Until([&] { return f.passive.events->Get(f.passive.events->recvs).size() == 1; }));
  EXPECT_FALSE(testing::WaitReadable(f.passive->socket_fd(), 0)) << "awake: no doorbell";
  f.passive.table->BeginSleep();
  EXPECT_FALSE(f.passive->HasWork());
  ASSERT_TRUE(f.active->Post(SendOf(2, sends.out)).ok());
  ASSERT_TRUE(testing::WaitReadable(f.passive->socket_fd())) << "the doorbell";
  EXPECT_TRUE(f.passive->HasWork());
  f.passive.table->EndSleep();
  EXPECT_TRUE(f.passive->OnSocketReadable());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->recvs).size(), 2u);
  EXPECT_FALSE(testing::WaitReadable(f.passive->socket_fd(), 0)) << "one doorbell per sleep, drained";
}

// Regression (stock dtestx over the same-host path, about one run in 150: a peer's Compare and
// Swap waited at its target for seconds, until the target's consumer called in again): a peer
// rings once per sleep epoch, and a consumer's poll, which reads the same-host sockets too, may
// read the doorbell before the sleeping progress thread is woken by it. The thread then sleeps
// on in the same epoch, and the peer's next record rang nobody. A doorbell read now renews the
// epoch, so the next record rings again. Here the thread sleeps throughout and the test's thread
// is the consumer.
TEST(ShmConnection, ADoorbellAConsumerReadsLeavesTheSleeperRungForTheNextRecord) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  SmallSends sends(f);
  f.passive.table->BeginSleep();
  ASSERT_TRUE(f.active->Post(SendOf(1, sends.out)).ok());
  ASSERT_TRUE(testing::WaitReadable(f.passive->socket_fd())) << "the doorbell";
  // The consumer's poll reads the socket and the ring; the sleeper never woke.
  EXPECT_TRUE(f.passive->OnSocketReadable());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->recvs).size(), 1u);
  EXPECT_FALSE(testing::WaitReadable(f.passive->socket_fd(), 0));
  ASSERT_TRUE(f.active->Post(SendOf(2, sends.out)).ok());
  EXPECT_TRUE(testing::WaitReadable(f.passive->socket_fd(), 0)) << "the next record rang nobody";
  EXPECT_TRUE(f.passive->HasWork());
  f.passive.table->EndSleep();
  EXPECT_TRUE(f.passive->OnSocketReadable());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->recvs).size(), 2u);
}

// Hostile bytes in the peer's ring, as a hostile process writes them: this connection breaks
// (its peer is told), nothing else happens.
TEST(ShmConnection, AMalformedRecordBreaksOnlyThisConnection) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  // Ring 0 carries the active side's records to the passive side.
  auto* header = reinterpret_cast<RecordHeader*>(f.active.segment + RingOffset(f.active.geometry, 0));
  header->opcode = Opcode::kSend;
  header->length = 100000;  // longer than a record may be
  StoreRelease(&header->size, RecordBytes(100000));
  ASSERT_TRUE(f.BothEnded());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kBroken);
  EXPECT_EQ(f.active.events->Get(f.active.events->ended), ConnectionEnd::kBroken);
  EXPECT_TRUE(f.passive.events->Get(f.passive.events->acquired_msns).empty());
}

TEST(ShmConnection, ASendOutOfOrderBreaksTheConnection) {
  Fixture f;
  ASSERT_TRUE(f.Established());
  auto* header = reinterpret_cast<RecordHeader*>(f.active.segment + RingOffset(f.active.geometry, 0));
  header->opcode = Opcode::kSend;
  header->flags = kFlagLast;
  header->msn = 2;  // the first Send is MSN 1
  header->length = 0;
  StoreRelease(&header->size, RecordBytes(0));
  ASSERT_TRUE(f.BothEnded());
  EXPECT_EQ(f.passive.events->Get(f.passive.events->ended), ConnectionEnd::kBroken);
  EXPECT_TRUE(f.passive.events->Get(f.passive.events->acquired_msns).empty());
}

// The peer says it consumed more than was ever written: the sender breaks the connection.
TEST(ShmConnection, AConsumedCountThatLiesBreaksTheConnection) {
  PairConfig config;
  config.geometry = Geometry{{4096, 4096}};
  Fixture f(config);
  ASSERT_TRUE(f.Established());
  auto* controls = reinterpret_cast<SideControl*>(f.active.segment + kControlOffset);
  StoreRelease(&controls[kPassive].consumed, std::uint64_t{1} << 40);
  std::vector<std::uint8_t> source = Bytes(3000, 1);
  const Segment out[] = {SegmentOver(source)};
  // The ring fills, the sender looks at the consumed count, and refuses it.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.active->Post(SendOf(i, out)).ok());
  ASSERT_TRUE(Drive({f.active.connection.get()}, [&] { return f.active.events->Get(f.active.events->ended_count) == 1; }));
  EXPECT_EQ(f.active.events->Get(f.active.events->ended), ConnectionEnd::kBroken);
}

}  // namespace
}  // namespace softdat::transport::shm
