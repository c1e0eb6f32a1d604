// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// softdat-tcp's UD endpoints over real loopback UDP sockets, through the transport interface:
// resolution (accepted, rejected, refused, timed out, repeated until a late listener answers, a
// lost answer given again), datagrams (the GRH ahead of the bytes, the source in the completion,
// dropped without a buffer, too long for one), and every malformed or misdirected message
// dropped while the endpoint keeps working. Every wait is bounded.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/ud_endpoint.h"
#include "transport/tcp/ud_wire.h"
#include "transport/test_recorder.h"

namespace softdat::transport::tcp {
namespace {

using testing::Bytes;
using testing::kBound;
using testing::RecordingEvents;
using testing::RecordingRequests;
using testing::SegmentOf;
using namespace std::chrono_literals;

EndpointConfig DatagramConfig() {
  EndpointConfig config = testing::SmallEndpointConfig();
  config.datagram = true;
  config.max_rdma_read_in = config.max_rdma_read_out = 0;
  return config;
}

// A UDP socket of the test's own, for messages written by hand.
class RawUdp {
 public:
  RawUdp() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<const sockaddr*>(&at), sizeof at);
    timeval wait{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  }
  ~RawUdp() { ::close(fd_); }
  void Send(std::uint16_t port, const std::vector<std::uint8_t>& bytes) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(port);
    ASSERT_EQ(::sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next message (within 10 s) and the port it came from; empty on timeout.
  std::vector<std::uint8_t> Receive(std::uint16_t& from_port) {
    std::vector<std::uint8_t> bytes(ud::kMaxMessage);
    sockaddr_in from{};
    socklen_t length = sizeof from;
    const ssize_t n = ::recvfrom(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&from), &length);
    bytes.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
    from_port = ntohs(from.sin_port);
    return bytes;
  }

 private:
  int fd_ = -1;
};

// A whole message: header, payload, CRC.
std::vector<std::uint8_t> Message(const ud::Header& header, const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> bytes(ud::kHeaderSize + payload.size() + ud::kCrcSize);
  ud::Header h = header;
  h.length = static_cast<std::uint16_t>(payload.size());
  ud::EncodeHeader(h, bytes.data());
  if (!payload.empty()) std::memcpy(bytes.data() + ud::kHeaderSize, payload.data(), payload.size());
  ud::Seal(bytes.data(), ud::kHeaderSize + payload.size());
  return bytes;
}

class UdTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    IaParams params;
    params.address = "127.0.0.1";
    std::string why;
    ASSERT_TRUE(CreateTcpTransport(params, why, transport_).ok()) << why;
    ASSERT_TRUE(transport_->capabilities().datagrams);
    ASSERT_EQ(transport_->capabilities().max_datagram, ud::kMaxPayload);
    ASSERT_TRUE(transport_->ListenDatagram(0, &requests_, listener_).ok());
    ASSERT_TRUE(transport_->CreateEndpoint(DatagramConfig(), &client_events_, client_).ok());
    ASSERT_TRUE(transport_->CreateEndpoint(DatagramConfig(), &server_events_, server_).ok());
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    listener_.reset();
    transport_.reset();
  }

  Status Resolve(std::uint16_t port, std::uint64_t request, std::span<const std::uint8_t> private_data = {},
                 std::uint64_t timeout_us = UINT64_MAX) {
    return client_->Resolve(transport_->address(), port, private_data, timeout_us, request);
  }
  // The client resolves the server endpoint through the listener; returns the server's handle.
  std::shared_ptr<AddressHandle> ResolveServer() {
    const std::vector<std::uint8_t> hello = {1, 2, 3, 4};
    EXPECT_TRUE(Resolve(listener_->port(), 7, hello).ok());
    std::unique_ptr<PendingConnection> pending = requests_.Next();
    if (pending == nullptr) return nullptr;
    EXPECT_TRUE(pending->datagram());
    EXPECT_EQ(std::vector<std::uint8_t>(pending->private_data().begin(), pending->private_data().end()), hello);
    std::unique_ptr<AddressHandle> requester;
    const std::vector<std::uint8_t> welcome = {9, 8};
    EXPECT_TRUE(pending->AcceptDatagram(*server_, welcome, requester).ok());
    EXPECT_NE(requester, nullptr);
    if (requester != nullptr) {
      EXPECT_EQ(requester->port(), ntohs(client_->local_address().sin_port));
      EXPECT_EQ(requester->qpn(), requester->port());
    }
    client_requester_ = std::move(requester);
    if (!client_events_.WaitFor([&] { return !client_events_.resolutions.empty(); })) return nullptr;
    const auto& resolution = client_events_.resolutions[0];
    EXPECT_EQ(resolution.request, 7u);
    EXPECT_FALSE(resolution.failed.has_value());
    EXPECT_EQ(resolution.private_data, welcome);
    return resolution.peer;
  }
  Work Datagram(std::uint64_t id, std::vector<Segment>& local, const AddressHandle* to) {
    Work work;
    work.id = id;
    work.kind = WorkKind::kSendDatagram;
    work.local = local;
    for (const Segment& s : local) work.length += s.length;
    work.destination = to;
    return work;
  }

  std::unique_ptr<Transport> transport_;
  RecordingRequests requests_;
  std::unique_ptr<Listener> listener_;
  RecordingEvents client_events_, server_events_;
  std::unique_ptr<Endpoint> client_, server_;
  std::unique_ptr<AddressHandle> client_requester_;  // the server side's handle of the client
};

TEST_F(UdTransportTest, ResolutionAnswersWithTheAcceptingEndpointBothWays) {
  const std::shared_ptr<AddressHandle> server = ResolveServer();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->port(), ntohs(server_->local_address().sin_port)) << "the accepting endpoint, not the listener";
  EXPECT_NE(server->port(), listener_->port());
  EXPECT_EQ(server->address(), htonl(INADDR_LOOPBACK));
}

TEST_F(UdTransportTest, ADatagramArrivesBehindAGrhWithItsSourceAndTheReplyGoesBack) {
  const std::shared_ptr<AddressHandle> server = ResolveServer();
  ASSERT_NE(server, nullptr);
  std::vector<std::uint8_t> data = Bytes(ud::kMaxPayload, 4), sink(ud::kGrhSize + ud::kMaxPayload + 10, 0xEE);
  std::vector<Segment> gather = {SegmentOf(data, 0, 1000), SegmentOf(data, 1000)};
  std::vector<Segment> scatter = {SegmentOf(sink, 0, 100), SegmentOf(sink, 100)};
  server_events_.AddBuffer(scatter);
  ASSERT_TRUE(client_->Post(Datagram(1, gather, server.get())).ok());
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.recvs.size() == 1; }));
  const auto& recv = server_events_.recvs[0];
  EXPECT_EQ(recv.status, WorkStatus::kSuccess);
  EXPECT_EQ(recv.info.length, ud::kGrhSize + data.size());
  EXPECT_EQ(recv.info.extension.source_address, htonl(INADDR_LOOPBACK));
  EXPECT_EQ(recv.info.extension.source_qpn, ntohs(client_->local_address().sin_port));
  EXPECT_EQ(sink[0], 0x60) << "GRH: IP version 6";
  EXPECT_EQ(sink[6], 0x1B) << "GRH: next header";
  const std::uint8_t mapped[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 1};
  EXPECT_EQ(std::memcmp(sink.data() + 8, mapped, 16), 0) << "source GID ::ffff:127.0.0.1";
  EXPECT_EQ(std::memcmp(sink.data() + ud::kGrhSize, data.data(), data.size()), 0);
  EXPECT_EQ(sink[ud::kGrhSize + data.size()], 0xEE) << "nothing past the datagram";

  // And back, to the handle the server side got for the client.
  std::vector<std::uint8_t> reply = {5, 6, 7}, reply_sink(64);
  std::vector<Segment> reply_gather = {SegmentOf(reply)}, reply_scatter = {SegmentOf(reply_sink)};
  client_events_.AddBuffer(reply_scatter);
  ASSERT_TRUE(server_->Post(Datagram(2, reply_gather, client_requester_.get())).ok());
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.recvs.size() == 1; }));
  EXPECT_EQ(client_events_.recvs[0].info.length, ud::kGrhSize + 3);
  EXPECT_EQ(std::memcmp(reply_sink.data() + ud::kGrhSize, reply.data(), 3), 0);
}

TEST_F(UdTransportTest, ADatagramWithoutABufferIsDroppedAndOneTooLongFailsItsBuffer) {
  const std::shared_ptr<AddressHandle> server = ResolveServer();
  ASSERT_NE(server, nullptr);
  std::vector<std::uint8_t> data = Bytes(100, 1);
  std::vector<Segment> gather = {SegmentOf(data)};
  ASSERT_TRUE(client_->Post(Datagram(1, gather, server.get())).ok());
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.not_ready == 1; }));
  std::vector<std::uint8_t> small(ud::kGrhSize + 50), big(ud::kGrhSize + 100, 0);
  std::vector<Segment> small_scatter = {SegmentOf(small)}, big_scatter = {SegmentOf(big)};
  server_events_.AddBuffer(small_scatter);
  server_events_.AddBuffer(big_scatter);
  server_->RecvBuffersAvailable();  // nothing was held: the first datagram is gone
  ASSERT_TRUE(client_->Post(Datagram(2, gather, server.get())).ok());
  ASSERT_TRUE(client_->Post(Datagram(3, gather, server.get())).ok());
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.recvs.size() == 2; }));
  EXPECT_EQ(server_events_.recvs[0].status, WorkStatus::kLocalLength);
  EXPECT_EQ(server_events_.recvs[1].status, WorkStatus::kSuccess);
  EXPECT_EQ(server_events_.acquired_msns, (std::vector<std::uint32_t>{1, 1, 2}))
      << "a dropped datagram takes no number";
  EXPECT_EQ(std::memcmp(big.data() + ud::kGrhSize, data.data(), data.size()), 0);
}

TEST_F(UdTransportTest, ARejectCarriesPrivateDataAndADroppedRequestIsRefused) {
  const std::vector<std::uint8_t> no = {'n', 'o'};
  ASSERT_TRUE(Resolve(listener_->port(), 1).ok());
  std::unique_ptr<PendingConnection> pending = requests_.Next();
  ASSERT_NE(pending, nullptr);
  pending->Reject(no);
  ASSERT_TRUE(Resolve(listener_->port(), 2).ok());
  pending = requests_.Next();
  ASSERT_NE(pending, nullptr);
  pending.reset();  // nobody answered
  ASSERT_TRUE(client_events_.WaitFor([&] { return client_events_.resolutions.size() == 2; }));
  EXPECT_EQ(client_events_.resolutions[0].request, 1u);
  EXPECT_EQ(client_events_.resolutions[0].failed, ConnectionEnd::kPeerRejected);
  EXPECT_EQ(client_events_.resolutions[0].private_data, no);
  EXPECT_EQ(client_events_.resolutions[1].request, 2u);
  EXPECT_EQ(client_events_.resolutions[1].failed, ConnectionEnd::kNonPeerRejected);
}

TEST_F(UdTransportTest, NobodyListeningTimesOut) {
  std::unique_ptr<Listener> elsewhere;
  ASSERT_TRUE(transport_->ListenDatagram(0, &requests_, elsewhere).ok());
  const std::uint16_t port = elsewhere->port();
  elsewhere.reset();
  ASSERT_TRUE(Resolve(port, 3, {}, 300'000).ok());
  ASSERT_TRUE(client_events_.WaitFor([&] { return !client_events_.resolutions.empty(); }));
  EXPECT_EQ(client_events_.resolutions[0].failed, ConnectionEnd::kTimedOut);
}

// The requester repeats its request until answered: a listener that starts late still gets it.
TEST_F(UdTransportTest, ARequestRepeatedReachesAListenerThatStartsLate) {
  std::unique_ptr<Listener> late;
  ASSERT_TRUE(transport_->ListenDatagram(0, &requests_, late).ok());
  const std::uint16_t port = late->port();
  late.reset();
  ASSERT_TRUE(Resolve(port, 4).ok());
  std::this_thread::sleep_for(300ms);  // the first request is lost
  ASSERT_TRUE(transport_->ListenDatagram(port, &requests_, late).ok());
  std::unique_ptr<PendingConnection> pending = requests_.Next();
  ASSERT_NE(pending, nullptr);
  std::unique_ptr<AddressHandle> requester;
  ASSERT_TRUE(pending->AcceptDatagram(*server_, {}, requester).ok());
  ASSERT_TRUE(client_events_.WaitFor([&] { return !client_events_.resolutions.empty(); }));
  EXPECT_FALSE(client_events_.resolutions[0].failed.has_value());
  EXPECT_EQ(requests_.TryNext(), nullptr) << "repeats of a request are one request";
}

// An answer lost on the way: the requester's repeat gets the same answer again, from the same
// endpoint.
TEST_F(UdTransportTest, ARepeatedRequestAfterTheAnswerGetsTheSameAnswerAgain) {
  RawUdp raw;
  const std::vector<std::uint8_t> request =
      Message(ud::Header{ud::Type::kResolveRequest, 0, 0, 0x1234, 99}, {'h', 'i'});
  raw.Send(listener_->port(), request);
  std::unique_ptr<PendingConnection> pending = requests_.Next();
  ASSERT_NE(pending, nullptr);
  std::unique_ptr<AddressHandle> requester;
  const std::vector<std::uint8_t> welcome = {'o', 'k'};
  ASSERT_TRUE(pending->AcceptDatagram(*server_, welcome, requester).ok());
  for (int round = 0; round < 2; ++round) {
    std::uint16_t from = 0;
    const std::vector<std::uint8_t> answer = raw.Receive(from);
    ud::Header header;
    std::span<const std::uint8_t> payload;
    ASSERT_EQ(ud::Decode(answer, header, payload), ud::DecodeError::kNone);
    EXPECT_EQ(header.type, ud::Type::kResolveReply);
    EXPECT_EQ(header.destination_key, 0x1234u);
    EXPECT_EQ(header.request, 99u);
    EXPECT_NE(header.source_key, 0u);
    EXPECT_EQ(std::vector<std::uint8_t>(payload.begin(), payload.end()), welcome);
    EXPECT_EQ(from, ntohs(server_->local_address().sin_port));
    raw.Send(listener_->port(), request);  // as if that answer were lost
  }
  EXPECT_EQ(requests_.TryNext(), nullptr);
}

// Loss, corruption and misdelivery: whatever fails a check is dropped, and the endpoint goes on.
TEST_F(UdTransportTest, MalformedAndMisdirectedMessagesAreDroppedAndTheEndpointGoesOn) {
  const std::shared_ptr<AddressHandle> server = ResolveServer();
  ASSERT_NE(server, nullptr);
  const std::uint32_t key = static_cast<const UdAddressHandle&>(*server).key();
  const std::uint16_t port = server->port();
  std::vector<std::uint8_t> sink(ud::kGrhSize + 64);
  std::vector<Segment> scatter = {SegmentOf(sink)};
  server_events_.AddBuffer(scatter);
  RawUdp raw;
  const std::vector<std::uint8_t> good = Message(ud::Header{ud::Type::kData, 0, key, 0x55, 0}, {1, 2, 3});
  std::vector<std::vector<std::uint8_t>> bad;
  bad.push_back(Message(ud::Header{ud::Type::kData, 0, key + 1, 0x55, 0}, {1}));  // another endpoint's
  std::vector<std::uint8_t> corrupt = good;
  corrupt[ud::kHeaderSize] ^= 1;  // the CRC no longer matches
  bad.push_back(corrupt);
  std::vector<std::uint8_t> magic = good;
  magic[0] = 'X';
  bad.push_back(magic);
  std::vector<std::uint8_t> version = good;
  version[4] = 2;
  bad.push_back(version);
  std::vector<std::uint8_t> type = Message(ud::Header{static_cast<ud::Type>(9), 0, key, 0x55, 0}, {});
  bad.push_back(type);
  bad.push_back(std::vector<std::uint8_t>(good.begin(), good.end() - 1));  // truncated
  bad.push_back({});                                                       // empty
  bad.push_back(Message(ud::Header{ud::Type::kResolveReply, 0, key, 0x55, 12345}, {}));  // answers nothing
  for (const auto& bytes : bad) raw.Send(port, bytes);
  raw.Send(port, good);
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.recvs.size() == 1; }));
  EXPECT_EQ(server_events_.recvs[0].info.length, ud::kGrhSize + 3);
  EXPECT_EQ(server_events_.acquired_msns, (std::vector<std::uint32_t>{1})) << "only the good one took a buffer";
  EXPECT_EQ(server_events_.resolutions.size(), 0u);
}

TEST_F(UdTransportTest, ListeningTwiceOnOnePortIsConnQualInUse) {
  std::unique_ptr<Listener> second;
  EXPECT_EQ(transport_->ListenDatagram(listener_->port(), &requests_, second).code(), Code::kConnQualInUse);
}

TEST_F(UdTransportTest, DisconnectEndsTheEndpointOnceAndItTakesNoMore) {
  const std::shared_ptr<AddressHandle> server = ResolveServer();
  ASSERT_NE(server, nullptr);
  server_->Disconnect(true);
  ASSERT_TRUE(server_events_.WaitFor([&] { return server_events_.ended.has_value(); }));
  EXPECT_EQ(*server_events_.ended, ConnectionEnd::kDisconnected);
  std::vector<std::uint8_t> data = {1};
  std::vector<Segment> gather = {SegmentOf(data)};
  ASSERT_TRUE(client_->Post(Datagram(1, gather, server.get())).ok());
  server_->Disconnect(true);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server_events_.Get(server_events_.ended_count), 1);
  EXPECT_EQ(server_events_.Get(server_events_.acquired_msns).size(), 0u);
}

}  // namespace
}  // namespace softdat::transport::tcp
