// A hostile or broken peer against the TCP transport: a raw socket that speaks the wire format
// by hand (wire.h) and then misbehaves — junk instead of an MPA Request, a bad CRC on a small
// and on a large (directly placed) FPDU, an MSN outside the window, a guessed STag, a close in
// the middle of an FPDU. Each must end only that connection, with a Terminate where one is due,
// and change no memory outside the addressed buffer; the transport keeps serving others.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "transport/tcp/crc32c.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/test_recorder.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {
namespace {

using testing::Bytes;
using testing::kBound;
using testing::RecordingEvents;
using testing::RecordingRequests;
using testing::SegmentOf;

// The peer, written by hand from the RFCs.
class RawPeer {
 public:
  ~RawPeer() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool Connect(const sockaddr_in& address, std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to = address;
    to.sin_port = htons(port);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  }
  void SendBytes(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  void SendMpaRequest(bool peer_to_peer = true) {
    wire::MpaFrame request;
    request.crc = true;
    request.enhanced = true;
    request.peer_to_peer = peer_to_peer;
    request.rtr_write = peer_to_peer;
    request.ird = request.ord = 4;
    std::vector<std::uint8_t> bytes(wire::kMpaFrameHeaderSize + wire::kMpaEnhancedBlockSize);
    wire::EncodeMpaFrame(request, bytes.data());
    SendBytes(bytes);
  }
  // Reads `n` bytes within the bound; false on timeout or close.
  bool Read(std::size_t n, std::vector<std::uint8_t>& out) {
    out.resize(n);
    std::size_t got = 0;
    while (got < n) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1) return false;
      const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
    return true;
  }
  bool ReadMpaReply() {
    std::vector<std::uint8_t> header;
    if (!Read(wire::kMpaFrameHeaderSize, header)) return false;
    wire::MpaFrame reply;
    std::uint16_t pd_length = 0;
    const char* why = nullptr;
    if (!wire::DecodeMpaHeader(header.data(), true, reply, pd_length, why)) return false;
    std::vector<std::uint8_t> rest;
    return Read(pd_length, rest) && !reply.rejected;
  }
  // One FPDU: header, payload, pad and CRC (deliberately wrong when `good_crc` is false).
  static std::vector<std::uint8_t> Fpdu(wire::FpduHeader header, const std::vector<std::uint8_t>& payload,
                                        bool good_crc = true) {
    const std::size_t header_size = wire::HeaderSize(header.opcode);
    header.ulpdu_length = static_cast<std::uint16_t>(header_size - wire::kLengthFieldSize + payload.size());
    const std::size_t covered = wire::kLengthFieldSize + header.ulpdu_length + wire::PadSize(header.ulpdu_length);
    std::vector<std::uint8_t> bytes(covered + wire::kCrcSize, 0);
    wire::EncodeHeader(header, bytes.data());
    if (!payload.empty()) std::memcpy(bytes.data() + header_size, payload.data(), payload.size());
    std::uint32_t crc = Crc32c(bytes.data(), covered);
    if (!good_crc) crc ^= 0x1;
    for (int i = 0; i < 4; ++i) bytes[covered + i] = static_cast<std::uint8_t>(crc >> (8 * i));
    return bytes;
  }
  void SendRtr() {
    wire::FpduHeader rtr;
    rtr.opcode = wire::Opcode::kRdmaWrite;
    rtr.last = true;
    SendBytes(Fpdu(rtr, {}));
  }
  // Reads one FPDU's header; true if it is a Terminate.
  bool ReadTerminate(wire::TerminateCode& code) {
    std::vector<std::uint8_t> head;
    if (!Read(wire::kUntaggedHeaderSize + 4, head)) return false;
    wire::FpduHeader header;
    wire::DecodeHeader(head.data(), header);
    if (header.opcode != wire::Opcode::kTerminate) return false;
    code = wire::DecodeTerminateControl(head.data() + wire::kUntaggedHeaderSize);
    return true;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

wire::FpduHeader SendHeader(std::uint32_t msn) {
  wire::FpduHeader header;
  header.opcode = wire::Opcode::kSend;
  header.last = true;
  header.queue = wire::kQueueSend;
  header.msn = msn;
  return header;
}

EndpointConfig Config() {
  EndpointConfig config;
  config.max_send_work = 16;
  config.max_recv_work = 16;
  config.max_send_segments = 4;
  config.max_recv_segments = 4;
  config.max_rdma_read_in = 4;
  config.max_rdma_read_out = 4;
  return config;
}

class HostilePeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    IaParams params;
    params.address = "127.0.0.1";
    std::string why;
    ASSERT_TRUE(CreateTcpTransport(params, why, transport_).ok()) << why;
    ASSERT_TRUE(transport_->Listen(0, &requests_, listener_).ok());
    ASSERT_TRUE(transport_->CreateEndpoint(Config(), &events_, server_).ok());
  }
  void TearDown() override {
    server_.reset();
    pending_.reset();
    listener_.reset();
    transport_.reset();
  }
  // The raw peer connects and is accepted; the server endpoint is established.
  void Establish() {
    ASSERT_TRUE(peer_.Connect(transport_->address(), listener_->port()));
    peer_.SendMpaRequest();
    pending_ = requests_.Next();
    ASSERT_NE(pending_, nullptr);
    ASSERT_TRUE(pending_->Accept(*server_, {}).ok());
    ASSERT_TRUE(peer_.ReadMpaReply());
    peer_.SendRtr();
    ASSERT_TRUE(events_.WaitFor([&] { return events_.established; }));
  }
  void ExpectBrokenWithTerminate(wire::TermLayer layer, std::uint8_t etype, std::uint8_t code) {
    ASSERT_TRUE(events_.WaitFor([&] { return events_.ended.has_value(); }));
    EXPECT_EQ(*events_.ended, ConnectionEnd::kBroken);
    wire::TerminateCode got;
    ASSERT_TRUE(peer_.ReadTerminate(got)) << "a Terminate is due before the close";
    EXPECT_EQ(got.layer, layer);
    EXPECT_EQ(got.etype, etype);
    EXPECT_EQ(got.code, code);
  }
  // The transport still serves a well-behaved peer after the hostile one.
  void ExpectStillServing() {
    RawPeer next;
    ASSERT_TRUE(next.Connect(transport_->address(), listener_->port()));
    next.SendMpaRequest();
    EXPECT_NE(requests_.Next(), nullptr);
  }

  std::unique_ptr<Transport> transport_;
  RecordingRequests requests_;
  std::unique_ptr<Listener> listener_;
  RecordingEvents events_;
  std::unique_ptr<Endpoint> server_;
  std::unique_ptr<PendingConnection> pending_;
  RawPeer peer_;
};

// An initiator without RFC 6581 P2P (Linux siw's default) sends no ready-to-receive FPDU; the
// responder must then receive one FPDU before it sends any (RFC 5044 §7.1.2, rule 4). siw drops
// a connection whose MPA Reply arrives with FPDU bytes behind it, which a Send posted right
// after ESTABLISHED used to cause. The Send waits for the initiator's first FPDU, then goes.
TEST_F(HostilePeerTest, ResponderWithoutP2pSendsNoFpduBeforeTheInitiatorsFirst) {
  ASSERT_TRUE(peer_.Connect(transport_->address(), listener_->port()));
  peer_.SendMpaRequest(/*peer_to_peer=*/false);
  pending_ = requests_.Next();
  ASSERT_NE(pending_, nullptr);
  std::vector<std::uint8_t> inbox(64);
  Segment scatter[] = {SegmentOf(inbox)};
  events_.AddBuffer(scatter);
  ASSERT_TRUE(pending_->Accept(*server_, {}).ok());
  ASSERT_TRUE(peer_.ReadMpaReply());
  ASSERT_TRUE(events_.WaitFor([&] { return events_.established; })) << "without P2P: established at the Reply";
  std::vector<std::uint8_t> data = Bytes(32, 5);
  Segment gather[] = {SegmentOf(data)};
  Work send;
  send.id = 1;
  send.local = gather;
  send.length = data.size();
  ASSERT_TRUE(server_->Post(send).ok());
  pollfd quiet{peer_.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&quiet, 1, 300), 0) << "an FPDU before the initiator sent one";
  peer_.SendBytes(RawPeer::Fpdu(SendHeader(1), Bytes(16, 9)));
  std::vector<std::uint8_t> fpdu;
  ASSERT_TRUE(peer_.Read(wire::kUntaggedHeaderSize, fpdu)) << "the held Send never came";
  wire::FpduHeader header;
  wire::DecodeHeader(fpdu.data(), header);
  EXPECT_EQ(header.opcode, wire::Opcode::kSend);
  EXPECT_EQ(header.msn, 1u);
  ASSERT_TRUE(events_.WaitFor([&] { return events_.work_done.size() == 1 && events_.recvs.size() == 1; }));
  EXPECT_EQ(events_.Get(events_.work_done)[0].status, WorkStatus::kSuccess);
}

TEST_F(HostilePeerTest, JunkInsteadOfAnMpaRequestIsDroppedWithoutARequest) {
  ASSERT_TRUE(peer_.Connect(transport_->address(), listener_->port()));
  peer_.SendBytes(std::vector<std::uint8_t>(64, 0x5A));
  std::vector<std::uint8_t> ignored;
  EXPECT_FALSE(peer_.Read(1, ignored)) << "the listener closes without a Reply";
  ExpectStillServing();
}

// A receive buffer belongs to the provider until its completion, so a Send may be checked while
// it is copied there: a bad CRC terminates the connection, the message never completes, and no
// byte outside its buffer changes.
TEST_F(HostilePeerTest, BadCrcTerminatesAndTheMessageNeverCompletes) {
  std::vector<std::uint8_t> memory(3 * 256, 0xEE);
  std::vector<Segment> scatter = {SegmentOf(memory, 256, 256)};
  events_.AddBuffer(scatter);
  Establish();
  peer_.SendBytes(RawPeer::Fpdu(SendHeader(1), std::vector<std::uint8_t>(100, 1), false));
  ExpectBrokenWithTerminate(wire::TermLayer::kLlp, 0, 0x02);
  EXPECT_TRUE(events_.recvs.empty()) << "no completion for a message that failed its CRC";
  EXPECT_EQ(std::vector<std::uint8_t>(memory.begin(), memory.begin() + 256), std::vector<std::uint8_t>(256, 0xEE));
  EXPECT_EQ(std::vector<std::uint8_t>(memory.begin() + 512, memory.end()), std::vector<std::uint8_t>(256, 0xEE));
  ExpectStillServing();
}

TEST_F(HostilePeerTest, BadCrcOnALargeFpduNeverCompletesAndTouchesNothingElse) {
  std::vector<std::uint8_t> memory(3 * 64 * 1024, 0xEE);
  std::vector<Segment> scatter = {SegmentOf(memory, 64 * 1024, 64 * 1024)};
  events_.AddBuffer(scatter);
  Establish();
  const std::vector<std::uint8_t> frame = RawPeer::Fpdu(SendHeader(1), Bytes(48 * 1024, 3), false);
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin(), frame.begin() + 100));
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin() + 100, frame.end()));
  ExpectBrokenWithTerminate(wire::TermLayer::kLlp, 0, 0x02);
  EXPECT_TRUE(events_.recvs.empty());
  EXPECT_EQ(std::vector<std::uint8_t>(memory.begin(), memory.begin() + 64 * 1024),
            std::vector<std::uint8_t>(64 * 1024, 0xEE));
  EXPECT_EQ(std::vector<std::uint8_t>(memory.begin() + 128 * 1024, memory.end()),
            std::vector<std::uint8_t>(64 * 1024, 0xEE));
}

// An RDMA Write lands where the consumer may be watching (dtest -W spins on such a buffer): it is
// checked whole before any of it is placed, so a bad CRC leaves the target as it was.
TEST_F(HostilePeerTest, BadCrcOnAnRdmaWriteTouchesNothing) {
  std::vector<std::uint8_t> region(64 * 1024, 0);
  events_.Expose(region, 0x100, true);
  Establish();
  wire::FpduHeader write;
  write.opcode = wire::Opcode::kRdmaWrite;
  write.last = true;
  write.stag = 0x100;
  write.tagged_offset = reinterpret_cast<std::uint64_t>(region.data());
  const std::vector<std::uint8_t> frame = RawPeer::Fpdu(write, Bytes(48 * 1024, 9), false);
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin(), frame.begin() + 100));
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin() + 100, frame.end()));
  ExpectBrokenWithTerminate(wire::TermLayer::kLlp, 0, 0x02);
  EXPECT_EQ(region, std::vector<std::uint8_t>(64 * 1024, 0));
}

// Without CRC a large FPDU is placed as it arrives: its buffer is taken when the header is in,
// the payload lands in place, and nothing around the message changes.
class NoCrcPeerTest : public HostilePeerTest {
 protected:
  void SetUp() override {
    IaParams params;
    params.address = "127.0.0.1";
    params.options.mpa_crc = false;
    std::string why;
    ASSERT_TRUE(CreateTcpTransport(params, why, transport_).ok()) << why;
    ASSERT_TRUE(transport_->Listen(0, &requests_, listener_).ok());
    ASSERT_TRUE(transport_->CreateEndpoint(Config(), &events_, server_).ok());
  }
};

TEST_F(NoCrcPeerTest, LargeFpduIsPlacedAsItArrives) {
  std::vector<std::uint8_t> memory(3 * 64 * 1024, 0xEE);
  std::vector<Segment> scatter = {SegmentOf(memory, 64 * 1024, 20 * 1024), SegmentOf(memory, 84 * 1024, 44 * 1024)};
  events_.AddBuffer(scatter);
  ASSERT_TRUE(peer_.Connect(transport_->address(), listener_->port()));
  wire::MpaFrame request;
  request.enhanced = true;
  request.peer_to_peer = true;
  request.rtr_write = true;
  request.ird = request.ord = 4;
  std::vector<std::uint8_t> bytes(wire::kMpaFrameHeaderSize + wire::kMpaEnhancedBlockSize);
  wire::EncodeMpaFrame(request, bytes.data());
  peer_.SendBytes(bytes);
  pending_ = requests_.Next();
  ASSERT_NE(pending_, nullptr);
  ASSERT_TRUE(pending_->Accept(*server_, {}).ok());
  ASSERT_TRUE(peer_.ReadMpaReply());
  peer_.SendRtr();  // its CRC field is not checked without CRC
  ASSERT_TRUE(events_.WaitFor([&] { return events_.established; }));

  const std::vector<std::uint8_t> payload = Bytes(48 * 1024, 9);
  const std::vector<std::uint8_t> frame = RawPeer::Fpdu(SendHeader(1), payload);
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin(), frame.begin() + 100));
  ASSERT_TRUE(events_.WaitFor([&] { return !events_.acquired_msns.empty(); })) << "taken on the header";
  EXPECT_TRUE(events_.recvs.empty()) << "not complete before its last byte";
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin() + 100, frame.end()));
  ASSERT_TRUE(events_.WaitFor([&] { return events_.recvs.size() == 1; }));
  EXPECT_EQ(events_.recvs[0].status, WorkStatus::kSuccess);
  EXPECT_EQ(events_.recvs[0].info.length, payload.size());
  EXPECT_TRUE(std::equal(payload.begin(), payload.begin() + 20 * 1024, memory.begin() + 64 * 1024));
  EXPECT_TRUE(std::equal(payload.begin() + 20 * 1024, payload.end(), memory.begin() + 84 * 1024));
  EXPECT_EQ(std::count(memory.begin(), memory.begin() + 64 * 1024, 0xEE), 64 * 1024);
  EXPECT_EQ(std::count(memory.begin() + 84 * 1024 + 28 * 1024, memory.end(), 0xEE),
            static_cast<long>(memory.size() - 112 * 1024));
}

TEST_F(HostilePeerTest, MsnOutsideTheWindowTerminates) {
  std::vector<std::uint8_t> sink(64);
  std::vector<Segment> scatter = {SegmentOf(sink)};
  events_.AddBuffer(scatter);
  Establish();
  peer_.SendBytes(RawPeer::Fpdu(SendHeader(7), {1, 2, 3}));
  ExpectBrokenWithTerminate(wire::TermLayer::kDdp, 2, 0x03);
  EXPECT_TRUE(events_.acquired_msns.empty()) << "no buffer is taken for a message out of the window";
}

TEST_F(HostilePeerTest, GuessedStagWriteTerminatesAndTouchesNothing) {
  std::vector<std::uint8_t> region(4096, 0);
  events_.Expose(region, 0x100, true);
  Establish();
  wire::FpduHeader write;
  write.opcode = wire::Opcode::kRdmaWrite;
  write.last = true;
  write.stag = 0x101;
  write.tagged_offset = reinterpret_cast<std::uint64_t>(region.data());
  peer_.SendBytes(RawPeer::Fpdu(write, std::vector<std::uint8_t>(64, 0xFF)));
  ExpectBrokenWithTerminate(wire::TermLayer::kRdmap, 1, 0x00);
  EXPECT_EQ(region, std::vector<std::uint8_t>(4096, 0));
}

TEST_F(HostilePeerTest, WritePastTheRegionEndTerminatesWithBoundsAndTouchesNothing) {
  std::vector<std::uint8_t> memory(8192, 0);
  std::vector<std::uint8_t>& region = memory;
  events_.Expose(region, 0x100, true);
  Establish();
  wire::FpduHeader write;
  write.opcode = wire::Opcode::kRdmaWrite;
  write.last = true;
  write.stag = 0x100;
  write.tagged_offset = reinterpret_cast<std::uint64_t>(region.data()) + 8192 - 10;
  peer_.SendBytes(RawPeer::Fpdu(write, std::vector<std::uint8_t>(64, 0xFF)));
  ExpectBrokenWithTerminate(wire::TermLayer::kRdmap, 1, 0x01);
  EXPECT_EQ(memory, std::vector<std::uint8_t>(8192, 0));
}

TEST_F(HostilePeerTest, ReadRequestPastTheRegionIsRefused) {
  std::vector<std::uint8_t> region(4096, 7);
  events_.Expose(region, 0x100, false);
  Establish();
  wire::FpduHeader request;
  request.opcode = wire::Opcode::kReadRequest;
  request.last = true;
  request.queue = wire::kQueueReadRequest;
  request.msn = 1;
  std::vector<std::uint8_t> body(wire::kReadRequestBodySize);
  wire::EncodeReadRequest({0x9, 0, 1u << 20, 0x100, reinterpret_cast<std::uint64_t>(region.data())}, body.data());
  // The Read Request's body is part of its header; RawPeer::Fpdu puts it as the "payload" in
  // the right place because HeaderSize(kReadRequest) includes it.
  std::vector<std::uint8_t> frame = RawPeer::Fpdu(request, {});
  std::memcpy(frame.data() + wire::kUntaggedHeaderSize, body.data(), body.size());
  const std::size_t covered = frame.size() - wire::kCrcSize;
  const std::uint32_t crc = Crc32c(frame.data(), covered);
  for (int i = 0; i < 4; ++i) frame[covered + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  peer_.SendBytes(frame);
  ExpectBrokenWithTerminate(wire::TermLayer::kRdmap, 1, 0x01);
}

TEST_F(HostilePeerTest, CloseInTheMiddleOfAnFpduIsBroken) {
  std::vector<std::uint8_t> sink(64);
  std::vector<Segment> scatter = {SegmentOf(sink)};
  events_.AddBuffer(scatter);
  Establish();
  const std::vector<std::uint8_t> frame = RawPeer::Fpdu(SendHeader(1), std::vector<std::uint8_t>(40, 1));
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin(), frame.begin() + 10));
  ::shutdown(peer_.fd(), SHUT_WR);
  ASSERT_TRUE(events_.WaitFor([&] { return events_.ended.has_value(); }));
  EXPECT_EQ(*events_.ended, ConnectionEnd::kBroken);
}

TEST_F(HostilePeerTest, OversizedUlpduLengthShorterThanItsHeaderTerminates) {
  Establish();
  std::vector<std::uint8_t> bytes = RawPeer::Fpdu(SendHeader(1), {});
  bytes[0] = 0;
  bytes[1] = 4;  // ULPDU_Length smaller than the untagged header
  peer_.SendBytes(bytes);
  ExpectBrokenWithTerminate(wire::TermLayer::kLlp, 0, 0x03);
}

}  // namespace
}  // namespace softdat::transport::tcp
