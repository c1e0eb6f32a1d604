// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The TCP transport's choice of path per connection (local_path.h): two IAs with shm=auto on this
// host connect over shared memory, with TCP's semantics (private data both ways, addresses as
// dat_cr_query shows them, a consumer's reject with its private data, a graceful close), and
// move Sends (small, and large ones pulled in several pieces), RDMA Writes and Reads; a listener
// without a rendezvous (shm=off here, as siw or OFED DAPL: nobody answers on it) or a client with
// shm=off gets iWARP over TCP; what an IA's key table tells peers about who reads its rings. The
// other network namespace is testing/netns's.
#include <arpa/inet.h>
#include <sys/stat.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/test_seams.h"
#include "transport/test_recorder.h"

namespace softdat::transport::tcp {
namespace {

using namespace transport::testing;

constexpr std::uint32_t kKey = 0x4201;  // a key as core makes them: slot 0x42, generation 1

class LocalPathTest : public ::testing::Test {
 protected:
  void Open(ShmMode client_mode, ShmMode server_mode) {
    client_transport_ = Make(client_mode);
    server_transport_ = Make(server_mode);
    ASSERT_NO_FATAL_FAILURE(ListenAndCreateEndpoints());
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    pending_.reset();
    listener_.reset();
    client_transport_.reset();
    server_transport_.reset();
  }

  static std::unique_ptr<Transport> Make(ShmMode mode, ProgressMode progress = ProgressMode::kThread,
                                         std::uint32_t handoff_us = 200) {
    IaParams params;
    params.kind = TransportKind::kTcp;
    params.address = "127.0.0.1";
    params.options.shm = mode;
    params.options.progress = progress;
    params.options.handoff_us = handoff_us;
    std::string why;
    std::unique_ptr<Transport> transport;
    EXPECT_TRUE(CreateTcpTransport(params, why, transport).ok()) << why;
    return transport;
  }

  // The server listens and both sides get an endpoint, on the transports the test made.
  void ListenAndCreateEndpoints() {
    ASSERT_TRUE(server_transport_->Listen(0, &requests_, listener_).ok());
    ASSERT_TRUE(client_transport_->CreateEndpoint(SmallEndpointConfig(), &client_events_, client_).ok());
    ASSERT_TRUE(server_transport_->CreateEndpoint(SmallEndpointConfig(), &server_events_, server_).ok());
  }
  // The client connects and the server accepts; nothing waits for the establishment (a side with
  // progress=poll moves only when the test says).
  void ConnectAndAccept(const std::vector<std::uint8_t>& hello = {}, const std::vector<std::uint8_t>& welcome = {}) {
    ASSERT_TRUE(client_->Connect(server_transport_->address(), listener_->port(), hello, UINT64_MAX).ok());
    pending_ = requests_.Next();
    ASSERT_NE(pending_, nullptr);
    ASSERT_TRUE(pending_->Accept(*server_, welcome).ok());
  }

  // A client with progress=poll moves only when polled: polls it (bounded) until established.
  void PollUntilEstablished(TcpTransport& client) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (client_events_.Get(client_events_.established) != 1 && std::chrono::steady_clock::now() < until)
      (void)client.Progress();
    ASSERT_EQ(client_events_.Get(client_events_.established), 1);
  }
  // The same, until the client has received one message.
  void PollUntilOneReceived(TcpTransport& client) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (client_events_.Get(client_events_.recvs).size() != 1 && std::chrono::steady_clock::now() < until)
      (void)client.Progress();
    ASSERT_EQ(client_events_.Get(client_events_.recvs).size(), 1u);
  }

  void ConnectBoth(const std::vector<std::uint8_t>& hello = {}, const std::vector<std::uint8_t>& welcome = {}) {
    ASSERT_NO_FATAL_FAILURE(ConnectAndAccept(hello, welcome));
    ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.established == 1; }));
    ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.established == 1; }));
  }

  // Both sides shm=auto and in the default mode (the client with the hand-off asked), connected
  // and established over shared memory.
  void ConnectSameHost(std::uint32_t client_handoff_us = 200) {
    client_transport_ = Make(ShmMode::kAuto, ProgressMode::kThread, client_handoff_us);
    server_transport_ = Make(ShmMode::kAuto);
    ASSERT_NO_FATAL_FAILURE(ListenAndCreateEndpoints());
    ASSERT_NO_FATAL_FAILURE(ConnectBoth());
    ASSERT_EQ(Local(client_transport_), 1u);
  }
  TcpTransport& Client() { return static_cast<TcpTransport&>(*client_transport_); }

  // The client's consumer polls (bounded) until n of its Works are reported.
  void PollUntilWorkDone(std::size_t n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (client_events_.Get(client_events_.work_done).size() != n && std::chrono::steady_clock::now() < until)
      (void)Client().Progress();
    EXPECT_EQ(client_events_.Get(client_events_.work_done).size(), n) << "the consumer's polls did not report the Work";
  }

  // Two 8-byte Sends of one message into the two halves of a sink the server offers as two
  // buffers: what three tests send, and the check that both arrived whole.
  struct TwoSends {
    std::vector<std::uint8_t> message, sinks = std::vector<std::uint8_t>(16, 0);
    std::vector<Segment> out, first, second;
  };
  void OfferTwoBuffers(TwoSends& sends, std::uint8_t fill) {
    sends.message = Bytes(8, fill);
    sends.out = {SegmentOf(sends.message)};
    sends.first = {SegmentOf(sends.sinks, 0, 8)};
    sends.second = {SegmentOf(sends.sinks, 8, 8)};
    server_events_.AddBuffer(sends.first);
    server_events_.AddBuffer(sends.second);
  }
  void ExpectBothArrived(const TwoSends& sends) {
    EXPECT_TRUE(server_events_.WaitFor([&] { return server_events_.recvs.size() == 2; }));
    EXPECT_TRUE(std::equal(sends.message.begin(), sends.message.end(), sends.sinks.begin()));
    EXPECT_TRUE(std::equal(sends.message.begin(), sends.message.end(), sends.sinks.begin() + 8));
  }

  std::size_t Local(std::unique_ptr<Transport>& transport) {
    return TcpTransportTestAccess::LocalConnections(static_cast<TcpTransport&>(*transport));
  }
  // An 8-byte Send from the server into a buffer the client offers: `out` and `in` stay the
  // caller's, alive until the Send completes.
  struct ServerSend {
    std::vector<std::uint8_t> message, sink = std::vector<std::uint8_t>(8, 0);
    std::vector<Segment> out, in;
    Work work;
  };
  void PrepareServerSend(ServerSend& send, std::uint8_t fill) {
    send.message = Bytes(8, fill);
    send.out = {SegmentOf(send.message)};
    send.in = {SegmentOf(send.sink)};
    client_events_.AddBuffer(send.in);
    send.work.id = 1;
    send.work.kind = WorkKind::kSend;
    send.work.local = send.out;
    send.work.length = send.message.size();
  }
  // The passive side's engine comes just after its ESTABLISHED (LocalConnection::StartAccept),
  // on its own thread: its count, once it settles (bounded).
  std::size_t LocalOnceSettled(std::unique_ptr<Transport>& transport, std::size_t expected) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (Local(transport) != expected && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    return Local(transport);
  }

  Status Post(WorkKind kind, std::uint64_t id, std::vector<Segment>& local, std::uint64_t remote_address = 0) {
    Work work;
    work.id = id;
    work.kind = kind;
    work.local = local;
    for (const Segment& s : local) work.length += s.length;
    work.remote_address = remote_address;
    work.remote_key = kind == WorkKind::kSend ? 0 : kKey;
    return client_->Post(work);
  }

  std::unique_ptr<Transport> client_transport_;
  std::unique_ptr<Transport> server_transport_;
  RecordingRequests requests_;
  std::unique_ptr<Listener> listener_;
  RecordingEvents client_events_;
  RecordingEvents server_events_;
  std::unique_ptr<Endpoint> client_;
  std::unique_ptr<Endpoint> server_;
  std::unique_ptr<PendingConnection> pending_;
};

TEST_F(LocalPathTest, TwoSameHostIasConnectOverSharedMemoryWithTcpsSemantics) {
  Open(ShmMode::kAuto, ShmMode::kAuto);
  const std::vector<std::uint8_t> hello = {'h', 'e', 'l', 'l', 'o'}, welcome = {'w', 'e', 'l'};
  ASSERT_TRUE(client_->Connect(server_transport_->address(), listener_->port(), hello, UINT64_MAX).ok());
  pending_ = requests_.Next();
  ASSERT_NE(pending_, nullptr);
  EXPECT_EQ(std::vector<std::uint8_t>(pending_->private_data().begin(), pending_->private_data().end()), hello);
  EXPECT_EQ(ntohl(pending_->remote_address().sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_NE(pending_->remote_address().sin_port, 0) << "dat_cr_query shows the active side's port";
  ASSERT_TRUE(pending_->Accept(*server_, welcome).ok());
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.established == 1; }));
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.established == 1; }));
  EXPECT_EQ(client_events_.Get(client_events_.peer_data), welcome);
  EXPECT_EQ(Local(client_transport_), 1u) << "the client's connection is not the shared-memory one";
  EXPECT_EQ(LocalOnceSettled(server_transport_, 1), 1u) << "the server's connection is not the shared-memory one";
  EXPECT_EQ(ntohs(client_->remote_address().sin_port), listener_->port());
  EXPECT_EQ(ntohs(server_->local_address().sin_port), listener_->port());
  EXPECT_EQ(server_->remote_address().sin_port, client_->local_address().sin_port);
  EXPECT_EQ(client_->Connect(server_transport_->address(), listener_->port(), {}, UINT64_MAX).code(), Code::kInvalidState)
      << "a second Connect on one endpoint";

  // Sends: 8 bytes through the ring, 9 MiB pulled by the receiver in several pieces.
  std::vector<std::uint8_t> small = Bytes(8, 1), large = Bytes(9 << 20, 2);
  std::vector<std::uint8_t> small_sink(64), large_sink(large.size());
  std::vector<Segment> small_gather = {SegmentOf(small)}, large_gather = {SegmentOf(large)};
  std::vector<Segment> small_scatter = {SegmentOf(small_sink)}, large_scatter = {SegmentOf(large_sink)};
  server_events_.AddBuffer(small_scatter);
  server_events_.AddBuffer(large_scatter);
  ASSERT_TRUE(Post(WorkKind::kSend, 1, small_gather).ok());
  ASSERT_TRUE(Post(WorkKind::kSend, 2, large_gather).ok());
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.recvs.size() == 2; }));
  EXPECT_EQ(std::memcmp(small_sink.data(), small.data(), small.size()), 0);
  EXPECT_EQ(large_sink, large);
  EXPECT_EQ(server_events_.Get(server_events_.recvs)[1].info.length, large.size());

  // RDMA Write and Read against the key the server's IA published.
  std::vector<std::uint8_t> region(1 << 20, 0);
  server_events_.Expose(region, kKey, true);
  PublishedKey key;
  key.key = kKey;
  key.address = reinterpret_cast<std::uint64_t>(region.data());
  key.length = region.size();
  key.remote_read = key.remote_write = true;
  server_transport_->PublishKey(key);
  std::vector<std::uint8_t> written = Bytes(region.size(), 9), read_back(region.size());
  std::vector<Segment> write_gather = {SegmentOf(written)}, read_scatter = {SegmentOf(read_back)};
  ASSERT_TRUE(Post(WorkKind::kRdmaWrite, 3, write_gather, key.address).ok());
  ASSERT_TRUE(Post(WorkKind::kRdmaRead, 4, read_scatter, key.address).ok());
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.work_done.size() == 4; }));
  for (const RecordingEvents::WorkDone& done : client_events_.Get(client_events_.work_done))
    EXPECT_EQ(done.status, WorkStatus::kSuccess) << "Work " << done.id;
  EXPECT_EQ(region, written);
  EXPECT_EQ(read_back, written);

  // A revoked key grants nothing: the Write is refused and the connection ends, as a Terminate.
  server_transport_->RevokeKey(kKey);
  ASSERT_TRUE(Post(WorkKind::kRdmaWrite, 5, write_gather, key.address).ok());
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.ended.has_value(); }));
  EXPECT_EQ(client_events_.Get(client_events_.ended), ConnectionEnd::kBroken);
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.ended.has_value(); }));
  EXPECT_EQ(server_events_.Get(server_events_.ended), ConnectionEnd::kBroken);
}

TEST_F(LocalPathTest, AGracefulDisconnectEndsBothSidesDisconnected) {
  Open(ShmMode::kAuto, ShmMode::kAuto);
  ASSERT_NO_FATAL_FAILURE(ConnectBoth());
  ASSERT_EQ(Local(client_transport_), 1u);
  client_->Disconnect(true);
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.ended.has_value(); }));
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.ended.has_value(); }));
  EXPECT_EQ(client_events_.Get(client_events_.ended), ConnectionEnd::kDisconnected);
  EXPECT_EQ(server_events_.Get(server_events_.ended), ConnectionEnd::kDisconnected);
}

TEST_F(LocalPathTest, AConsumersRejectReachesTheActiveSideWithItsPrivateData) {
  Open(ShmMode::kAuto, ShmMode::kAuto);
  ASSERT_TRUE(client_->Connect(server_transport_->address(), listener_->port(), {}, UINT64_MAX).ok());
  pending_ = requests_.Next();
  ASSERT_NE(pending_, nullptr);
  const std::vector<std::uint8_t> no = {'n', 'o'};
  pending_->Reject(no);
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.ended.has_value(); }));
  EXPECT_EQ(client_events_.Get(client_events_.ended), ConnectionEnd::kPeerRejected);
  EXPECT_EQ(client_events_.Get(client_events_.peer_data), no);
}

TEST_F(LocalPathTest, ARequestDroppedUnansweredIsTheProvidersRefusal) {
  Open(ShmMode::kAuto, ShmMode::kAuto);
  ASSERT_TRUE(client_->Connect(server_transport_->address(), listener_->port(), {}, UINT64_MAX).ok());
  pending_ = requests_.Next();
  ASSERT_NE(pending_, nullptr);
  pending_.reset();
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.ended.has_value(); }));
  EXPECT_EQ(client_events_.Get(client_events_.ended), ConnectionEnd::kNonPeerRejected);
}

// A peer that does not answer on the rendezvous (siw, OFED DAPL, another host: here a softdat
// listener with shm=off) gets the iWARP connection, from a client with shm=auto.
TEST_F(LocalPathTest, AListenerWithoutRendezvousIsReachedOverTcp) {
  Open(ShmMode::kAuto, ShmMode::kOff);
  ASSERT_NO_FATAL_FAILURE(ConnectBoth({'a'}, {'b'}));
  EXPECT_EQ(Local(client_transport_), 0u);
  EXPECT_EQ(Local(server_transport_), 0u);
  std::vector<std::uint8_t> small = Bytes(8, 1), sink(8);
  std::vector<Segment> gather = {SegmentOf(small)}, scatter = {SegmentOf(sink)};
  server_events_.AddBuffer(scatter);
  ASSERT_TRUE(Post(WorkKind::kSend, 1, gather).ok());
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.recvs.size() == 1; }));
  EXPECT_EQ(sink, small);
}

TEST_F(LocalPathTest, AClientWithShmOffConnectsOverTcp) {
  Open(ShmMode::kOff, ShmMode::kAuto);
  ASSERT_NO_FATAL_FAILURE(ConnectBoth());
  EXPECT_EQ(Local(client_transport_), 0u);
  EXPECT_EQ(Local(server_transport_), 0u);
}

// More same-host connection requests than the listener accepts in one turn (64), all queued before
// it looks: every one is read and reported, over three turns. A turn that stops with requests
// queued relies on its next async_wait seeing them without a new connection arriving (Asio
// re-arms the descriptor when a wait starts); were that lost, the tail of a burst would wait for
// ever. The server moves only when the test calls Progress (progress=poll), so the whole burst is
// queued before its first look.
TEST_F(LocalPathTest, ABurstOfRequestsLongerThanOneAcceptTurnIsReadWhole) {
  constexpr int kRequests = 150;
  client_transport_ = Make(ShmMode::kAuto);
  server_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  ASSERT_TRUE(server_transport_->Listen(0, &requests_, listener_).ok());
  for (int i = 0; i < 10; ++i) (void)server_transport_->Progress();  // the rendezvous is watched now
  std::vector<std::unique_ptr<RecordingEvents>> events;
  std::vector<std::unique_ptr<Endpoint>> clients;
  for (int i = 0; i < kRequests; ++i) {
    events.push_back(std::make_unique<RecordingEvents>());
    clients.emplace_back();
    ASSERT_TRUE(client_transport_->CreateEndpoint(SmallEndpointConfig(), events.back().get(), clients.back()).ok());
    ASSERT_TRUE(clients.back()->Connect(server_transport_->address(), listener_->port(), {}, UINT64_MAX).ok());
  }
  std::vector<std::unique_ptr<PendingConnection>> requests;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (requests.size() < kRequests && std::chrono::steady_clock::now() < until) {
    (void)server_transport_->Progress();
    while (std::unique_ptr<PendingConnection> request = requests_.TryNext()) requests.push_back(std::move(request));
  }
  EXPECT_EQ(requests.size(), static_cast<std::size_t>(kRequests));
  requests.clear();  // refused, unanswered
  clients.clear();
}

// The passive side is established as its consumer's accept goes out, as over TCP at the MPA Reply,
// and may send at once: its ESTABLISHED does not wait for the active side's Ready. When it waited,
// an active side that went on to disconnect its other connections made their DISCONNECTEDs come
// before this ESTABLISHED at the passive consumer, and stock dtestcm's server, written for IB,
// freed that endpoint and waited for ever (dtestcm_test_shm, about 1 run in 4). The client moves
// only when the test says (progress=poll), so it sends no Ready until the server has reported.
TEST_F(LocalPathTest, ThePassiveSideIsEstablishedAsItsAcceptGoesOutNotAtTheReady) {
  client_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  server_transport_ = Make(ShmMode::kAuto);
  ASSERT_NO_FATAL_FAILURE(ListenAndCreateEndpoints());
  ASSERT_NO_FATAL_FAILURE(ConnectAndAccept());
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.established == 1; }))
      << "the server's ESTABLISHED waited for the client";
  EXPECT_EQ(client_events_.Get(client_events_.established), 0);

  // Posted before the client's Ready: delivered once the client moves. (The server's engine may
  // still be on its way: its ESTABLISHED precedes its Accept, and a Post is queued for it.)
  ServerSend send;
  PrepareServerSend(send, 5);
  ASSERT_TRUE(server_->Post(send.work).ok());
  ASSERT_EQ(LocalOnceSettled(server_transport_, 1), 1u);
  auto& client = static_cast<TcpTransport&>(*client_transport_);
  ASSERT_NO_FATAL_FAILURE(PollUntilOneReceived(client));
  ASSERT_EQ(client_events_.Get(client_events_.established), 1);
  EXPECT_EQ(send.sink, send.message);
  EXPECT_EQ(Local(client_transport_), 1u);
  // The server's own completion, before `out` goes: its thread read it (the client's arrival
  // says so only through memory mapped twice in this process, which TSan cannot follow).
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.work_done.size() == 1; }));
}

// The passive side's ESTABLISHED reaches the consumer before the active side can learn of the
// acceptance, so nothing the active side does next (stock dtestcm's client closes its earlier
// connections as soon as its last is up) is reported ahead of it. The server's delivery of the
// ESTABLISHED is held here while the client, in progress=poll, polls: it may not become
// established meanwhile. Before, the Accept went out first and the client was up at once; dtestcm's
// server then took a DISCONNECTED for its last ESTABLISHED and waited for ever (CI, under TSan).
TEST_F(LocalPathTest, ThePassiveSidesEstablishedIsDeliveredBeforeItsAcceptGoesOut) {
  client_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  server_transport_ = Make(ShmMode::kAuto);
  ASSERT_NO_FATAL_FAILURE(ListenAndCreateEndpoints());
  EstablishedDeliveryHold hold(server_events_);
  ASSERT_NO_FATAL_FAILURE(ConnectAndAccept());
  ASSERT_TRUE(hold.WaitHeld()) << "the server never delivered its ESTABLISHED";
  auto& client = static_cast<TcpTransport&>(*client_transport_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < until) (void)client.Progress();
  EXPECT_EQ(client_events_.Get(client_events_.established), 0)
      << "the client learnt of the acceptance before the server's ESTABLISHED was delivered";

  // The server's consumer, told CONNECTED, posts a Send while that delivery pass still runs (as
  // core posts under the EP's lock, which the pass may need): the Post may not wait for the
  // engine, which comes only after the pass. It is queued, and goes first once the engine is up.
  ServerSend send;
  PrepareServerSend(send, 6);
  auto posted = std::async(std::launch::async, [&] { return server_->Post(send.work); });
  const bool returned = posted.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  hold.Release();
  ASSERT_TRUE(returned) << "the Post waited for the engine behind the delivery of the ESTABLISHED";
  ASSERT_TRUE(posted.get().ok());
  ASSERT_NO_FATAL_FAILURE(PollUntilEstablished(client));
  EXPECT_EQ(server_events_.Get(server_events_.established), 1);
  EXPECT_EQ(Local(client_transport_), 1u);
  ASSERT_NO_FATAL_FAILURE(PollUntilOneReceived(client));
  EXPECT_EQ(send.sink, send.message);
  // Its completion, before `out` goes.
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.work_done.size() == 1; }));
}

// The progress thread does not go to sleep on work it could not move because another thread held
// the connection (a consumer in Post holds its io lock and reads no records): that thread may have
// passed the work by already, and the peer rang no doorbell while this side was awake, so nobody
// would move it until something else woke the thread. The server polls only when the test says (progress=poll), so the
// interleaving is the test's: a Send waits in the server's ring, another thread holds its engine's
// io lock, and the progress thread's last look before sleeping meets both.
TEST_F(LocalPathTest, TheProgressThreadDoesNotSleepOnWorkAnotherThreadHolds) {
  client_transport_ = Make(ShmMode::kAuto);
  server_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  ASSERT_NO_FATAL_FAILURE(ListenAndCreateEndpoints());
  auto& server = static_cast<TcpTransport&>(*server_transport_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto progress_until = [&](const std::function<bool()>& done) {
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      (void)server.Progress();
    }
    return false;
  };
  for (int i = 0; i < 10; ++i) (void)server.Progress();  // the rendezvous is watched
  ASSERT_TRUE(client_->Connect(server.address(), listener_->port(), {}, UINT64_MAX).ok());
  ASSERT_TRUE(progress_until([&] { return (pending_ = requests_.TryNext()) != nullptr; }));
  ASSERT_TRUE(pending_->Accept(*server_, {}).ok());
  ASSERT_TRUE(progress_until([&] { return server_events_.Get(server_events_.established) == 1; }));
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.established == 1; }));
  ASSERT_EQ(Local(server_transport_), 1u);

  std::vector<std::uint8_t> message = Bytes(8, 7), sink(8, 0);
  std::vector<Segment> out = {SegmentOf(message)}, in = {SegmentOf(sink)};
  server_events_.AddBuffer(in);
  ASSERT_TRUE(Post(WorkKind::kSend, 1, out).ok());
  // Written into the server's ring (a Send through the ring completes when written).
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.work_done.size() == 1; }));

  softdat::Mutex* engine_lock = TcpTransportTestAccess::LocalEngineLock(server, 0);
  ASSERT_NE(engine_lock, nullptr);
  std::latch held(1), release(1);
  std::thread holder([&] {
    std::lock_guard lock(*engine_lock);
    held.count_down();
    release.wait();
  });
  held.wait();
  const bool stays_awake = TcpTransportTestAccess::PrepareSleep(server);
  release.count_down();
  holder.join();
  TcpTransportTestAccess::EndSleep(server);
  EXPECT_TRUE(stays_awake) << "the progress thread would sleep with a Send in its ring that nobody reads";
  // And the next look moves it.
  EXPECT_TRUE(progress_until([&] { return server_events_.Get(server_events_.recvs).size() == 1; }));
  EXPECT_EQ(sink, message);
}

// progress=poll: the consumers' polls are the only ones, and each looks at the live same-host
// connections, so a connection's note (a Send written at post completes: its completion waits to
// be reported) queues no kick: the next poll finds it in the scan. A note left while another
// poller holds the list (the test holds it as that poller would, its scan past the connection)
// is not lost: the first poll after finds it. The kick's push and drain were about 150
// instructions of a same-host round trip.
TEST_F(LocalPathTest, InPollModeANoteIsFoundByTheNextPollWithoutAKick) {
  client_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  server_transport_ = Make(ShmMode::kAuto);
  ASSERT_NO_FATAL_FAILURE(ListenAndCreateEndpoints());
  auto& client = static_cast<TcpTransport&>(*client_transport_);
  ASSERT_NO_FATAL_FAILURE(ConnectAndAccept());
  ASSERT_NO_FATAL_FAILURE(PollUntilEstablished(client));
  ASSERT_EQ(Local(client_transport_), 1u);
  for (int i = 0; i < 10; ++i) (void)client.Progress();  // the setup is behind it

  TwoSends sends;
  OfferTwoBuffers(sends, 5);
  std::vector<Segment>& out = sends.out;
  ASSERT_TRUE(Post(WorkKind::kSend, 1, out).ok());
  EXPECT_EQ(TcpTransportTestAccess::QueuedKicks(client), 0u) << "a note in poll mode queued a kick";
  (void)client.Progress();
  EXPECT_EQ(client_events_.Get(client_events_.work_done).size(), 1u) << "the next poll did not report the Send";

  // Another poller holds the list (its scan passed the connection).
  softdat::Mutex& list = TcpTransportTestAccess::LocalListLock(client);
  std::latch held(1), release(1);
  std::thread holder([&] {
    std::lock_guard lock(list);
    held.count_down();
    release.wait();
  });
  held.wait();
  ASSERT_TRUE(Post(WorkKind::kSend, 2, out).ok());
  EXPECT_EQ(TcpTransportTestAccess::QueuedKicks(client), 0u);
  (void)client.Progress();  // meets the held list
  release.count_down();
  holder.join();
  (void)client.Progress();
  EXPECT_EQ(client_events_.Get(client_events_.work_done).size(), 2u) << "the note was lost with the scan it missed";
  ExpectBothArrived(sends);
}

// The default mode, while a consumer polls: its kicks would wake nobody (its next poll drains
// them), so a same-host connection's note queues none, and the consumer's polls find it in the
// scan (the progress thread, which polls too, may take it first). When the consumer stops polling without a word, the progress thread ends the spell
// handoff_us after its last poll and finds the note in its look before it sleeps. The hand-off
// is a second here, so the posts come well inside the spell.
TEST_F(LocalPathTest, WhileAConsumerPollsANoteQueuesNoKickAndTheProgressThreadTakesItWhenThePollsStop) {
  ASSERT_NO_FATAL_FAILURE(ConnectSameHost(1'000'000));
  auto& client = Client();

  TwoSends sends;
  OfferTwoBuffers(sends, 9);
  std::vector<Segment>& out = sends.out;
  for (int i = 0; i < 10; ++i) (void)client.Progress();  // a consumer polls: its spell begins
  ASSERT_TRUE(Post(WorkKind::kSend, 1, out).ok());
  EXPECT_EQ(TcpTransportTestAccess::QueuedKicks(client), 0u) << "a note queued a kick while a consumer polled";
  // The consumer's polls report it (or the progress thread, which polls too, when it holds the
  // connection at that moment: either way without a kick).
  PollUntilWorkDone(1);

  // The consumer posts and stops polling.
  ASSERT_TRUE(Post(WorkKind::kSend, 2, out).ok());
  EXPECT_EQ(TcpTransportTestAccess::QueuedKicks(client), 0u);
  EXPECT_TRUE(client_events_.WaitFor([&] { return client_events_.work_done.size() == 2; }))
      << "the note left in the consumer's spell waited for a poll that never came";
  ExpectBothArrived(sends);
}

// The default mode, with the waits reported (core does: Transport::ReportWaits). A completion of a
// consumer's Post that nobody waits for is deferred: marked for the next poll, no kick, as a
// completion waits in a device's CQ. Regression: each one kicked, waking the progress thread once
// no consumer had polled within handoff_us, an eventfd write and a wake-up per signaled RDMA
// Write where consumers spin on memory. While a consumer sleeps in a wait (Pause to Resume), or a
// CNO exists, it is not deferred, and the thread reports it with no poll of the consumer's. The
// decision is asked directly (a Post made while the thread polls the connection kicks anyway:
// the poller is asked to look again); the conformance suite's
// AWritesCompletionReachesAThreadAsleepInAWaitAndACnosAgent shows the waiter served end to end.
TEST_F(LocalPathTest, WithWaitsReportedACompletionIsDeferredOnlyWhileNobodyWaits) {
  ASSERT_NO_FATAL_FAILURE(ConnectSameHost());
  auto& client = Client();
  EXPECT_FALSE(TcpTransportTestAccess::DeferLocalNote(client, 0)) << "deferred with the waits unreported";
  client_transport_->ReportWaits();
  EXPECT_TRUE(TcpTransportTestAccess::DeferLocalNote(client, 0)) << "kicked with nobody waiting";
  client_transport_->Pause();
  EXPECT_FALSE(TcpTransportTestAccess::DeferLocalNote(client, 0)) << "deferred while a consumer sleeps in a wait";
  client_transport_->Resume();
  EXPECT_TRUE(TcpTransportTestAccess::DeferLocalNote(client, 0));
  client_transport_->ConsumerWatches(1);
  EXPECT_FALSE(TcpTransportTestAccess::DeferLocalNote(client, 0)) << "deferred while a CNO exists";
  client_transport_->ConsumerWatches(-1);

  TwoSends sends;
  OfferTwoBuffers(sends, 5);
  std::vector<Segment>& out = sends.out;
  // Nobody waits: the consumer's next poll reports the Send.
  ASSERT_TRUE(Post(WorkKind::kSend, 1, out).ok());
  PollUntilWorkDone(1);
  // A consumer asleep in a wait: the thread reports it, with no poll.
  client_transport_->Pause();
  ASSERT_TRUE(Post(WorkKind::kSend, 2, out).ok());
  EXPECT_TRUE(client_events_.WaitFor([&] { return client_events_.work_done.size() == 2; }))
      << "the completion a waiter sleeps for was left for a poll that never comes";
  client_transport_->Resume();
  ExpectBothArrived(sends);
}

// A kick whose poll finds nothing (another poller took the noted work between the kick and the
// drain) is taken all the same: the next note kicks again. Regression: the connection's kick flag
// was cleared only in a poll that found work, so it stayed set, and the next note's Kick, seeing
// it, queued nothing and woke nobody: the end of a refused RDMA Write waited for ever
// (TwoSameHostIasConnectOverSharedMemoryWithTcpsSemantics, 2-3 runs in 150).
TEST_F(LocalPathTest, AKickWhosePollFindsNothingLeavesTheNextNoteKicked) {
  ASSERT_NO_FATAL_FAILURE(ConnectSameHost());
  auto& client = Client();
  ASSERT_TRUE(TcpTransportTestAccess::KickWithNothingToFind(client, 0));
  const auto taken_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (TcpTransportTestAccess::LocalKickPending(client, 0) && std::chrono::steady_clock::now() < taken_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(TcpTransportTestAccess::LocalKickPending(client, 0)) << "the kick's flag outlived the poll it asked for";

  // The consumer posts and never polls: only a kick gets the Send's completion reported.
  std::vector<std::uint8_t> message = Bytes(8, 7), sink(8, 0);
  std::vector<Segment> out = {SegmentOf(message)};
  std::vector<Segment> slot = {SegmentOf(sink)};
  server_events_.AddBuffer(slot);
  ASSERT_TRUE(Post(WorkKind::kSend, 1, out).ok());
  EXPECT_TRUE(client_events_.WaitFor([&] { return client_events_.work_done.size() == 1; }))
      << "the note after a kick that found nothing was never kicked";
  EXPECT_TRUE(server_events_.WaitFor([&] { return server_events_.recvs.size() == 1; }));
  EXPECT_EQ(sink, message);
}

// The consumers' polling spell is watched for its end (a timer at the last poll + handoff_us) only
// once something was left for their polls. Regression: every spell was, and a consumer that
// polled now and then (a dequeue per 16 RDMA Writes, spinning on memory between) kept the timer
// waking the progress thread every handoff_us, each wake-up preempting a spinner on a small
// machine. What is left is still bounded: the watch ends the spell and the thread takes it. The
// waits are not reported here, so the Send's completion is kicked, not deferred.
TEST_F(LocalPathTest, ASpellIsWatchedOnlyOnceSomethingIsLeftForItsPolls) {
  ASSERT_NO_FATAL_FAILURE(ConnectSameHost(300'000));
  auto& client = Client();
  std::vector<std::uint8_t> message = Bytes(8, 6), sink(8, 0);
  std::vector<Segment> out = {SegmentOf(message)};
  std::vector<Segment> slot = {SegmentOf(sink)};
  server_events_.AddBuffer(slot);

  for (int i = 0; i < 10; ++i) (void)client.Progress();  // a consumer polls: its spell begins
  EXPECT_FALSE(TcpTransportTestAccess::SpellWatched(client)) << "a spell that left nothing is watched";
  ASSERT_TRUE(Post(WorkKind::kSend, 1, out).ok());
  EXPECT_TRUE(TcpTransportTestAccess::SpellWatched(client)) << "a kick left for the polls is not bounded by a watch";
  // The consumer stops polling: the watch ends the spell and the thread reports the Send.
  EXPECT_TRUE(client_events_.WaitFor([&] { return client_events_.work_done.size() == 1; }))
      << "the completion left for the consumer's polls waited for one that never came";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (TcpTransportTestAccess::SpellWatched(client) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(TcpTransportTestAccess::SpellWatched(client)) << "the spell's end did not end its watch";
  EXPECT_TRUE(server_events_.WaitFor([&] { return server_events_.recvs.size() == 1; }));
  EXPECT_EQ(sink, message);
}

// A consumer that spins (progress=poll) runs the io_context every 8th idle poll, since datagram
// endpoints, timers and waits for socket room are its handlers; by the clock (at most every
// 25 us) only while the IA's connections are all same-host ones, which need no syscall to look
// at. Regression: an IA with no same-host connection (datagram endpoints alone) took the clock
// rule, so an idle poll never ran the handlers between two 64th polls.
TEST_F(LocalPathTest, ASpinningPollerRunsTheIoContextByTheClockOnlyWithSameHostConnectionsAlone) {
  client_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  server_transport_ = Make(ShmMode::kAuto);
  auto& client = static_cast<TcpTransport&>(*client_transport_);
  EXPECT_TRUE(TcpTransportTestAccess::AsioDue(client, 8, false)) << "no connections: every 8th idle poll";
  EXPECT_FALSE(TcpTransportTestAccess::AsioDue(client, 9, false));
  ASSERT_NO_FATAL_FAILURE(ListenAndCreateEndpoints());
  ASSERT_NO_FATAL_FAILURE(ConnectAndAccept());
  ASSERT_NO_FATAL_FAILURE(PollUntilEstablished(client));
  ASSERT_EQ(Local(client_transport_), 1u);
  EXPECT_FALSE(TcpTransportTestAccess::AsioDue(client, 8, false)) << "same-host connections alone: by the clock";
}

// With many same-host connections (16 and more) a poll does not look at each: a peer that puts
// records in a connection's ring (or consumes its records) marks the connection's bit in the
// IA's activity table, and the poll takes the marked ones, plus a few in turn. Both transports
// move only when the test says (progress=poll), so what each poll finds is the test's.
TEST_F(LocalPathTest, WithManyConnectionsAPollFindsTheMarkedOnesAndTheRestInTurn) {
  constexpr std::size_t kConnections = 20;
  client_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  server_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  auto& client = static_cast<TcpTransport&>(*client_transport_);
  auto& server = static_cast<TcpTransport&>(*server_transport_);
  ASSERT_TRUE(server.Listen(0, &requests_, listener_).ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto progress_until = [&](const std::function<bool()>& done) {
    while (std::chrono::steady_clock::now() < until) {
      if (done()) return true;
      (void)client.Progress();
      (void)server.Progress();
    }
    return false;
  };
  std::vector<std::unique_ptr<RecordingEvents>> client_events, server_events;
  std::vector<std::unique_ptr<Endpoint>> clients, servers;
  std::vector<std::unique_ptr<PendingConnection>> requests;
  std::vector<std::vector<std::uint8_t>> sinks(kConnections, std::vector<std::uint8_t>(8, 0));
  std::vector<std::vector<Segment>> scatters;
  for (std::size_t i = 0; i < kConnections; ++i) {
    client_events.push_back(std::make_unique<RecordingEvents>());
    server_events.push_back(std::make_unique<RecordingEvents>());
    clients.emplace_back();
    servers.emplace_back();
    ASSERT_TRUE(client.CreateEndpoint(SmallEndpointConfig(), client_events[i].get(), clients[i]).ok());
    ASSERT_TRUE(server.CreateEndpoint(SmallEndpointConfig(), server_events[i].get(), servers[i]).ok());
    scatters.push_back({SegmentOf(sinks[i])});
    server_events[i]->AddBuffer(scatters[i]);
    ASSERT_TRUE(clients[i]->Connect(server.address(), listener_->port(), {}, UINT64_MAX).ok());
    std::unique_ptr<PendingConnection> request;
    ASSERT_TRUE(progress_until([&] { return (request = requests_.TryNext()) != nullptr; }));
    ASSERT_TRUE(request->Accept(*servers[i], {}).ok());
    requests.push_back(std::move(request));
  }
  ASSERT_TRUE(progress_until([&] {
    for (std::size_t i = 0; i < kConnections; ++i)
      if (client_events[i]->Get(client_events[i]->established) != 1 || server_events[i]->Get(server_events[i]->established) != 1)
        return false;
    return true;
  }));
  ASSERT_EQ(Local(server_transport_), kConnections);
  for (int i = 0; i < 100; ++i) (void)server.Progress();  // every connection's setup is behind it

  std::vector<std::uint8_t> message = Bytes(8, 3);
  std::vector<Segment> out = {SegmentOf(message)};
  // Posts a Send on client connection `i` and moves the client until it completed: a Send through
  // the ring completes once written, so it is in the server's ring, its bit marked.
  auto send_on = [&](std::size_t i) {
    Work send;
    send.id = 1;
    send.kind = WorkKind::kSend;
    send.local = out;
    send.length = message.size();
    if (!clients[i]->Post(send).ok()) return false;
    while (std::chrono::steady_clock::now() < until) {
      if (client_events[i]->Get(client_events[i]->work_done).size() == 1) return true;
      (void)client.Progress();
    }
    return false;
  };
  auto server_polls_until_received = [&](std::size_t i, int bound) {
    for (int polls = 1; polls <= bound; ++polls) {
      (void)server.Progress();
      if (server_events[i]->Get(server_events[i]->recvs).size() == 1) return polls;
    }
    return -1;
  };

  // The client's own notes: a Send's completion on connection 17 is found by its own mark alone
  // (poll mode queues no kick), nothing looked at in turn.
  TcpTransportTestAccess::LookInTurn(client, 0);
  {
    Work send;
    send.id = 1;
    send.kind = WorkKind::kSend;
    send.local = out;
    send.length = message.size();
    ASSERT_TRUE(clients[17]->Post(send).ok());
    EXPECT_EQ(TcpTransportTestAccess::QueuedKicks(client), 0u);
    (void)client.Progress();
    EXPECT_EQ(client_events[17]->Get(client_events[17]->work_done).size(), 1u) << "the connection's own mark was not found";
    EXPECT_EQ(server_polls_until_received(17, 30), 1) << "the peer's mark did not lead the poll to the connection";
  }
  TcpTransportTestAccess::LookInTurn(client, 4);

  // The marks alone: nothing looked at in turn, the one marked connection is found.
  TcpTransportTestAccess::LookInTurn(server, 0);
  ASSERT_TRUE(send_on(13));
  EXPECT_EQ(server_polls_until_received(13, 2), 1) << "the peer's mark did not lead the poll to the connection";
  EXPECT_EQ(sinks[13], message);

  // A hostile peer cleared the marks: the connection is still looked at in turn, within
  // connections / 4 polls (5 here).
  TcpTransportTestAccess::LookInTurn(server, 4);
  ASSERT_TRUE(send_on(6));
  TcpTransportTestAccess::ClearActivity(server);
  const int polls = server_polls_until_received(6, 5);
  EXPECT_GE(polls, 1) << "not found within 5 polls of 4 connections each";
  EXPECT_EQ(sinks[6], message);
}

// What an IA tells its same-host peers about reading its rings (shm::KeyTableView::ReadsRingsNow,
// which sends their short RDMA Writes through the ring): with progress=poll nothing reads between
// the consumer's calls, so never; with a progress thread, not while it sleeps in epoll, and yes
// while it is parked for a polling consumer. Regression: the park runs as a handler inside the
// thread's epoll wait, after PrepareSleep made the sleep word odd, and left it odd for the whole
// spell: peers sent their short Writes one-sided, at 4x the ring's latency (PERFORMANCE.md). The
// hand-off is 10 s, so a thread that parked stays parked while the test looks.
TEST_F(LocalPathTest, PeersAreToldTheRingsAreReadOnlyWhileAThreadReadsThem) {
  std::unique_ptr<Transport> poll_mode = Make(ShmMode::kAuto, ProgressMode::kPoll);
  ASSERT_NE(poll_mode, nullptr);
  EXPECT_FALSE(TcpTransportTestAccess::ReadsRingsNow(static_cast<TcpTransport&>(*poll_mode)));
  (void)poll_mode->Progress();
  EXPECT_FALSE(TcpTransportTestAccess::ReadsRingsNow(static_cast<TcpTransport&>(*poll_mode)));

  std::unique_ptr<Transport> threaded = Make(ShmMode::kAuto, ProgressMode::kThread, 10'000'000);
  ASSERT_NE(threaded, nullptr);
  auto& transport = static_cast<TcpTransport&>(*threaded);
  // Idle, the thread sleeps in the io_context's wait, the word odd.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (TcpTransportTestAccess::ReadsRingsNow(transport) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_FALSE(TcpTransportTestAccess::ReadsRingsNow(transport)) << "an idle progress thread sleeps";
  // The park is the next handler that wait runs.
  TcpTransportTestAccess::ParkAsAfterAPoll(transport);
  bool reads = false;
  while (!reads && std::chrono::steady_clock::now() < until + std::chrono::seconds(2)) {
    reads = TcpTransportTestAccess::ReadsRingsNow(transport);
    if (!reads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(reads) << "parked, the thread hands the rings to the consumers, not to doorbells";
}

// An endpoint that goes (dat_ep_free) takes its same-host connection's descriptor with it at once,
// not when its progress context next runs: a consumer at its descriptor limit (max_eps) frees an
// EP and connects again, and kill_peer_test_shm counted one descriptor more after a round whose
// survivor had freed its EP just before. The client polls only when the test says
// (progress=poll), so nothing of its progress context runs after the endpoint goes.
TEST_F(LocalPathTest, AnEndpointThatGoesClosesItsDescriptorAtOnce) {
  client_transport_ = Make(ShmMode::kAuto, ProgressMode::kPoll);
  server_transport_ = Make(ShmMode::kAuto);
  ASSERT_NO_FATAL_FAILURE(ListenAndCreateEndpoints());
  auto& client = static_cast<TcpTransport&>(*client_transport_);
  ASSERT_TRUE(client_->Connect(server_transport_->address(), listener_->port(), {}, UINT64_MAX).ok());
  pending_ = requests_.Next();
  ASSERT_NE(pending_, nullptr);
  ASSERT_TRUE(pending_->Accept(*server_, {}).ok());
  ASSERT_NO_FATAL_FAILURE(PollUntilEstablished(client));
  const int fd = TcpTransportTestAccess::LocalEngineSocket(client, 0);
  ASSERT_GE(fd, 0);
  struct stat before {};
  ASSERT_EQ(::fstat(fd, &before), 0);

  client_.reset();
  struct stat after {};
  const bool same_file = ::fstat(fd, &after) == 0 && after.st_ino == before.st_ino && after.st_dev == before.st_dev;
  EXPECT_FALSE(same_file) << "the connection's socket outlived its endpoint";
  for (int i = 0; i < 10; ++i) (void)client.Progress();  // what the endpoint left behind goes
}

}  // namespace
}  // namespace softdat::transport::tcp
