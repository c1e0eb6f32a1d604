// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A hostile or broken peer against the TCP transport: a raw socket that speaks the wire format
// by hand (wire.h) and then misbehaves — junk instead of an MPA Request, a bad CRC on a small
// and on a large (directly placed) FPDU, an MSN outside the window, a guessed STag, a close in
// the middle of an FPDU; RFC 7306 messages out of sequence, too long, of an unknown operation or
// answering nothing. Each must end only that connection, with a Terminate where one is due,
// and change no memory outside the addressed buffer; the transport keeps serving others.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transport/tcp/crc32c.h"
#include "testing/deliberate_race.h"
#include "transport/tcp/proc_net_tcp.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/test_recorder.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {
namespace {

using testing::Bytes;
using testing::EstablishedDeliveryHold;
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
  // `receive_buffer` (bytes, 0: the default) keeps the window small: a peer that reads slowly.
  bool Connect(const sockaddr_in& address, std::uint16_t port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer != 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in to = address;
    to.sin_port = htons(port);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  }
  void SendBytes(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  void SendMpaRequest(bool peer_to_peer = true, bool crc = true) {
    wire::MpaFrame request;
    request.crc = crc;
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

// An FPDU whose header has a body after the untagged part (a Read Request, an RFC 7306 message),
// and `extra` bytes after that.
std::vector<std::uint8_t> FpduWithBody(const wire::FpduHeader& header, const std::vector<std::uint8_t>& body,
                                       std::size_t extra = 0) {
  // HeaderSize(opcode) counts the body: RawPeer::Fpdu leaves room for it, filled in here.
  std::vector<std::uint8_t> frame = RawPeer::Fpdu(header, std::vector<std::uint8_t>(extra, 0x5A));
  std::memcpy(frame.data() + wire::kUntaggedHeaderSize, body.data(), body.size());
  const std::size_t covered = frame.size() - wire::kCrcSize;
  const std::uint32_t crc = Crc32c(frame.data(), covered);
  for (int i = 0; i < 4; ++i) frame[covered + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  return frame;
}

wire::FpduHeader AtomicHeader(wire::Opcode opcode, std::uint32_t msn) {
  wire::FpduHeader header;
  header.opcode = opcode;
  header.last = true;
  header.queue = wire::kQueueAtomic;
  header.msn = msn;
  return header;
}

std::vector<std::uint8_t> AtomicRequest(const wire::AtomicRequestBody& request) {
  std::vector<std::uint8_t> body(wire::kAtomicRequestBodySize);
  wire::EncodeAtomicRequest(request, body.data());
  return body;
}

wire::FpduHeader SendHeader(std::uint32_t msn) {
  wire::FpduHeader header;
  header.opcode = wire::Opcode::kSend;
  header.last = true;
  header.queue = wire::kQueueSend;
  header.msn = msn;
  return header;
}

// How many connections wait in the accept queue of the IPv4 listener on `port` (the rx_queue
// column /proc/net/tcp gives a listening socket), -1 if there is none.
int AcceptQueueLength(std::uint16_t port) {
  for (const ProcNetTcpRow& row : ReadProcNetTcp())
    if (row.state == 0x0A && row.local_port == port) return static_cast<int>(row.rx_queue);
  return -1;
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
    params.options.shm = ShmMode::kOff;  // the peer is a raw TCP socket: no rendezvous needed
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
  // The raw peer connects and is accepted (asking for CRC or not); the server endpoint is
  // established.
  void Establish(int receive_buffer = 0, bool crc = true) {
    ASSERT_TRUE(peer_.Connect(transport_->address(), listener_->port(), receive_buffer));
    peer_.SendMpaRequest(true, crc);
    pending_ = requests_.Next();
    ASSERT_NE(pending_, nullptr);
    ASSERT_TRUE(pending_->Accept(*server_, {}).ok());
    ASSERT_TRUE(peer_.ReadMpaReply());
    peer_.SendRtr();
    ASSERT_TRUE(events_.WaitFor([&] { return events_.established; }));
  }
  // The raw peer connects with P2P and is accepted; `hold` keeps the server's ESTABLISHED in its
  // delivery (its progress thread waits there).
  void AcceptWithTheDeliveryHeld(EstablishedDeliveryHold& hold) {
    ASSERT_TRUE(peer_.Connect(transport_->address(), listener_->port()));
    peer_.SendMpaRequest(/*peer_to_peer=*/true);
    pending_ = requests_.Next();
    ASSERT_NE(pending_, nullptr);
    ASSERT_TRUE(pending_->Accept(*server_, {}).ok());
    ASSERT_TRUE(hold.WaitHeld()) << "the server never delivered its ESTABLISHED";
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

// With P2P the responder is reported established as its Reply goes out, not when the initiator's
// ready-to-receive FPDU comes: reported then, its ESTABLISHED could follow the DISCONNECTEDs of
// the peer's earlier connections (each its own socket), and stock dtestcm's server freed the EP of
// such a late ESTABLISHED and waited for ever for its end. What it posts still waits for that FPDU.
TEST_F(HostilePeerTest, ResponderWithP2pIsEstablishedAtItsReplyAndSendsAfterTheReadyToReceive) {
  ASSERT_TRUE(peer_.Connect(transport_->address(), listener_->port()));
  peer_.SendMpaRequest(/*peer_to_peer=*/true);
  pending_ = requests_.Next();
  ASSERT_NE(pending_, nullptr);
  ASSERT_TRUE(pending_->Accept(*server_, {}).ok());
  ASSERT_TRUE(peer_.ReadMpaReply());
  ASSERT_TRUE(events_.WaitFor([&] { return events_.established; })) << "no ready-to-receive FPDU was sent yet";
  std::vector<std::uint8_t> data = Bytes(32, 5);
  Segment gather[] = {SegmentOf(data)};
  Work send;
  send.id = 1;
  send.local = gather;
  send.length = data.size();
  ASSERT_TRUE(server_->Post(send).ok());
  pollfd quiet{peer_.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&quiet, 1, 300), 0) << "an FPDU before the initiator's ready-to-receive FPDU";
  peer_.SendRtr();
  std::vector<std::uint8_t> fpdu;
  ASSERT_TRUE(peer_.Read(wire::kUntaggedHeaderSize, fpdu)) << "the held Send never came";
  wire::FpduHeader header;
  wire::DecodeHeader(fpdu.data(), header);
  EXPECT_EQ(header.opcode, wire::Opcode::kSend);
  EXPECT_EQ(header.msn, 1u);
}

// The responder's ESTABLISHED is delivered before its Reply goes out, so nothing the initiator
// does once it has the Reply (stock dtestcm's client closes its earlier connections as soon as its
// last is up) is reported ahead of it. The delivery is held here, and the peer may get no byte
// meanwhile. Before, the Reply went out first and was delivered after: a thread preempted between
// the two let dtestcm's server take a DISCONNECTED for its last ESTABLISHED and wait for ever
// (seen on the same-host path, which had the same order).
TEST_F(HostilePeerTest, TheResponderDeliversItsEstablishedBeforeItsReplyGoesOut) {
  EstablishedDeliveryHold hold(events_);
  ASSERT_NO_FATAL_FAILURE(AcceptWithTheDeliveryHeld(hold));
  pollfd quiet{peer_.fd(), POLLIN, 0};
  const int ready = ::poll(&quiet, 1, 300);
  hold.Release();
  EXPECT_EQ(ready, 0) << "the Reply went out before the server's ESTABLISHED was delivered";
  ASSERT_TRUE(peer_.ReadMpaReply()) << "no Reply once the ESTABLISHED was delivered";
  // What it sends once the peer's ready-to-receive FPDU comes: the test above.
  EXPECT_EQ(events_.Get(events_.established), 1);
}

// A graceful disconnect that a consumer's poll takes while the ESTABLISHED is being delivered
// (before the Reply went out) waits for the Reply: the peer gets the whole Reply, then the FIN,
// never a FIN in its place; the close then ends DISCONNECTED, bounded as any graceful close (the
// wait for the ready-to-receive FPDU once replaced its bound, on the same timer).
TEST_F(HostilePeerTest, AGracefulCloseDuringTheEstablishedsDeliverySendsTheReplyThenTheFin) {
  EstablishedDeliveryHold hold(events_);
  ASSERT_NO_FATAL_FAILURE(AcceptWithTheDeliveryHeld(hold));
  // The progress thread is the one held: this thread's polls, a consumer's, take the close.
  server_->Disconnect(true);
  auto& transport = static_cast<TcpTransport&>(*transport_);
  for (int i = 0; i < 100; ++i) (void)transport.Progress();
  pollfd quiet{peer_.fd(), POLLIN, 0};
  const int ready = ::poll(&quiet, 1, 100);
  hold.Release();
  EXPECT_EQ(ready, 0) << "a byte or the FIN went out before the ESTABLISHED was delivered";
  ASSERT_TRUE(peer_.ReadMpaReply()) << "the close took the Reply's place";
  pollfd fin{peer_.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&fin, 1, 10000), 1) << "no FIN after the Reply";
  std::uint8_t byte = 0;
  EXPECT_EQ(::recv(peer_.fd(), &byte, 1, 0), 0) << "something other than the FIN followed the Reply";
  // The peer never answers the FIN (nor sends its ready-to-receive FPDU): the close's own bound
  // ends it (kCloseLinger), DISCONNECTED, not the 10 s wait for the ready-to-receive as BROKEN.
  ASSERT_TRUE(events_.WaitFor([&] { return events_.ended.has_value(); }));
  EXPECT_EQ(*events_.ended, ConnectionEnd::kDisconnected);
  EXPECT_EQ(events_.Get(events_.established), 1);
}

TEST_F(HostilePeerTest, JunkInsteadOfAnMpaRequestIsDroppedWithoutARequest) {
  ASSERT_TRUE(peer_.Connect(transport_->address(), listener_->port()));
  peer_.SendBytes(std::vector<std::uint8_t>(64, 0x5A));
  std::vector<std::uint8_t> ignored;
  EXPECT_FALSE(peer_.Read(1, ignored)) << "the listener closes without a Reply";
  ExpectStillServing();
}

// More peers than the listener reads MPA Requests from at once (64), all connected before any
// sends its Request, as a busy client process that connects 100 EPs in a loop does: each one is
// served once its Request comes. Peers beyond the bound once had their connections closed at
// accept (stock `dtestsrq -c 100` saw DAT_CONNECTION_EVENT_NON_PEER_REJECTED under load); now
// they wait in the kernel's listen backlog.
TEST_F(HostilePeerTest, LateRequestsBeyondTheSetupBoundWaitInsteadOfBeingRefused) {
  constexpr int kPeers = 80;
  std::vector<RawPeer> peers(kPeers);
  for (RawPeer& peer : peers) ASSERT_TRUE(peer.Connect(transport_->address(), listener_->port()));
  // Every connection is in the kernel's accept queue; the Requests must come only after the
  // listener has taken as many as its bound allows (the queue is down to the rest).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (AcceptQueueLength(listener_->port()) > kPeers - 64) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the listener never took its 64";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<std::unique_ptr<PendingConnection>> requests;
  for (RawPeer& peer : peers) peer.SendMpaRequest();
  for (int i = 0; i < kPeers; ++i) {
    requests.push_back(requests_.Next());
    ASSERT_NE(requests.back(), nullptr) << "request " << i << " of " << kPeers << " never came";
  }
}

// How many bytes the kernel holds in the send queue of the connection between local port `local`
// and remote port `remote` (the tx_queue column of /proc/net/tcp), -1 if none.
long SendQueueBytes(std::uint16_t local, std::uint16_t remote) {
  for (const ProcNetTcpRow& row : ReadProcNetTcp())
    if (row.local_port == local && row.remote_port == remote) return static_cast<long>(row.tx_queue);
  return -1;
}

// A Send completes only once its last byte is on the socket. With the socket full (a peer that
// reads slowly) and a message of the peer arriving meanwhile, Sends whose bytes still waited in
// the batch were completed by the read: their inline copies were released and reused by later
// posts while the batch still pointed at them, and what left did not match its CRC (seen as
// "FPDU CRC mismatch" under tc netem delay and reordering in the guest).
TEST_F(HostilePeerTest, ASendCompletesOnlyOnceItsLastByteIsOnTheSocket) {
  std::vector<std::uint8_t> inbound(256, 0);
  std::vector<Segment> scatter = {SegmentOf(inbound, 0, 256)};
  events_.AddBuffer(scatter);
  // 128 Sends of 64 KiB: more than the kernel holds for a peer that does not read (a few MiB on
  // loopback), four to a batch, so the batch written last waits for room with Sends in it.
  constexpr std::uint32_t kSends = 128;
  constexpr std::uint32_t kSize = 64 * 1024;
  EndpointConfig config = Config();
  config.max_send_work = kSends;
  server_.reset();
  ASSERT_TRUE(transport_->CreateEndpoint(config, &events_, server_).ok());
  Establish(4096);
  std::vector<std::uint8_t> payload(kSize, 0x5A);
  std::vector<Segment> gather = {SegmentOf(payload, 0, kSize)};
  for (std::uint64_t id = 1; id <= kSends; ++id) {
    Work send;
    send.id = id;
    send.kind = WorkKind::kSend;
    send.local = gather;
    send.length = kSize;
    ASSERT_TRUE(server_->Post(send).ok());
  }
  // What left the process: in the peer's receive queue, or still in the server's send queue.
  sockaddr_in peer_address{};
  socklen_t size = sizeof peer_address;
  ASSERT_EQ(getsockname(peer_.fd(), reinterpret_cast<sockaddr*>(&peer_address), &size), 0);
  const auto on_the_socket = [&] {
    // The send queue first: bytes move from it to the peer's receive queue, never back (the peer
    // does not read), so this sum is never less than what had left before it was taken.
    const long queued = SendQueueBytes(listener_->port(), ntohs(peer_address.sin_port));
    int received = 0;
    if (queued < 0 || ioctl(peer_.fd(), FIONREAD, &received) != 0) return std::uint64_t{0};
    return static_cast<std::uint64_t>(queued) + static_cast<std::uint64_t>(received);
  };
  // The socket is full once what it holds stops growing (the peer does not read): the server's
  // last batch then waits for room with Sends in it. Only then does the peer's message arrive.
  std::uint64_t held = 0;
  for (int same = 0, looks = 0; same < 5 && looks < 500; ++looks) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::uint64_t now = on_the_socket();
    same = now == held && now != 0 ? same + 1 : 0;
    held = now;
  }
  ASSERT_LT(held, std::uint64_t{kSends} * kSize) << "the socket took everything: the test needs a full one";
  // The peer's message makes the server read (and, then, report what was written before it).
  peer_.SendBytes(RawPeer::Fpdu(SendHeader(1), std::vector<std::uint8_t>(100, 1)));
  ASSERT_TRUE(events_.WaitFor([&] { return !events_.recvs.empty(); }));
  // What completed, then what had left: a Send completed is on the socket by then.
  std::uint64_t completed = 0;
  events_.WaitFor([&] {  // evaluated under the recorder's lock
    for (const auto& done : events_.work_done) completed += done.length;
    return true;
  });
  const std::uint64_t left = on_the_socket();
  EXPECT_LE(completed, left) << "Sends completed whose bytes had not left (" << left << " bytes had)";
  // Read it all: every FPDU intact, and then every Send completes.
  std::uint64_t payload_bytes = 0;
  while (payload_bytes < std::uint64_t{kSends} * kSize) {
    std::vector<std::uint8_t> head;
    ASSERT_TRUE(peer_.Read(2, head));
    const std::size_t ulpdu = std::size_t{head[0]} << 8 | head[1];
    const std::size_t covered = 2 + ulpdu + wire::PadSize(ulpdu);
    std::vector<std::uint8_t> rest;
    ASSERT_TRUE(peer_.Read(covered - 2 + wire::kCrcSize, rest));
    head.insert(head.end(), rest.begin(), rest.end());
    const std::uint32_t crc = head[covered] | head[covered + 1] << 8 | head[covered + 2] << 16 |
                              static_cast<std::uint32_t>(head[covered + 3]) << 24;
    ASSERT_EQ(Crc32c(head.data(), covered), crc) << "an FPDU whose bytes changed after its CRC";
    payload_bytes += 2 + ulpdu - wire::kUntaggedHeaderSize;
  }
  ASSERT_TRUE(events_.WaitFor([&] { return events_.work_done.size() == kSends; }));
  for (const auto& done : events_.work_done) EXPECT_EQ(done.status, WorkStatus::kSuccess);
}

// One FPDU as the peer reads it: header, payload and what its pad and CRC field hold.
struct ReadFpdu {
  wire::FpduHeader header;
  std::vector<std::uint8_t> payload;
  bool pad_zero = false;
  bool crc_good = false;     // the CRC field matches the bytes
  std::uint32_t crc_field = 0;
};
bool ReadOneFpdu(RawPeer& peer, ReadFpdu& out) {
  std::vector<std::uint8_t> head;
  if (!peer.Read(wire::kLengthFieldSize, head)) return false;
  const std::size_t ulpdu = std::size_t{head[0]} << 8 | head[1];
  const std::size_t covered = wire::kLengthFieldSize + ulpdu + wire::PadSize(ulpdu);
  std::vector<std::uint8_t> rest;
  if (!peer.Read(covered - wire::kLengthFieldSize + wire::kCrcSize, rest)) return false;
  head.insert(head.end(), rest.begin(), rest.end());
  wire::DecodeHeader(head.data(), out.header);
  const std::size_t header_size = wire::HeaderSize(out.header.opcode);
  out.payload.assign(head.begin() + static_cast<std::ptrdiff_t>(header_size),
                     head.begin() + static_cast<std::ptrdiff_t>(wire::kLengthFieldSize + ulpdu));
  out.pad_zero = std::all_of(head.begin() + static_cast<std::ptrdiff_t>(wire::kLengthFieldSize + ulpdu),
                             head.begin() + static_cast<std::ptrdiff_t>(covered), [](std::uint8_t b) { return b == 0; });
  out.crc_field = head[covered] | head[covered + 1] << 8 | head[covered + 2] << 16 |
                  static_cast<std::uint32_t>(head[covered + 3]) << 24;
  out.crc_good = Crc32c(head.data(), covered) == out.crc_field;
  return true;
}

// A lone small Send on an idle connection is written by Post itself, one send() straight from
// its frame (the latency path). Posted one at a time, each after the one before completed, to a
// peer that does not read: the first that does not fit meets the full socket in that send(),
// partly written or not at all, and its rest must go out as a batch once there is room, after
// which the Sends queued behind it follow. The peer then reads every FPDU whole, in MSN order,
// with its own payload and a good CRC, and every Send completes.
TEST_F(HostilePeerTest, ALoneSendThatMeetsAFullSocketAtPostGoesOutWholeLater) {
  constexpr std::uint32_t kSize = 4096;  // framed at post (InlineRing::kMaxInline)
  constexpr std::uint32_t kMaxAlone = 4096;  // 16 MiB: more than loopback holds for a non-reader
  constexpr std::uint32_t kQueuedBehind = 8;
  Establish(4096);
  sockaddr_in peer_address{};
  socklen_t address_size = sizeof peer_address;
  ASSERT_EQ(getsockname(peer_.fd(), reinterpret_cast<sockaddr*>(&peer_address), &address_size), 0);
  std::vector<std::uint8_t> payload(kSize);
  std::vector<Segment> gather = {SegmentOf(payload)};
  auto post = [&](std::uint64_t id) {
    std::fill(payload.begin(), payload.end(), static_cast<std::uint8_t>(id * 7 + 1));
    Work send;
    send.id = id;
    send.kind = WorkKind::kSend;
    send.local = gather;
    send.length = kSize;
    return server_->Post(send).ok();
  };
  auto completed = [&] {
    std::size_t n = 0;
    events_.WaitFor([&] {  // evaluated under the recorder's lock
      n = events_.work_done.size();
      return true;
    });
    return n;
  };
  std::uint64_t posted = 0;
  bool blocked = false;
  while (!blocked && posted < kMaxAlone) {
    ASSERT_TRUE(post(++posted));
    // Its completion comes once its last byte is on the socket; one that does not come within
    // 200 ms met the full socket (or a slow machine: either way the rest of the test holds).
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (completed() < posted && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    blocked = completed() < posted;
  }
  ASSERT_TRUE(blocked) << "16 MiB fitted into the socket: the test needs a full one";
  const long queued = SendQueueBytes(listener_->port(), ntohs(peer_address.sin_port));
  ASSERT_GT(queued, 0) << "the peer's window is full and the server's send queue holds the rest";
  for (std::uint32_t i = 0; i < kQueuedBehind; ++i) ASSERT_TRUE(post(++posted));
  for (std::uint64_t id = 1; id <= posted; ++id) {
    ReadFpdu fpdu;
    ASSERT_TRUE(ReadOneFpdu(peer_, fpdu)) << "Send " << id;
    EXPECT_EQ(fpdu.header.msn, id) << "out of post order";
    EXPECT_TRUE(fpdu.header.last);
    EXPECT_TRUE(fpdu.crc_good) << "Send " << id << ": bytes lost or changed around the partial write";
    ASSERT_EQ(fpdu.payload.size(), kSize) << "Send " << id;
    EXPECT_EQ(std::count(fpdu.payload.begin(), fpdu.payload.end(), static_cast<std::uint8_t>(id * 7 + 1)),
              static_cast<std::ptrdiff_t>(kSize))
        << "Send " << id << ": not its own payload";
  }
  ASSERT_TRUE(events_.WaitFor([&] { return events_.work_done.size() == posted; }));
  for (std::uint64_t i = 0; i < posted; ++i) {
    EXPECT_EQ(events_.work_done[i].id, i + 1);
    EXPECT_EQ(events_.work_done[i].status, WorkStatus::kSuccess);
  }
}

// Small Sends on an established connection are framed whole when posted (header, payload copied
// and checksummed in one pass, pad, CRC), larger ones when sent. Mixed, with the Send variants,
// a gather list and every pad length: each FPDU on the wire carries the MSN of its place in post
// order, its payload as it was when posted, a zero pad and a CRC over exactly its bytes.
void PostMixedSendsAndCheckTheWire(Endpoint& server, RecordingEvents& events, RawPeer& peer, bool crc) {
  struct Case {
    std::uint32_t size;
    bool solicited;
    bool invalidate;
    bool gathered;  // from two segments
  };
  const Case cases[] = {{1, false, false, false},    {7, true, false, false},     {4096, false, false, true},
                        {5000, false, false, false}, {64, false, true, false},    {0, false, false, false},
                        {4095, true, true, true},    {4094, false, false, false}, {70000, false, false, true},
                        {2, false, false, false}};
  std::vector<std::vector<std::uint8_t>> sources;
  std::vector<std::vector<Segment>> gathers;
  for (const Case& c : cases) sources.push_back(Bytes(c.size, static_cast<std::uint8_t>(sources.size() * 31 + 5)));
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    if (c.gathered) {
      gathers.push_back({SegmentOf(sources[i], 0, c.size / 3), SegmentOf(sources[i], c.size / 3)});
    } else {
      gathers.push_back({SegmentOf(sources[i])});
    }
  }
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    Work send;
    send.id = i + 1;
    send.kind = WorkKind::kSend;
    send.local = gathers[i];
    send.length = cases[i].size;
    send.solicited = cases[i].solicited;
    send.invalidate = cases[i].invalidate;
    send.invalidate_key = cases[i].invalidate ? 0x1000 + static_cast<std::uint32_t>(i) : 0;
    ASSERT_TRUE(server.Post(send).ok());
  }
  // A small Send's bytes are taken at the post (as an RNIC's inline data): the consumer's buffer
  // may change right after it. A larger one is read when framed: its buffer is left alone.
  const std::vector<std::vector<std::uint8_t>> posted = sources;
  for (std::size_t i = 0; i < std::size(cases); ++i)
    if (cases[i].size <= 4096) std::fill(sources[i].begin(), sources[i].end(), 0xEE);
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    std::vector<std::uint8_t> message;
    for (bool last = false; !last;) {  // a Send longer than an FPDU comes in several
      ReadFpdu fpdu;
      ASSERT_TRUE(ReadOneFpdu(peer, fpdu)) << "Send " << i;
      const wire::Opcode expected = c.solicited ? (c.invalidate ? wire::Opcode::kSendSolicitedInvalidate
                                                                : wire::Opcode::kSendSolicited)
                                                : (c.invalidate ? wire::Opcode::kSendInvalidate : wire::Opcode::kSend);
      EXPECT_EQ(fpdu.header.opcode, expected) << "Send " << i;
      EXPECT_EQ(fpdu.header.queue, wire::kQueueSend);
      EXPECT_EQ(fpdu.header.msn, i + 1) << "Send " << i << " out of its place in post order";
      EXPECT_EQ(fpdu.header.message_offset, message.size()) << "Send " << i;
      if (c.invalidate) {
        EXPECT_EQ(fpdu.header.stag, 0x1000 + i);
      }
      EXPECT_TRUE(fpdu.pad_zero) << "Send " << i;
      if (crc) {
        EXPECT_TRUE(fpdu.crc_good) << "Send " << i << ": a CRC that does not cover the bytes sent";
      } else {
        EXPECT_EQ(fpdu.crc_field, 0u) << "Send " << i << ": without CRC the field is zero";
      }
      message.insert(message.end(), fpdu.payload.begin(), fpdu.payload.end());
      last = fpdu.header.last;
    }
    EXPECT_EQ(message, posted[i]) << "Send " << i << ": not the bytes posted";
  }
  ASSERT_TRUE(events.WaitFor([&] { return events.work_done.size() == std::size(cases); }));
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_EQ(events.work_done[i].id, i + 1);
    EXPECT_EQ(events.work_done[i].length, cases[i].size);
  }
}

TEST_F(HostilePeerTest, SmallSendsFramedAtPostCarryTheirPlaceThePayloadPostedAndTheirCrc) {
  Establish();
  PostMixedSendsAndCheckTheWire(*server_, events_, peer_, true);
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
    params.options.shm = ShmMode::kOff;
    std::string why;
    ASSERT_TRUE(CreateTcpTransport(params, why, transport_).ok()) << why;
    ASSERT_TRUE(transport_->Listen(0, &requests_, listener_).ok());
    ASSERT_TRUE(transport_->CreateEndpoint(Config(), &events_, server_).ok());
  }
};

TEST_F(NoCrcPeerTest, SmallSendsFramedAtPostCarryAZeroCrcField) {
  Establish(0, false);
  PostMixedSendsAndCheckTheWire(*server_, events_, peer_, false);
}

TEST_F(NoCrcPeerTest, LargeFpduIsPlacedAsItArrives) {
  std::vector<std::uint8_t> memory(3 * 64 * 1024, 0xEE);
  std::vector<Segment> scatter = {SegmentOf(memory, 64 * 1024, 20 * 1024), SegmentOf(memory, 84 * 1024, 44 * 1024)};
  events_.AddBuffer(scatter);
  Establish(0, false);  // the peer's ready-to-receive FPDU: its CRC field is not checked without CRC

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

// With CRC a large Send lands in its receive buffer as it arrives (no staging copy), and is
// checked before it completes: the first part is visible in the buffer while the rest is missing.
TEST_F(HostilePeerTest, LargeSendWithCrcIsPlacedAsItArrivesAndCompletesOnlyWhenChecked) {
  std::vector<std::uint8_t> memory(48 * 1024, 0xEE);
  std::vector<Segment> scatter = {SegmentOf(memory)};
  events_.AddBuffer(scatter);
  Establish();
  const std::vector<std::uint8_t> payload = Bytes(48 * 1024, 9);
  const std::vector<std::uint8_t> frame = RawPeer::Fpdu(SendHeader(1), payload);
  const std::size_t first = 20 * 1024;  // header and about 20 KiB of payload
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin(), frame.begin() + first));
  ASSERT_TRUE(events_.WaitFor([&] { return !events_.acquired_msns.empty(); }));
  const std::size_t header = wire::kUntaggedHeaderSize;
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  {
    // Looks at the buffer while the progress thread places into it, as a consumer may look at
    // a buffer an RNIC is placing into: volatile, or the compiler may keep one stale load.
    softdat::testing::DeliberatelyRacyReads peek;
    const volatile std::uint8_t* last = memory.data() + (first - header - 1);
    while (*last != payload[first - header - 1] && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(std::equal(payload.begin(), payload.begin() + static_cast<long>(first - header), memory.begin()))
        << "placed as it arrived";
  }
  EXPECT_TRUE(events_.Get(events_.recvs).empty()) << "not complete before its CRC is checked";
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin() + static_cast<long>(first), frame.end()));
  ASSERT_TRUE(events_.WaitFor([&] { return events_.recvs.size() == 1; }));
  EXPECT_EQ(events_.recvs[0].status, WorkStatus::kSuccess);
  EXPECT_EQ(memory, payload);
}

TEST_F(HostilePeerTest, LargeSendPlacedAsItArrivesWithABadCrcNeverCompletes) {
  std::vector<std::uint8_t> memory(48 * 1024, 0xEE);
  std::vector<Segment> scatter = {SegmentOf(memory)};
  events_.AddBuffer(scatter);
  Establish();
  const std::vector<std::uint8_t> frame = RawPeer::Fpdu(SendHeader(1), Bytes(48 * 1024, 9), false);
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin(), frame.begin() + 20 * 1024));
  ASSERT_TRUE(events_.WaitFor([&] { return !events_.acquired_msns.empty(); }));
  peer_.SendBytes(std::vector<std::uint8_t>(frame.begin() + 20 * 1024, frame.end()));
  ExpectBrokenWithTerminate(wire::TermLayer::kLlp, 0, 0x02);
  EXPECT_TRUE(events_.Get(events_.recvs).empty()) << "a message with a bad CRC never completes";
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
  peer_.SendBytes(FpduWithBody(request, body));
  ExpectBrokenWithTerminate(wire::TermLayer::kRdmap, 1, 0x01);
}

// RFC 7306 from a peer written by hand: an Atomic Request is answered with an Atomic Response
// on queue 3 that echoes the request's identifier and carries the original value.
TEST_F(HostilePeerTest, AtomicRequestIsAnsweredAsRfc7306Says) {
  std::vector<std::uint8_t> region(64, 0);
  const std::uint64_t original = 0x0102030405060708;
  std::memcpy(region.data() + 8, &original, 8);
  events_.Expose(region, 0x100, true);
  Establish();
  wire::AtomicRequestBody request;
  request.operation = static_cast<std::uint8_t>(wire::AtomicOperation::kFetchAdd);
  request.request_id = 0xABCD1234;
  request.stag = 0x100;
  request.offset = reinterpret_cast<std::uint64_t>(region.data()) + 8;
  request.add_or_swap = 0x10;
  peer_.SendBytes(FpduWithBody(AtomicHeader(wire::Opcode::kAtomicRequest, 1), AtomicRequest(request)));
  const std::size_t size = wire::kUntaggedHeaderSize + wire::kAtomicResponseBodySize;
  std::vector<std::uint8_t> frame;
  ASSERT_TRUE(peer_.Read(size + wire::PadSize(size - wire::kLengthFieldSize) + wire::kCrcSize, frame));
  wire::FpduHeader header;
  wire::DecodeHeader(frame.data(), header);
  EXPECT_EQ(header.opcode, wire::Opcode::kAtomicResponse);
  EXPECT_EQ(header.queue, wire::kQueueAtomic);
  EXPECT_EQ(header.msn, 1u);
  EXPECT_TRUE(header.last);
  EXPECT_EQ(header.ulpdu_length, size - wire::kLengthFieldSize);
  wire::AtomicResponseBody response;
  wire::DecodeAtomicResponse(frame.data() + wire::kUntaggedHeaderSize, response);
  EXPECT_EQ(response.request_id, 0xABCD1234u);
  EXPECT_EQ(response.original, original);
  std::uint64_t now = 0;
  std::memcpy(&now, region.data() + 8, 8);
  EXPECT_EQ(now, original + 0x10);
  const std::size_t covered = frame.size() - wire::kCrcSize;
  const std::uint32_t crc = Crc32c(frame.data(), covered);
  EXPECT_EQ(std::memcmp(&frame[covered], &crc, 4), 0) << "CRC (little-endian host)";
}

TEST_F(HostilePeerTest, AtomicRequestWithAnUnknownOperationTerminatesAndTouchesNothing) {
  std::vector<std::uint8_t> region(64, 0);
  events_.Expose(region, 0x100, true);
  Establish();
  wire::AtomicRequestBody request;
  request.operation = 1;  // RFC 7306's Swap: not one softdat does
  request.stag = 0x100;
  request.offset = reinterpret_cast<std::uint64_t>(region.data());
  request.add_or_swap = 1;
  peer_.SendBytes(FpduWithBody(AtomicHeader(wire::Opcode::kAtomicRequest, 1), AtomicRequest(request)));
  ExpectBrokenWithTerminate(wire::TermLayer::kRdmap, 2, 0x06);
  EXPECT_EQ(region, std::vector<std::uint8_t>(64, 0));
}

TEST_F(HostilePeerTest, AtomicRequestOutOfSequenceTerminatesAndTouchesNothing) {
  std::vector<std::uint8_t> region(64, 0);
  events_.Expose(region, 0x100, true);
  Establish();
  wire::AtomicRequestBody request;
  request.stag = 0x100;
  request.offset = reinterpret_cast<std::uint64_t>(region.data());
  peer_.SendBytes(FpduWithBody(AtomicHeader(wire::Opcode::kAtomicRequest, 2), AtomicRequest(request)));
  ExpectBrokenWithTerminate(wire::TermLayer::kDdp, 2, 0x03);
  EXPECT_EQ(region, std::vector<std::uint8_t>(64, 0));
}

TEST_F(HostilePeerTest, AtomicResponseWithNothingOutstandingTerminates) {
  Establish();
  std::vector<std::uint8_t> body(wire::kAtomicResponseBodySize);
  wire::EncodeAtomicResponse({7, 42}, body.data());
  peer_.SendBytes(FpduWithBody(AtomicHeader(wire::Opcode::kAtomicResponse, 1), body));
  ExpectBrokenWithTerminate(wire::TermLayer::kRdmap, 2, 0x07);
}

TEST_F(HostilePeerTest, ImmediateDataWithBytesAfterItsHeaderTerminatesWithoutTakingABuffer) {
  std::vector<std::uint8_t> sink(64);
  std::vector<Segment> scatter = {SegmentOf(sink)};
  events_.AddBuffer(scatter);
  Establish();
  wire::FpduHeader immediate = SendHeader(1);
  immediate.opcode = wire::Opcode::kImmediate;
  std::vector<std::uint8_t> body(wire::kImmediateBodySize);
  wire::EncodeImmediate(5, body.data());
  peer_.SendBytes(FpduWithBody(immediate, body, 4));
  ExpectBrokenWithTerminate(wire::TermLayer::kDdp, 2, 0x05);
  EXPECT_TRUE(events_.acquired_msns.empty());
  EXPECT_EQ(sink, std::vector<std::uint8_t>(64, 0));
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
