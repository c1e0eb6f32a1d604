// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The TCP transport's data path allocates nothing per message, over TCP and over the same-host
// shared-memory path: after a warm-up, Sends (inline and gathered, one FPDU and several), RDMA
// Writes and RDMA Reads with their completions run with zero calls to operator new. This binary replaces the global operator new/delete with counting ones;
// the events sink below is allocation-free itself (fixed buffers, counters). Poll mode: the test's
// thread drives everything, so nothing else allocates meanwhile.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <vector>

#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/test_seams.h"
#include "transport/test_recorder.h"

// These operators are the global ones of this binary, so their malloc/free pairs are matched;
// GCC cannot see that when it inlines them.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<bool> counting{false};
std::atomic<std::uint64_t> allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace softdat::transport::tcp {
namespace {

using namespace std::chrono_literals;

// Receives into one fixed buffer, counts completions; exposes one region for RDMA.
class CountingEvents final : public EndpointEvents {
 public:
  explicit CountingEvents(std::size_t buffer) : buffer_(buffer), region_(buffer) {}
  void OnEstablished(std::span<const std::uint8_t>) override { established = true; }
  void OnEnded(ConnectionEnd, std::span<const std::uint8_t>) override { ended = true; }
  RecvAcquire AcquireRecv(std::uint32_t, RecvTarget& target) override {
    segment_ = Segment{reinterpret_cast<std::uint64_t>(buffer_.data()), static_cast<std::uint32_t>(buffer_.size()), 1};
    target = RecvTarget{std::span<const Segment>(&segment_, 1), buffer_.size()};
    return RecvAcquire::kTaken;
  }
  void OnRecvDone(std::uint32_t, WorkStatus status, const RecvInfo&) override {
    ++recvs;
    if (status != WorkStatus::kSuccess) ++errors;
  }
  void OnDeviceRecvDone(std::uint64_t, WorkStatus, const RecvInfo&) override { ++errors; }
  void OnWorkDone(std::uint64_t, WorkStatus status, std::uint32_t) override {
    ++done;
    if (status != WorkStatus::kSuccess) ++errors;
  }
  RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                 RemoteAccess) override {
    const auto base = reinterpret_cast<std::uint64_t>(region_.data());
    if (key != kKey || address < base || address - base + length > region_.size()) return {RemoteCheck::kBounds, nullptr};
    return {RemoteCheck::kOk, region_.data() + (address - base)};
  }
  std::uint64_t region_address() { return reinterpret_cast<std::uint64_t>(region_.data()); }

  static constexpr std::uint32_t kKey = 77;
  bool established = false;
  bool ended = false;
  std::uint64_t recvs = 0, done = 0, errors = 0;

 private:
  std::vector<std::uint8_t> buffer_;
  std::vector<std::uint8_t> region_;
  Segment segment_{};
};

class CountingRequests final : public ListenEvents {
 public:
  void OnConnectRequest(std::unique_ptr<PendingConnection> request) override { pending = std::move(request); }
  std::unique_ptr<PendingConnection> pending;
};

class TcpDataPath : public ::testing::TestWithParam<ShmMode> {};

TEST_P(TcpDataPath, SendsWritesReadsAndTheirCompletionsAllocateNothing) {
  constexpr std::size_t kLarge = 200 * 1024;  // several FPDUs
  IaParams params;
  params.kind = TransportKind::kTcp;
  params.address = "127.0.0.1";
  params.options.progress = ProgressMode::kPoll;
  params.options.shm = GetParam();
  std::string why;
  std::unique_ptr<Transport> transport;
  ASSERT_TRUE(CreateTcpTransport(params, why, transport).ok()) << why;
  const EndpointConfig config = testing::SmallEndpointConfig();
  CountingRequests requests;
  CountingEvents client_events(kLarge), server_events(kLarge);
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Endpoint> client, server;
  ASSERT_TRUE(transport->Listen(0, &requests, listener).ok());
  ASSERT_TRUE(transport->CreateEndpoint(config, &client_events, client).ok());
  ASSERT_TRUE(transport->CreateEndpoint(config, &server_events, server).ok());
  const auto poll_until = [&](auto done) {
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (!done() && std::chrono::steady_clock::now() < until) (void)transport->Progress();
    return done();
  };
  ASSERT_TRUE(client->Connect(transport->address(), listener->port(), {}, UINT64_MAX).ok());
  ASSERT_TRUE(poll_until([&] { return requests.pending != nullptr; }));
  ASSERT_TRUE(requests.pending->Accept(*server, {}).ok());
  ASSERT_TRUE(poll_until([&] { return client_events.established && server_events.established; }));
  const bool local = GetParam() == ShmMode::kAuto;
  ASSERT_EQ(TcpTransportTestAccess::LocalConnections(static_cast<TcpTransport&>(*transport)), local ? 2u : 0u);
  if (local) {
    // The same-host path checks a peer's one-sided RDMA against the keys the target published.
    PublishedKey key;
    key.key = CountingEvents::kKey;
    key.address = server_events.region_address();
    key.length = kLarge;
    key.remote_read = key.remote_write = true;
    transport->PublishKey(key);
  }

  std::vector<std::uint8_t> small(8, 1), large(kLarge, 2), sink(kLarge);
  Segment small_segment{reinterpret_cast<std::uint64_t>(small.data()), 8, 1};
  Segment large_segments[2] = {{reinterpret_cast<std::uint64_t>(large.data()), kLarge / 2, 1},
                               {reinterpret_cast<std::uint64_t>(large.data() + kLarge / 2), kLarge / 2, 1}};
  Segment sink_segment{reinterpret_cast<std::uint64_t>(sink.data()), kLarge, 1};
  std::uint64_t id = 0, expected_done = 0, expected_recvs = 0;
  // One round: an inline Send, a gathered multi-FPDU Send, an RDMA Write and an RDMA Read.
  const auto round = [&] {
    Work send;
    send.kind = WorkKind::kSend;
    send.id = ++id;
    send.local = std::span<const Segment>(&small_segment, 1);
    send.length = 8;
    if (!client->Post(send).ok()) return false;
    send.id = ++id;
    send.local = std::span<const Segment>(large_segments, 2);
    send.length = kLarge;
    if (!client->Post(send).ok()) return false;
    Work rdma;
    rdma.kind = WorkKind::kRdmaWrite;
    rdma.id = ++id;
    rdma.local = std::span<const Segment>(large_segments, 2);
    rdma.length = kLarge;
    rdma.remote_key = CountingEvents::kKey;
    rdma.remote_address = server_events.region_address();
    if (!client->Post(rdma).ok()) return false;
    rdma.kind = WorkKind::kRdmaRead;
    rdma.id = ++id;
    rdma.local = std::span<const Segment>(&sink_segment, 1);
    if (!client->Post(rdma).ok()) return false;
    expected_done += 4;
    expected_recvs += 2;
    return poll_until([&] { return client_events.done == expected_done && server_events.recvs == expected_recvs; });
  };
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(round()) << "warm-up round " << i;

  // The counter itself counts (so a zero below means something).
  counting.store(true);
  int* volatile probe = new int(1);  // volatile: the pair may not be elided
  delete probe;
  counting.store(false);
  ASSERT_EQ(allocations.exchange(0), 1u);

  counting.store(true);
  bool ok = true;
  for (int i = 0; i < 200 && ok; ++i) ok = round();
  counting.store(false);
  ASSERT_TRUE(ok);
  EXPECT_EQ(allocations.load(), 0u) << "heap allocations in 200 rounds of 4 operations";
  EXPECT_EQ(client_events.errors + server_events.errors, 0u);
  EXPECT_FALSE(client_events.ended || server_events.ended);
  client.reset();
  server.reset();
  requests.pending.reset();
  listener.reset();
}

INSTANTIATE_TEST_SUITE_P(Paths, TcpDataPath, ::testing::Values(ShmMode::kOff, ShmMode::kAuto),
                         [](const ::testing::TestParamInfo<ShmMode>& info) {
                           return info.param == ShmMode::kOff ? "Tcp" : "SharedMemory";
                         });

}  // namespace
}  // namespace softdat::transport::tcp
