// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The verbs transport on a real RDMA device, through the transport interface only: device limits,
// memory registration, setup and its failures, Sends into posted receives and through a device
// SRQ, RDMA Write and Read, the SRQ limit event and teardown. The device comes from
// SOFTDAT_VERBS_DEVICE ("rxe0 1"); without it every test skips, which is what happens outside
// testing/vm. With it, a device that cannot be opened fails every test: it was asked for by name.
// Every wait is bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "transport/test_recorder.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_transport.h"

namespace softdat::transport {
namespace {

using testing::kBound;  // 30 s: TCG guests are slow; a bound, not a timing

using testing::RecordingEvents;
using testing::RecordingRequests;
using testing::RecordingSrqEvents;

struct Buffer {
  explicit Buffer(std::size_t n, std::uint8_t seed = 0) : bytes(n) {
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(seed + i * 7);
  }
  std::vector<std::uint8_t> bytes;
  std::unique_ptr<MemoryRegion> mr;
  std::uint64_t address(std::size_t offset = 0) { return reinterpret_cast<std::uint64_t>(bytes.data() + offset); }
  Segment Seg(std::size_t offset, std::uint32_t length) { return Segment{address(offset), length, mr->local_key()}; }
};

std::vector<std::uint8_t> V(std::initializer_list<std::uint8_t> l) { return l; }

Work SendOf(std::uint64_t id, std::span<const Segment> local) {
  Work w;
  w.id = id;
  w.kind = WorkKind::kSend;
  w.local = local;
  for (const Segment& s : local) w.length += s.length;
  return w;
}

// The device SOFTDAT_VERBS_DEVICE names ("rxe0 1") as verbs IaParams; false when it is not set.
bool RequestedDevice(IaParams& params) {
  const char* env = std::getenv("SOFTDAT_VERBS_DEVICE");
  if (env == nullptr || *env == '\0') return false;
  std::istringstream in(env);
  int port = 0;
  in >> params.device >> port;
  params.kind = TransportKind::kVerbs;
  params.port = static_cast<std::uint8_t>(port);
  return true;
}

// Opens the requested device. Any error fails (ASSERT), kInvalidParameter (no such device or port)
// too: the device was asked for by name, so its absence is a broken setup, not a reason to skip.
void OpenRequestedDevice(const IaParams& params, std::unique_ptr<Transport>& transport) {
  std::string why;
  const Status s = verbs::CreateVerbsTransport(params, why, transport);
  ASSERT_TRUE(s.ok()) << "SOFTDAT_VERBS_DEVICE names " << params.device << " port " << int{params.port}
                      << ", which cannot be opened: " << CodeName(s.code()) << ": " << why;
}

class VerbsTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    IaParams params;
    if (!RequestedDevice(params))
      GTEST_SKIP() << "SOFTDAT_VERBS_DEVICE is not set (e.g. \"rxe0 1\"); run testing/vm/verbs_transport_test.sh";
    device_ = params.device;
    port_ = params.port;
    params.options.progress = progress_;
    ASSERT_NO_FATAL_FAILURE(OpenRequestedDevice(params, transport_));
    ASSERT_TRUE(transport_->CreateProtectionDomain(pd_).ok());
    ASSERT_TRUE(transport_->Listen(0, &requests_, listener_).ok());
    if (progress_ == ProgressMode::kPoll) {
      // The consumer's thread drives the transport, as dat_evd_wait does in busy-poll mode.
      poller_ = std::thread([this] {
        while (!stop_polling_) transport_->Progress();
      });
    }
  }
  void TearDown() override {
    stop_polling_ = true;
    if (poller_.joinable()) poller_.join();
    active_.reset();
    passive_.reset();
    srq_.reset();
    listener_.reset();
    buffers_.clear();
    pd_.reset();
    transport_.reset();
  }

  // Registered with every access (remote atomics when asked); the fixture owns it so it outlives
  // the endpoints.
  Buffer& Make(std::size_t n, std::uint8_t seed = 0, bool atomic = false) {
    buffers_.push_back(std::make_unique<Buffer>(n, seed));
    Buffer& b = *buffers_.back();
    EXPECT_TRUE(
        transport_->RegisterMemory(*pd_, b.bytes.data(), b.bytes.size(), MemoryAccess{true, true, true, atomic}, b.mr)
            .ok());
    return b;
  }

  EndpointConfig Config(DeviceSrq* srq = nullptr) {
    EndpointConfig c;
    c.pd = pd_.get();
    c.srq = srq;
    c.max_send_work = 16;
    c.max_recv_work = 16;
    c.max_send_segments = 2;
    c.max_recv_segments = 2;
    c.max_rdma_read_in = 4;
    c.max_rdma_read_out = 4;
    c.max_message_size = 1 << 20;
    return c;
  }

  void MakeEndpoints(DeviceSrq* passive_srq = nullptr) {
    ASSERT_TRUE(transport_->CreateEndpoint(Config(), &a_, active_).ok());
    ASSERT_TRUE(transport_->CreateEndpoint(Config(passive_srq), &p_, passive_).ok());
  }

  // Connects active_ to passive_ with private data both ways.
  void Connect() {
    const auto hello = V({1, 2, 3, 4, 5});
    const auto welcome = V({9, 8, 7});
    ASSERT_TRUE(active_->Connect(transport_->address(), listener_->port(), hello, UINT64_MAX).ok());
    auto request = requests_.Next();
    ASSERT_NE(request, nullptr);
    ExpectPrivateData(request->private_data(), hello);
    ASSERT_TRUE(request->Accept(*passive_, welcome).ok());
    ASSERT_TRUE(a_.WaitFor([&] { return a_.established > 0 || a_.ended_count > 0; }));
    ASSERT_TRUE(p_.WaitFor([&] { return p_.established > 0 || p_.ended_count > 0; }));
    ASSERT_EQ(a_.Get(a_.established), 1) << "ended: " << static_cast<int>(a_.Get(a_.ended).value_or(ConnectionEnd{}));
    ASSERT_EQ(p_.Get(p_.established), 1);
    ExpectPrivateData(a_.Get(a_.peer_data), welcome);
    EXPECT_EQ(active_->remote_address().sin_addr.s_addr, transport_->address().sin_addr.s_addr);
  }

  Work Rdma(WorkKind kind, std::uint64_t id, std::span<const Segment> local, std::uint64_t address, std::uint32_t key) {
    Work w = SendOf(id, local);
    w.kind = kind;
    w.remote_address = address;
    w.remote_key = key;
    return w;
  }

  bool iwarp() const { return device_.rfind("siw", 0) == 0; }

  // The consumer's bytes and nothing else: exactly on iWARP; on IB/RoCE followed by the zeros that
  // fill the CM message's private-data field, as rdma_cm delivers it to every consumer.
  void ExpectPrivateData(std::span<const std::uint8_t> got, const std::vector<std::uint8_t>& sent) {
    const std::vector<std::uint8_t> bytes(got.begin(), got.end());
    if (iwarp()) {
      EXPECT_EQ(bytes, sent);
      return;
    }
    ASSERT_GE(bytes.size(), sent.size());
    EXPECT_EQ(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + sent.size()), sent);
    EXPECT_TRUE(std::all_of(bytes.begin() + sent.size(), bytes.end(), [](std::uint8_t b) { return b == 0; }))
        << "padding after the consumer's bytes";
  }

  ProgressMode progress_ = ProgressMode::kThread;
  std::atomic<bool> stop_polling_{false};
  std::thread poller_;
  std::string device_;
  std::uint8_t port_ = 0;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<ProtectionDomain> pd_;
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<DeviceSrq> srq_;
  RecordingRequests requests_;
  RecordingSrqEvents srq_events_;
  // The device receive model: a software-model report fails the test.
  RecordingEvents a_{ReceiveModel::kDevice}, p_{ReceiveModel::kDevice};
  std::unique_ptr<Endpoint> active_, passive_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
};

TEST_F(VerbsTransportTest, DeviceAttributesAreTheDevicesOwn) {
  const Capabilities& c = transport_->capabilities();
  EXPECT_EQ(c.receive_model, ReceiveModel::kDevice);
  EXPECT_TRUE(c.device_memory_keys);
  EXPECT_TRUE(c.rdma_read);
  EXPECT_GT(c.max_endpoints, 0u);
  EXPECT_GT(c.max_send_work, 0u);
  EXPECT_GT(c.max_segments, 0u);
  EXPECT_GT(c.max_message_size, 0u);
  EXPECT_GT(c.max_rdma_read_in, 0u);
  // The port's active MTU, not the tcp FPDU's default: 256 to 4096 bytes, a power of two.
  EXPECT_GE(c.transport_mtu, 256u);
  EXPECT_LE(c.transport_mtu, 4096u);
  EXPECT_EQ(c.transport_mtu & (c.transport_mtu - 1), 0u) << c.transport_mtu;
  EXPECT_GT(transport_->address().sin_addr.s_addr, 0u);
  char address[INET_ADDRSTRLEN];
  const sockaddr_in ia = transport_->address();
  inet_ntop(AF_INET, &ia.sin_addr, address, sizeof address);
  std::cout << "device " << std::getenv("SOFTDAT_VERBS_DEVICE") << " at " << address << ": srq " << c.srq
            << " srq_resize " << c.srq_resize << " max_endpoints " << c.max_endpoints << " max_send_work "
            << c.max_send_work << " max_segments " << c.max_segments << " max_message_size " << c.max_message_size
            << " ird " << c.max_rdma_read_in << " ord " << c.max_rdma_read_out << " max_srq_work " << c.max_srq_work
            << " max_srq_segments " << c.max_srq_segments << " private " << c.max_private_data << std::endl;
}

TEST_F(VerbsTransportTest, RegisterMemoryGivesDeviceKeys) {
  Buffer& b = Make(4096);
  ASSERT_NE(b.mr, nullptr);
  EXPECT_NE(b.mr->remote_key(), 0u);
}

TEST_F(VerbsTransportTest, SendsLandInPostedReceivesInOrderAndScatter) {
  Buffer& src = Make(256, 1);
  Buffer& dst = Make(256);
  MakeEndpoints();
  // Posted before the connection exists: they wait for the QP.
  Segment r0[] = {dst.Seg(0, 16)};
  Segment r1[] = {dst.Seg(32, 8), dst.Seg(64, 24)};  // scatter over two segments
  ASSERT_TRUE(passive_->PostRecv(100, r0).ok());
  ASSERT_TRUE(passive_->PostRecv(101, r1).ok());
  Connect();
  Segment s0[] = {src.Seg(0, 10)};
  Segment s1[] = {src.Seg(100, 20)};
  ASSERT_TRUE(active_->Post(SendOf(1, s0)).ok());
  ASSERT_TRUE(active_->Post(SendOf(2, s1)).ok());
  ASSERT_TRUE(p_.WaitFor([&] { return p_.recvs.size() == 2; }));
  ASSERT_TRUE(a_.WaitFor([&] { return a_.work_done.size() == 2; }));
  auto recvs = p_.Get(p_.recvs);
  EXPECT_EQ(recvs[0].id, 100u);
  EXPECT_EQ(recvs[0].status, WorkStatus::kSuccess);
  EXPECT_EQ(recvs[0].info.length, 10u);
  EXPECT_EQ(recvs[1].id, 101u);
  EXPECT_EQ(recvs[1].status, WorkStatus::kSuccess);
  EXPECT_EQ(recvs[1].info.length, 20u);
  EXPECT_EQ(0, std::memcmp(dst.bytes.data(), src.bytes.data(), 10));
  EXPECT_EQ(0, std::memcmp(dst.bytes.data() + 32, src.bytes.data() + 100, 8));
  EXPECT_EQ(0, std::memcmp(dst.bytes.data() + 64, src.bytes.data() + 108, 12));
  auto done = a_.Get(a_.work_done);
  EXPECT_EQ(done[0].id, 1u);
  EXPECT_EQ(done[0].length, 10u);
  EXPECT_EQ(done[1].id, 2u);
  EXPECT_EQ(done[1].status, WorkStatus::kSuccess);
}

TEST_F(VerbsTransportTest, SendThroughDeviceSrqNamesTheReceiveOnTheConsumingEndpoint) {
  if (!transport_->capabilities().srq) GTEST_SKIP() << "the device has no SRQ";
  ASSERT_TRUE(transport_->CreateDeviceSrq(*pd_, 8, 1, &srq_events_, srq_).ok());
  Buffer& src = Make(64, 3);
  Buffer& dst = Make(64);
  Segment r[] = {dst.Seg(0, 32)};
  ASSERT_TRUE(srq_->PostRecv(77, r).ok());
  ASSERT_TRUE(srq_->PostRecv(78, {}).ok());  // zero segments: one empty SGE
  MakeEndpoints(srq_.get());
  Connect();
  Segment s[] = {src.Seg(0, 12)};
  ASSERT_TRUE(active_->Post(SendOf(5, s)).ok());
  ASSERT_TRUE(p_.WaitFor([&] { return p_.recvs.size() == 1; }));
  auto recv = p_.Get(p_.recvs)[0];
  EXPECT_EQ(recv.id, 77u);
  EXPECT_EQ(recv.status, WorkStatus::kSuccess);
  EXPECT_EQ(recv.info.length, 12u);
  EXPECT_EQ(0, std::memcmp(dst.bytes.data(), src.bytes.data(), 12));
  ASSERT_TRUE(active_->Post(SendOf(6, {})).ok());  // zero-length Send into the empty receive
  ASSERT_TRUE(p_.WaitFor([&] { return p_.recvs.size() == 2; }));
  EXPECT_EQ(p_.Get(p_.recvs)[1].id, 78u);
  EXPECT_EQ(p_.Get(p_.recvs)[1].info.length, 0u);
}

TEST_F(VerbsTransportTest, RdmaWriteAndReadReachTheRemoteRegion) {
  Buffer& local = Make(128, 5);
  Buffer& remote = Make(128, 50);
  Buffer& back = Make(128);
  MakeEndpoints();
  Connect();
  Segment w[] = {local.Seg(0, 40)};
  ASSERT_TRUE(active_->Post(Rdma(WorkKind::kRdmaWrite, 10, w, remote.address(8), remote.mr->remote_key())).ok());
  ASSERT_TRUE(a_.WaitFor([&] { return a_.work_done.size() == 1; }));
  EXPECT_EQ(a_.Get(a_.work_done)[0].status, WorkStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(remote.bytes.data() + 8, local.bytes.data(), 40));
  Segment r[] = {back.Seg(0, 30), back.Seg(64, 10)};
  const Status read = active_->Post(Rdma(WorkKind::kRdmaRead, 11, r, remote.address(0), remote.mr->remote_key()));
  if (read.code() == Code::kModelNotSupported) {
    // siw places a Read Response into one SGE only (max_sge_rd 1): the transport refuses more.
    std::cout << "this device scatters a Read into one segment only" << std::endl;
    Segment one[] = {back.Seg(0, 40)};
    ASSERT_TRUE(active_->Post(Rdma(WorkKind::kRdmaRead, 11, one, remote.address(0), remote.mr->remote_key())).ok());
    r[0].length = 30;
    r[1] = back.Seg(30, 10);
  } else {
    ASSERT_TRUE(read.ok());
  }
  ASSERT_TRUE(a_.WaitFor([&] { return a_.work_done.size() == 2; }));
  auto done = a_.Get(a_.work_done)[1];
  EXPECT_EQ(done.id, 11u);
  EXPECT_EQ(done.status, WorkStatus::kSuccess);
  EXPECT_EQ(done.length, 40u);
  EXPECT_EQ(0, std::memcmp(back.bytes.data(), remote.bytes.data(), 30));
  EXPECT_EQ(0, std::memcmp(reinterpret_cast<const void*>(r[1].address), remote.bytes.data() + 30, 10));
}

// The DAT IB extensions are what the device has: all on InfiniBand and RoCE (rxe), none on iWARP
// (siw has no immediate data, no atomics, no UD); the IA reports exactly that (issue 37).
TEST_F(VerbsTransportTest, TheIbExtensionsAreWhatTheDeviceHas) {
  const Capabilities& c = transport_->capabilities();
  std::cout << "IB extensions: immediate " << c.immediate_data << " atomics " << c.atomics << " datagrams "
            << c.datagrams << std::endl;
  if (iwarp()) {
    EXPECT_FALSE(c.immediate_data);
    EXPECT_FALSE(c.atomics);
    EXPECT_FALSE(c.datagrams);
  } else {
    EXPECT_TRUE(c.immediate_data);
    EXPECT_TRUE(c.atomics);
  }
}

TEST_F(VerbsTransportTest, WriteWithImmediateCompletesTheNextReceiveWithTheImmediateAndTheLength) {
  if (!transport_->capabilities().immediate_data) GTEST_SKIP() << "the device has no immediate data";
  Buffer& local = Make(64, 5);
  Buffer& remote = Make(64);
  Buffer& receive = Make(16, 9);
  MakeEndpoints();
  Connect();
  Segment r[] = {receive.Seg(0, 16)};
  ASSERT_TRUE(passive_->PostRecv(55, r).ok());
  Segment w[] = {local.Seg(0, 40)};
  Work write = Rdma(WorkKind::kRdmaWriteImmediate, 30, w, remote.address(8), remote.mr->remote_key());
  write.immediate = 0xC0FFEE;
  ASSERT_TRUE(active_->Post(write).ok());
  ASSERT_TRUE(p_.WaitFor([&] { return p_.recvs.size() == 1; }));
  const auto recv = p_.Get(p_.recvs)[0];
  EXPECT_EQ(recv.id, 55u);
  EXPECT_EQ(recv.status, WorkStatus::kSuccess);
  EXPECT_TRUE(recv.info.extension.immediate);
  EXPECT_EQ(recv.info.extension.immediate_data, 0xC0FFEEu);
  EXPECT_EQ(recv.info.extension.written, 40u);
  EXPECT_EQ(0, std::memcmp(remote.bytes.data() + 8, local.bytes.data(), 40));
  ASSERT_TRUE(a_.WaitFor([&] { return a_.work_done.size() == 1; }));
  EXPECT_EQ(a_.Get(a_.work_done)[0].status, WorkStatus::kSuccess);
}

TEST_F(VerbsTransportTest, AtomicsReturnTheOriginalValue) {
  if (!transport_->capabilities().atomics) GTEST_SKIP() << "the device has no atomics";
  Buffer& target = Make(64, 0, true);
  Buffer& result = Make(16);
  const std::uint64_t five = 5;
  std::memcpy(target.bytes.data() + 8, &five, 8);
  MakeEndpoints();
  Connect();
  Segment first[] = {result.Seg(0, 8)}, second[] = {result.Seg(8, 8)};
  Work add = Rdma(WorkKind::kFetchAdd, 40, first, target.address(8), target.mr->remote_key());
  add.compare_add = 10;
  Work swap = Rdma(WorkKind::kCompareSwap, 41, second, target.address(8), target.mr->remote_key());
  swap.compare_add = 15;
  swap.swap = 99;
  ASSERT_TRUE(active_->Post(add).ok());
  ASSERT_TRUE(active_->Post(swap).ok());
  ASSERT_TRUE(a_.WaitFor([&] { return a_.work_done.size() == 2; }));
  for (const auto& done : a_.Get(a_.work_done)) EXPECT_EQ(done.status, WorkStatus::kSuccess);
  std::uint64_t original = 0, now = 0;
  std::memcpy(&original, result.bytes.data(), 8);
  EXPECT_EQ(original, 5u) << "in host byte order";
  std::memcpy(&original, result.bytes.data() + 8, 8);
  EXPECT_EQ(original, 15u);
  std::memcpy(&now, target.bytes.data() + 8, 8);
  EXPECT_EQ(now, 99u);
}

// UD endpoints (verbs_ud.h): one resolves the other through a UD listener (SIDR), each gets a
// handle of the other, and a datagram goes each way behind its GRH, naming its sender.
TEST_F(VerbsTransportTest, UdEndpointsResolveEachOtherAndExchangeDatagrams) {
  const Capabilities& caps = transport_->capabilities();
  if (!caps.datagrams) GTEST_SKIP() << "the device has no UD";
  std::cout << "UD MTU " << caps.max_datagram << std::endl;
  EndpointConfig config = Config();
  config.datagram = true;
  config.max_rdma_read_in = config.max_rdma_read_out = 0;
  ASSERT_TRUE(transport_->CreateEndpoint(config, &a_, active_).ok());
  ASSERT_TRUE(transport_->CreateEndpoint(config, &p_, passive_).ok());
  std::unique_ptr<Listener> ud_listener;
  ASSERT_TRUE(transport_->ListenDatagram(0, &requests_, ud_listener).ok());
  Buffer& in_b = Make(40 + 64);
  Buffer& in_a = Make(40 + 64);
  Segment rb[] = {in_b.Seg(0, 40 + 64)}, ra[] = {in_a.Seg(0, 40 + 64)};
  ASSERT_TRUE(passive_->PostRecv(7, rb).ok());
  ASSERT_TRUE(active_->PostRecv(8, ra).ok());
  const auto hello = V({1, 2, 3, 4}), welcome = V({5, 6});
  ASSERT_TRUE(active_->Resolve(transport_->address(), ud_listener->port(), hello, UINT64_MAX, 5).ok());
  auto request = requests_.Next();
  ASSERT_NE(request, nullptr);
  ASSERT_TRUE(request->datagram());
  ExpectPrivateData(request->private_data(), hello);
  std::unique_ptr<AddressHandle> to_a;
  ASSERT_TRUE(request->AcceptDatagram(*passive_, welcome, to_a).ok());
  ASSERT_NE(to_a, nullptr);
  ASSERT_TRUE(a_.WaitFor([&] { return !a_.resolutions.empty(); }));
  const auto resolution = a_.Get(a_.resolutions)[0];
  ASSERT_FALSE(resolution.failed.has_value()) << static_cast<int>(*resolution.failed);
  EXPECT_EQ(resolution.request, 5u);
  ExpectPrivateData(resolution.private_data, welcome);
  const std::shared_ptr<AddressHandle> to_b = resolution.peer;
  EXPECT_EQ(to_b->address(), transport_->address().sin_addr.s_addr);

  Buffer& out = Make(64, 3);
  Segment s[] = {out.Seg(0, 64)};
  Work datagram = SendOf(9, s);
  datagram.kind = WorkKind::kSendDatagram;
  datagram.destination = to_b.get();
  ASSERT_TRUE(active_->Post(datagram).ok());
  ASSERT_TRUE(p_.WaitFor([&] { return p_.recvs.size() == 1; }));
  const auto got = p_.Get(p_.recvs)[0];
  EXPECT_EQ(got.id, 7u);
  EXPECT_EQ(got.status, WorkStatus::kSuccess);
  EXPECT_EQ(got.info.length, 40u + 64u) << "the GRH, then the datagram";
  EXPECT_EQ(got.info.extension.source_qpn, to_a->qpn());
  EXPECT_EQ(got.info.extension.source_address, transport_->address().sin_addr.s_addr);
  EXPECT_EQ(0, std::memcmp(in_b.bytes.data() + 40, out.bytes.data(), 64));
  ASSERT_TRUE(a_.WaitFor([&] { return a_.work_done.size() == 1; }));
  EXPECT_EQ(a_.Get(a_.work_done)[0].status, WorkStatus::kSuccess);

  datagram.id = 10;
  datagram.destination = to_a.get();
  ASSERT_TRUE(passive_->Post(datagram).ok());
  ASSERT_TRUE(a_.WaitFor([&] { return a_.recvs.size() == 1; }));
  EXPECT_EQ(a_.Get(a_.recvs)[0].info.extension.source_qpn, to_b->qpn());
  EXPECT_EQ(0, std::memcmp(in_a.bytes.data() + 40, out.bytes.data(), 64));
}

TEST_F(VerbsTransportTest, WriteWithABadKeyIsRemoteAccessAndBreaksTheConnection) {
  Buffer& local = Make(64, 5);
  Buffer& remote = Make(64);
  MakeEndpoints();
  Connect();
  Segment w[] = {local.Seg(0, 16)};
  ASSERT_TRUE(active_->Post(Rdma(WorkKind::kRdmaWrite, 20, w, remote.address(), remote.mr->remote_key() ^ 0x5a5a00)).ok());
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  auto done = a_.Get(a_.work_done);
  ASSERT_EQ(done.size(), 1u);
  ASSERT_TRUE(p_.WaitFor([&] { return p_.ended_count > 0; }));
  std::cout << "bad Write: status " << static_cast<int>(done[0].status) << ", writer ended "
            << static_cast<int>(*a_.Get(a_.ended)) << ", target ended " << static_cast<int>(*p_.Get(p_.ended)) << std::endl;
  if (iwarp()) {
    // iWARP Writes are not acknowledged: the Write completed when it was sent. siw answers the
    // bad STag with a Terminate and a close, and raises no QP error event, so both sides see a
    // plain disconnect: what this test can hold siw to is that both end, once.
    ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
    EXPECT_EQ(a_.Get(a_.ended_count), 1);
    EXPECT_EQ(p_.Get(p_.ended_count), 1);
  } else {
    EXPECT_EQ(done[0].status, WorkStatus::kRemoteAccess);
    EXPECT_EQ(a_.Get(a_.ended), ConnectionEnd::kBroken);
  }
  EXPECT_EQ(remote.bytes, Buffer(64).bytes) << "the refused Write changed the region";
}

TEST_F(VerbsTransportTest, RejectCarriesPrivateDataToTheActiveSide) {
  MakeEndpoints();
  ASSERT_TRUE(active_->Connect(transport_->address(), listener_->port(), V({1}), UINT64_MAX).ok());
  auto request = requests_.Next();
  ASSERT_NE(request, nullptr);
  request->Reject(V({42, 43}));
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  EXPECT_EQ(a_.Get(a_.ended), ConnectionEnd::kPeerRejected);
  ExpectPrivateData(a_.Get(a_.peer_data), V({42, 43}));
}

// No header of ours in the private data: a peer's consumer sees its bytes from byte 0 (stock
// dtest checks its connect pattern from byte 0), up to the transport's whole limit.
TEST_F(VerbsTransportTest, PrivateDataIsTheConsumersBytesUpToTheLimit) {
  MakeEndpoints();
  const std::uint32_t max = transport_->capabilities().max_private_data;
  EXPECT_EQ(max, iwarp() ? 251u : 56u);
  std::vector<std::uint8_t> hello(max);
  for (std::size_t i = 0; i < hello.size(); ++i) hello[i] = static_cast<std::uint8_t>(i + 1);
  std::vector<std::uint8_t> too_long(max + 1, 7);
  EXPECT_EQ(active_->Connect(transport_->address(), listener_->port(), too_long, UINT64_MAX).code(),
            Code::kInvalidParameter);
  ASSERT_TRUE(active_->Connect(transport_->address(), listener_->port(), hello, UINT64_MAX).ok());
  auto request = requests_.Next();
  ASSERT_NE(request, nullptr);
  ExpectPrivateData(request->private_data(), hello);
  std::vector<std::uint8_t> welcome(max);
  for (std::size_t i = 0; i < welcome.size(); ++i) welcome[i] = static_cast<std::uint8_t>(200 - i);
  ASSERT_TRUE(request->Accept(*passive_, welcome).ok());
  ASSERT_TRUE(a_.WaitFor([&] { return a_.established > 0 || a_.ended_count > 0; }));
  ASSERT_EQ(a_.Get(a_.established), 1);
  ExpectPrivateData(a_.Get(a_.peer_data), welcome);
}

// A consumer's reject with no private data: IB's reason says it was the consumer; iWARP cannot
// tell it from nobody answering (siw reports both alike), so it reads as non-peer there.
TEST_F(VerbsTransportTest, RejectWithoutPrivateDataIsPeerOnIbAndNonPeerOnIwarp) {
  MakeEndpoints();
  ASSERT_TRUE(active_->Connect(transport_->address(), listener_->port(), V({1}), UINT64_MAX).ok());
  auto request = requests_.Next();
  ASSERT_NE(request, nullptr);
  request->Reject({});
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  EXPECT_EQ(a_.Get(a_.ended), iwarp() ? ConnectionEnd::kNonPeerRejected : ConnectionEnd::kPeerRejected);
}

TEST_F(VerbsTransportTest, UnansweredRequestIsANonPeerRejection) {
  MakeEndpoints();
  ASSERT_TRUE(active_->Connect(transport_->address(), listener_->port(), {}, UINT64_MAX).ok());
  requests_.Next().reset();
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  EXPECT_EQ(a_.Get(a_.ended), ConnectionEnd::kNonPeerRejected);
}

TEST_F(VerbsTransportTest, NobodyListeningIsUnreachableOrNonPeerRejected) {
  MakeEndpoints();
  const std::uint16_t port = listener_->port();
  listener_.reset();
  ASSERT_TRUE(active_->Connect(transport_->address(), port, {}, UINT64_MAX).ok());
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  const ConnectionEnd why = *a_.Get(a_.ended);
  std::cout << "nobody listening ends with "
            << (why == ConnectionEnd::kUnreachable ? "kUnreachable" : why == ConnectionEnd::kNonPeerRejected ? "kNonPeerRejected" : "?")
            << std::endl;
  EXPECT_TRUE(why == ConnectionEnd::kUnreachable || why == ConnectionEnd::kNonPeerRejected);
  EXPECT_EQ(a_.Get(a_.ended_count), 1);
}

TEST_F(VerbsTransportTest, SrqLimitEventFiresOnceAfterArming) {
  if (!transport_->capabilities().srq_limit) GTEST_SKIP() << "the device has no SRQ limit event";
  ASSERT_TRUE(transport_->CreateDeviceSrq(*pd_, 8, 1, &srq_events_, srq_).ok());
  Buffer& src = Make(64, 3);
  Buffer& dst = Make(64 * 4);
  for (std::uint64_t i = 0; i < 4; ++i) {
    Segment r[] = {dst.Seg(i * 64, 64)};
    ASSERT_TRUE(srq_->PostRecv(i, r).ok());
  }
  ASSERT_TRUE(srq_->ArmLimit(3).ok());
  MakeEndpoints(srq_.get());
  Connect();
  EXPECT_EQ(srq_events_.Fired(), 0);
  Segment s[] = {src.Seg(0, 8)};
  for (std::uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(active_->Post(SendOf(i, s)).ok());
  ASSERT_TRUE(p_.WaitFor([&] { return p_.recvs.size() == 3; }));
  ASSERT_TRUE(srq_events_.WaitFor([&] { return srq_events_.FiredLocked() > 0; }));
  // One-shot: the device disarmed it, so later consumption raises nothing more.
  EXPECT_EQ(srq_events_.Fired(), 1);
}

TEST_F(VerbsTransportTest, SrqResizeWhereTheDeviceCan) {
  if (!transport_->capabilities().srq) GTEST_SKIP() << "the device has no SRQ";
  ASSERT_TRUE(transport_->CreateDeviceSrq(*pd_, 8, 1, &srq_events_, srq_).ok());
  if (!transport_->capabilities().srq_resize) {
    EXPECT_EQ(srq_->Resize(64).code(), Code::kModelNotSupported);
    GTEST_SKIP() << "the device cannot resize an SRQ (kModelNotSupported checked)";
  }
  EXPECT_TRUE(srq_->Resize(64).ok());
}

TEST_F(VerbsTransportTest, GracefulDisconnectFlushesReceivesAndEndsBothSidesOnce) {
  Buffer& dst = Make(64);
  MakeEndpoints();
  Segment r[] = {dst.Seg(0, 64)};
  ASSERT_TRUE(passive_->PostRecv(200, r).ok());
  ASSERT_TRUE(passive_->PostRecv(201, r).ok());
  Connect();
  active_->Disconnect(true);
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  ASSERT_TRUE(p_.WaitFor([&] { return p_.ended_count > 0; }));
  EXPECT_EQ(a_.Get(a_.ended), ConnectionEnd::kDisconnected);
  EXPECT_EQ(p_.Get(p_.ended), ConnectionEnd::kDisconnected);
  auto recvs = p_.Get(p_.recvs);
  ASSERT_EQ(recvs.size(), 2u) << "the device did not flush the posted receives before OnEnded";
  EXPECT_EQ(recvs[0].id, 200u);
  EXPECT_EQ(recvs[0].status, WorkStatus::kFlushed);
  EXPECT_EQ(recvs[1].id, 201u);
  EXPECT_EQ(recvs[1].status, WorkStatus::kFlushed);
  passive_->Disconnect(true);  // idempotent, and no second OnEnded
  active_.reset();
  passive_.reset();
  EXPECT_EQ(a_.ended_count, 1);
  EXPECT_EQ(p_.ended_count, 1);
}

TEST_F(VerbsTransportTest, UnansweredConnectTimesOut) {
  MakeEndpoints();
  ASSERT_TRUE(active_->Connect(transport_->address(), listener_->port(), {}, 200'000).ok());
  auto request = requests_.Next();  // held, never answered, until the attempt has timed out
  ASSERT_NE(request, nullptr);
  const auto asked = std::chrono::steady_clock::now();
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  std::cout << "the 200 ms timeout was reported after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked).count()
            << " ms" << std::endl;
  EXPECT_EQ(a_.Get(a_.ended), ConnectionEnd::kTimedOut);
  EXPECT_EQ(a_.Get(a_.established), 0);
  // Not an assertion: how long the cleanup after a timed-out attempt blocks, for the report.
  auto t0 = std::chrono::steady_clock::now();
  request.reset();
  auto t1 = std::chrono::steady_clock::now();
  active_.reset();
  auto t2 = std::chrono::steady_clock::now();
  std::cout << "after the timeout: refusing the request took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count() << " ms, destroying the endpoint "
            << std::chrono::duration_cast<std::chrono::milliseconds>(t2 - t1).count() << " ms" << std::endl;
}

TEST_F(VerbsTransportTest, ListeningTwiceOnOnePortIsConnQualInUse) {
  std::unique_ptr<Listener> second;
  EXPECT_EQ(transport_->Listen(listener_->port(), &requests_, second).code(), Code::kConnQualInUse);
}

TEST_F(VerbsTransportTest, GracefulDisconnectLetsPostedSendsFinish) {
  Buffer& src = Make(64, 4);
  Buffer& dst = Make(64 * 4);
  MakeEndpoints();
  for (std::uint64_t i = 0; i < 4; ++i) {
    Segment r[] = {dst.Seg(i * 64, 64)};
    ASSERT_TRUE(passive_->PostRecv(i, r).ok());
  }
  Connect();
  Segment s[] = {src.Seg(0, 64)};
  for (std::uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(active_->Post(SendOf(i, s)).ok());
  active_->Disconnect(true);
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  auto done = a_.Get(a_.work_done);
  ASSERT_EQ(done.size(), 4u);
  for (const RecordingEvents::WorkDone& d : done) EXPECT_EQ(d.status, WorkStatus::kSuccess) << "send " << d.id;
}

// Writes whose success the consumer suppressed go unsignalled: the next signalled one reports
// them (in posting order, before itself), and the end reports those no CQE followed as done.
TEST_F(VerbsTransportTest, QuietWritesAreReportedInOrderByTheNextCompletionAndAtTheEnd) {
  Buffer& local = Make(64, 3);
  Buffer& remote = Make(64 * 8);
  MakeEndpoints();
  Connect();
  auto write = [&](std::uint64_t id, bool quiet) {
    Segment w[] = {local.Seg(0, 64)};
    Work work = Rdma(WorkKind::kRdmaWrite, id, w, remote.address((id - 1) * 64), remote.mr->remote_key());
    work.quiet_success = quiet;
    return active_->Post(work);
  };
  for (std::uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(write(id, true).ok());
  ASSERT_TRUE(write(4, false).ok());
  ASSERT_TRUE(a_.WaitFor([&] { return a_.work_done.size() >= 4; }));
  auto done = a_.Get(a_.work_done);
  ASSERT_EQ(done.size(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(done[i].id, i + 1);
    EXPECT_EQ(done[i].status, WorkStatus::kSuccess);
    EXPECT_EQ(done[i].length, 64u);
    EXPECT_EQ(0, std::memcmp(remote.bytes.data() + i * 64, local.bytes.data(), 64)) << "write " << i + 1;
  }
  // Two more, quiet: no CQE comes for them. Once the last one's bytes landed, end the connection.
  ASSERT_TRUE(write(5, true).ok());
  ASSERT_TRUE(write(6, true).ok());
  const auto until = std::chrono::steady_clock::now() + kBound;
  const volatile std::uint8_t* last = remote.bytes.data() + 5 * 64 + 63;
  while (*last != local.bytes[63] && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_EQ(*last, local.bytes[63]);
  active_->Disconnect(false);
  ASSERT_TRUE(a_.WaitFor([&] { return a_.ended_count > 0; }));
  done = a_.Get(a_.work_done);
  // Each reported once, in order, before the end: done (no CQE), or flushed if the end overtook
  // the peer's acknowledgement (the bytes landing does not say the sender saw it).
  ASSERT_EQ(done.size(), 6u);
  for (std::uint64_t i = 4; i < 6; ++i) {
    EXPECT_EQ(done[i].id, i + 1);
    EXPECT_TRUE(done[i].status == WorkStatus::kSuccess || done[i].status == WorkStatus::kFlushed) << "write " << i + 1;
  }
}

class VerbsTransportPollTest : public VerbsTransportTest {
 protected:
  VerbsTransportPollTest() { progress_ = ProgressMode::kPoll; }
};

TEST_F(VerbsTransportPollTest, ProgressOnTheConsumersThreadDrivesSetupAndData) {
  EXPECT_TRUE(transport_->capabilities().busy_poll);
  Buffer& src = Make(32, 9);
  Buffer& dst = Make(32);
  MakeEndpoints();
  Segment r[] = {dst.Seg(0, 32)};
  ASSERT_TRUE(passive_->PostRecv(1, r).ok());
  Connect();
  Segment s[] = {src.Seg(0, 20)};
  ASSERT_TRUE(active_->Post(SendOf(2, s)).ok());
  ASSERT_TRUE(p_.WaitFor([&] { return p_.recvs.size() == 1; }));
  EXPECT_EQ(p_.Get(p_.recvs)[0].info.length, 20u);
  EXPECT_EQ(0, std::memcmp(dst.bytes.data(), src.bytes.data(), 20));
}

std::size_t ThreadsOfThisProcess() {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) n += entry.is_directory();
  return n;
}

// Busy-poll hands nothing off: no progress thread, no completion channel to wait on; the
// consumer's own Progress calls (here the test's, as dat_evd_wait and dat_evd_dequeue make them)
// set up the connection and poll the CQs, so every event is reported on the consumer's thread.
TEST_F(VerbsTransportTest, BusyPollRunsNoThreadAndPollsOnTheCallersThread) {
  const std::size_t threads = ThreadsOfThisProcess();
  IaParams params;
  params.kind = TransportKind::kVerbs;
  params.device = device_;
  params.port = port_;
  params.options.progress = ProgressMode::kPoll;
  std::unique_ptr<Transport> transport;
  std::string why;
  ASSERT_TRUE(verbs::CreateVerbsTransport(params, why, transport).ok()) << why;
  std::unique_ptr<CompletionQueue> cq;
  ASSERT_TRUE(transport->CreateCompletionQueue(16, cq).ok());
  EXPECT_EQ(cq->wait_fd(), -1) << "nothing to wait on: CQs are polled";
  cq.reset();
  std::unique_ptr<ProtectionDomain> pd;
  ASSERT_TRUE(transport->CreateProtectionDomain(pd).ok());
  std::vector<std::uint8_t> src(32, 7), dst(32);
  std::unique_ptr<MemoryRegion> src_mr, dst_mr;
  ASSERT_TRUE(transport->RegisterMemory(*pd, src.data(), src.size(), MemoryAccess{true, true, true}, src_mr).ok());
  ASSERT_TRUE(transport->RegisterMemory(*pd, dst.data(), dst.size(), MemoryAccess{true, true, true}, dst_mr).ok());
  RecordingRequests requests;
  std::unique_ptr<Listener> listener;
  ASSERT_TRUE(transport->Listen(0, &requests, listener).ok());
  RecordingEvents active_events{ReceiveModel::kDevice}, passive_events{ReceiveModel::kDevice};
  std::unique_ptr<Endpoint> active, passive;
  EndpointConfig config = testing::SmallEndpointConfig();
  config.pd = pd.get();
  ASSERT_TRUE(transport->CreateEndpoint(config, &active_events, active).ok());
  ASSERT_TRUE(transport->CreateEndpoint(config, &passive_events, passive).ok());
  EXPECT_EQ(ThreadsOfThisProcess(), threads) << "a busy-poll IA starts no thread";
  auto drive = [&](const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + kBound;
    for (;;) {
      if (done()) return true;
      if (std::chrono::steady_clock::now() > until) return false;
      transport->Progress();
    }
  };
  Segment r[] = {{reinterpret_cast<std::uint64_t>(dst.data()), 32, dst_mr->local_key()}};
  ASSERT_TRUE(passive->PostRecv(1, r).ok());
  ASSERT_TRUE(active->Connect(transport->address(), listener->port(), {}, UINT64_MAX).ok());
  std::unique_ptr<PendingConnection> request;
  ASSERT_TRUE(drive([&] { return (request = requests.TryNext()) != nullptr; }));
  ASSERT_TRUE(request->Accept(*passive, {}).ok());
  ASSERT_TRUE(drive([&] { return active_events.Get(active_events.established) > 0; }));
  Segment s[] = {{reinterpret_cast<std::uint64_t>(src.data()), 20, src_mr->local_key()}};
  ASSERT_TRUE(active->Post(SendOf(2, s)).ok());
  ASSERT_TRUE(drive([&] { return passive_events.Get(passive_events.recvs).size() == 1; }));
  EXPECT_EQ(passive_events.Get(passive_events.recvs)[0].info.length, 20u);
  EXPECT_EQ(ThreadsOfThisProcess(), threads);
  active.reset();
  passive.reset();
  listener.reset();
}

// An EVD's CQ: the endpoints naming it report there and nowhere else, nobody but its consumer
// polls it (it is not watched), an armed CQ's descriptor wakes a waiter, and its consumer's polls
// report every completion on its own thread.
TEST_F(VerbsTransportTest, AnEvdsCqReportsOnlyWhatItsConsumerPolls) {
  Buffer& src = Make(32, 4);
  Buffer& dst = Make(32);
  std::unique_ptr<CompletionQueue> cq;
  ASSERT_TRUE(transport_->CreateCompletionQueue(64, cq).ok());
  EXPECT_GE(cq->capacity(), 64u);
  EndpointConfig config = Config();
  config.send_cq = cq.get();
  config.recv_cq = cq.get();
  ASSERT_TRUE(transport_->CreateEndpoint(config, &a_, active_).ok());
  ASSERT_TRUE(transport_->CreateEndpoint(config, &p_, passive_).ok());
  Segment r[] = {dst.Seg(0, 32)};
  ASSERT_TRUE(passive_->PostRecv(1, r).ok());
  Connect();
  cq->Arm();
  Segment s[] = {src.Seg(0, 20)};
  ASSERT_TRUE(active_->Post(SendOf(2, s)).ok());
  if (cq->wait_fd() >= 0) {
    pollfd fd{cq->wait_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&fd, 1, static_cast<int>(std::chrono::milliseconds(kBound).count())), 1) << "no notification";
    cq->TakeNotifications();
  }
  std::uint32_t polled = 0;
  const auto until = std::chrono::steady_clock::now() + kBound;
  while (polled < 2 && std::chrono::steady_clock::now() < until) polled += cq->Poll(16);
  EXPECT_EQ(polled, 2u) << "the receive and the send, each once, by this thread's polls";
  ASSERT_EQ(p_.Get(p_.recvs).size(), 1u);
  EXPECT_EQ(p_.Get(p_.recvs)[0].id, 1u);
  EXPECT_EQ(p_.Get(p_.recvs)[0].info.length, 20u);
  ASSERT_EQ(a_.Get(a_.work_done).size(), 1u);
  EXPECT_EQ(a_.Get(a_.work_done)[0].id, 2u);
  active_.reset();
  passive_.reset();
}

// Two IAs on one device in one process share the device's async event fd (librdmacm opens a
// device once per process). Whichever IA reads an event must hand it to the IA that owns the SRQ
// it names: here IA A's progress reads B's limit event first (B's is queued in the kernel before
// A's exists, and only A runs), yet B's fires once B runs. Busy-poll IAs, so that nothing runs
// but what the test drives.
TEST(VerbsAsyncEventsTest, TwoIasOnOneDeviceEachGetTheirOwnSrqLimitEvent) {
  IaParams params;
  if (!RequestedDevice(params)) GTEST_SKIP() << "SOFTDAT_VERBS_DEVICE is not set (e.g. \"rxe0 1\")";
  params.options.progress = ProgressMode::kPoll;

  struct Side {
    std::unique_ptr<Transport> transport;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<DeviceSrq> srq;
    std::unique_ptr<Listener> listener;
    RecordingRequests requests;
    RecordingSrqEvents srq_events;
    RecordingEvents active_events{ReceiveModel::kDevice}, passive_events{ReceiveModel::kDevice};
    std::unique_ptr<Endpoint> active, passive;
    Buffer src{64, 5}, dst{64 * 4};
  };
  Side a, b;
  for (Side* side : {&a, &b}) {
    ASSERT_NO_FATAL_FAILURE(OpenRequestedDevice(params, side->transport));
    if (!side->transport->capabilities().srq_limit) GTEST_SKIP() << "the device has no SRQ limit event";
    ASSERT_TRUE(side->transport->CreateProtectionDomain(side->pd).ok());
    for (Buffer* buffer : {&side->src, &side->dst})
      ASSERT_TRUE(side->transport->RegisterMemory(*side->pd, buffer->bytes.data(), buffer->bytes.size(),
                                                  MemoryAccess{true, true, true}, buffer->mr).ok());
    ASSERT_TRUE(side->transport->CreateDeviceSrq(*side->pd, 8, 1, &side->srq_events, side->srq).ok());
    for (std::uint64_t i = 0; i < 4; ++i) {
      Segment r[] = {side->dst.Seg(i * 64, 64)};
      ASSERT_TRUE(side->srq->PostRecv(i, r).ok());
    }
    ASSERT_TRUE(side->srq->ArmLimit(3).ok());
    ASSERT_TRUE(side->transport->Listen(0, &side->requests, side->listener).ok());
    EndpointConfig config = testing::SmallEndpointConfig();
    config.pd = side->pd.get();
    ASSERT_TRUE(side->transport->CreateEndpoint(config, &side->active_events, side->active).ok());
    config.srq = side->srq.get();
    ASSERT_TRUE(side->transport->CreateEndpoint(config, &side->passive_events, side->passive).ok());
  }
  // Drives the given IAs' progress until `done` holds, bounded.
  auto drive = [](std::initializer_list<Side*> sides, const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + kBound;
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      for (Side* side : sides) side->transport->Progress();
    }
    return true;
  };
  for (Side* side : {&a, &b}) {
    ASSERT_TRUE(side->active->Connect(side->transport->address(), side->listener->port(), {}, UINT64_MAX).ok());
    std::unique_ptr<PendingConnection> request;
    ASSERT_TRUE(drive({side}, [&] { return (request = side->requests.TryNext()) != nullptr; }));
    ASSERT_TRUE(request->Accept(*side->passive, {}).ok());
    ASSERT_TRUE(drive({side}, [&] {
      return side->active_events.Get(side->active_events.established) > 0 &&
             side->passive_events.Get(side->passive_events.established) > 0;
    }));
  }
  const int async_fd = static_cast<verbs::VerbsTransport&>(*a.transport).device().context->async_fd;
  ASSERT_EQ(async_fd, static_cast<verbs::VerbsTransport&>(*b.transport).device().context->async_fd)
      << "one device context per process, one async fd";
  // Nothing else pending on the fd (a COMM_EST of the setup, say), so that readable means B's.
  pollfd pending{async_fd, POLLIN, 0};
  ASSERT_TRUE(drive({&a, &b}, [&] { return poll(&pending, 1, 0) == 0; }));
  // B's SRQ drops below its limit; nothing of B's runs, so its event waits in the kernel.
  Segment s_b[] = {b.src.Seg(0, 8)};
  for (std::uint64_t i = 0; i < 2; ++i) ASSERT_TRUE(b.active->Post(SendOf(i, s_b)).ok());
  ASSERT_EQ(poll(&pending, 1, static_cast<int>(std::chrono::milliseconds(kBound).count())), 1)
      << "B's limit event never reached the device's async fd";
  // Then A's; only A runs, and reads both (the kernel queues them in order).
  Segment s_a[] = {a.src.Seg(0, 8)};
  for (std::uint64_t i = 0; i < 2; ++i) ASSERT_TRUE(a.active->Post(SendOf(i, s_a)).ok());
  ASSERT_TRUE(drive({&a}, [&] { return a.srq_events.Fired() > 0; })) << "A's own limit event never came";
  EXPECT_EQ(b.srq_events.Fired(), 0);
  // B's event was read by A: it must reach B once B's progress runs.
  EXPECT_TRUE(drive({&b}, [&] { return b.srq_events.Fired() > 0; })) << "B's limit event was lost to A";
  EXPECT_EQ(a.srq_events.Fired(), 1);
  EXPECT_EQ(b.srq_events.Fired(), 1);
  for (Side* side : {&a, &b}) {
    side->active.reset();
    side->passive.reset();
    side->srq.reset();
    side->listener.reset();
  }
}

}  // namespace
}  // namespace softdat::transport
