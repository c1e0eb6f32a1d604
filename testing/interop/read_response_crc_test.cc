// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The deterministic half of the siw CRC case (docs/WIRE.md, interop): a Read Response whose CRC
// was computed over other bytes than the ones sent — what Linux siw puts on the wire when the
// consumer rewrites a Read source that siw sends zero-copy after checksumming it. Here a raw iWARP
// peer on loopback (MPA and FPDUs written by hand with transport/tcp/wire.h) answers softdat-tcp's
// RDMA Read with one good FPDU and one such bad one, every time. softdat must terminate with an
// LLP CRC error, fail the Read and break the connection: the consumer never gets the refused
// bytes as data. (The sink of a failed DTO is undefined in DAT, and softdat checks a Read
// Response's CRC as it copies it into the sink, so the sink may hold them.) The
// siw run of the same case (guest_interop.sh, C-crc-race) is the evidence that siw does this.
// Through the stock registry (testing/registry_main installs the dat.conf), CRC on by default.
#include <arpa/inet.h>
#include <dat2/udat.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "transport/tcp/crc32c.h"
#include "transport/tcp/wire.h"

namespace softdat::testing {
namespace {

namespace wire = transport::tcp::wire;
constexpr DAT_TIMEOUT kWaitUs = 10'000'000;
constexpr std::size_t kHalf = 4096;

// The passive side of one connection, by hand.
class RawPeer {
 public:
  RawPeer() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof at;
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
    EXPECT_EQ(listen(listener_, 1), 0);
    EXPECT_EQ(getsockname(listener_, reinterpret_cast<sockaddr*>(&at), &length), 0);
    port_ = ntohs(at.sin_port);
  }
  ~RawPeer() {
    if (fd_ >= 0) close(fd_);
    close(listener_);
  }
  std::uint16_t port() const { return port_; }

  bool Accept() {
    pollfd p{listener_, POLLIN, 0};
    if (poll(&p, 1, 10000) != 1) return false;
    fd_ = accept(listener_, nullptr, nullptr);
    return fd_ >= 0;
  }
  bool Read(std::size_t n, std::vector<std::uint8_t>& out) {
    out.resize(n);
    for (std::size_t got = 0; got < n;) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 10000) != 1) return false;
      const ssize_t r = recv(fd_, out.data() + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
    return true;
  }
  void Write(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  // The Request (which must ask for CRC) answered with an enhanced Reply: CRC, P2P, Write RTR.
  bool Handshake() {
    std::vector<std::uint8_t> header, rest;
    wire::MpaFrame request;
    std::uint16_t pd_length = 0;
    const char* why = nullptr;
    if (!Read(wire::kMpaFrameHeaderSize, header) ||
        !wire::DecodeMpaHeader(header.data(), false, request, pd_length, why) || !Read(pd_length, rest))
      return false;
    EXPECT_TRUE(request.crc) << "softdat-tcp asks for CRC by default";
    wire::MpaFrame reply;
    reply.reply = reply.crc = reply.enhanced = reply.peer_to_peer = reply.rtr_write = true;
    reply.ird = reply.ord = 4;
    std::vector<std::uint8_t> bytes(wire::kMpaFrameHeaderSize + wire::kMpaEnhancedBlockSize);
    bytes.resize(wire::EncodeMpaFrame(reply, bytes.data()));
    Write(bytes);
    std::vector<std::uint8_t> rtr;  // the zero-length RDMA Write: 16 header bytes and the CRC
    return Read(wire::kTaggedHeaderSize + wire::kCrcSize, rtr);
  }
  // One Read Response FPDU carrying `sent`, its CRC computed over `checksummed` (the same bytes
  // for a good FPDU).
  static std::vector<std::uint8_t> ReadResponse(std::uint32_t stag, std::uint64_t offset, bool last,
                                                const std::vector<std::uint8_t>& sent,
                                                const std::vector<std::uint8_t>& checksummed) {
    wire::FpduHeader h;
    h.opcode = wire::Opcode::kReadResponse;
    h.tagged = true;
    h.last = last;
    h.stag = stag;
    h.tagged_offset = offset;
    h.ulpdu_length = static_cast<std::uint16_t>(wire::kTaggedHeaderSize - wire::kLengthFieldSize + sent.size());
    const std::size_t covered = wire::kLengthFieldSize + h.ulpdu_length + wire::PadSize(h.ulpdu_length);
    std::vector<std::uint8_t> bytes(covered + wire::kCrcSize, 0);
    wire::EncodeHeader(h, bytes.data());
    std::memcpy(bytes.data() + wire::kTaggedHeaderSize, checksummed.data(), checksummed.size());
    const std::uint32_t crc = transport::tcp::Crc32c(bytes.data(), covered);
    std::memcpy(bytes.data() + wire::kTaggedHeaderSize, sent.data(), sent.size());
    for (int i = 0; i < 4; ++i) bytes[covered + i] = static_cast<std::uint8_t>(crc >> (8 * i));
    return bytes;
  }

 private:
  int listener_ = -1;
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

class ReadResponseCrcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(dat_ia_open(const_cast<char*>("softdat-tcp"), 16, &async_, &ia_), DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(ia_, &pz_), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_), DAT_SUCCESS);
    sink_.assign(2 * kHalf, 0xEE);
    DAT_REGION_DESCRIPTION region;
    region.for_va = sink_.data();
    DAT_VLEN length;
    DAT_VADDR address;
    ASSERT_EQ(dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, region, sink_.size(), pz_, DAT_MEM_PRIV_ALL_FLAG,
                             DAT_VA_TYPE_VA, &lmr_, &lmr_context_, &rmr_context_, &length, &address),
              DAT_SUCCESS);
    ASSERT_EQ(dat_ep_create(ia_, pz_, dto_, dto_, conn_, nullptr, &ep_), DAT_SUCCESS);
    sockaddr_in remote{};
    remote.sin_family = AF_INET;
    remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(dat_ep_connect(ep_, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&remote), peer_.port(), kWaitUs, 0, nullptr,
                             DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    ASSERT_TRUE(peer_.Accept());
    ASSERT_TRUE(peer_.Handshake());
    DAT_EVENT event;
    ASSERT_EQ(Wait(conn_, event), DAT_SUCCESS);
    ASSERT_EQ(event.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
  }
  void TearDown() override {
    if (ep_ != DAT_HANDLE_NULL) {
      dat_ep_disconnect(ep_, DAT_CLOSE_ABRUPT_FLAG);
      DAT_EVENT event;
      while (dat_evd_wait(conn_, 200'000, 1, &event, nullptr) == DAT_SUCCESS) {
      }
      while (dat_evd_dequeue(dto_, &event) == DAT_SUCCESS) {
      }
      dat_ep_free(ep_);
    }
    if (lmr_ != DAT_HANDLE_NULL) dat_lmr_free(lmr_);
    if (conn_ != DAT_HANDLE_NULL) dat_evd_free(conn_);
    if (dto_ != DAT_HANDLE_NULL) dat_evd_free(dto_);
    if (pz_ != DAT_HANDLE_NULL) dat_pz_free(pz_);
    if (ia_ != DAT_HANDLE_NULL) dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG);
  }
  static DAT_RETURN Wait(DAT_EVD_HANDLE evd, DAT_EVENT& event) {
    DAT_COUNT more = 0;
    return dat_evd_wait(evd, kWaitUs, 1, &event, &more);
  }
  // Posts an RDMA Read of the whole sink; the raw peer reads the Read Request and answers with
  // two FPDUs, the second one's CRC over `second_checksummed`.
  void ReadAnswered(const std::vector<std::uint8_t>& first, const std::vector<std::uint8_t>& second,
                    const std::vector<std::uint8_t>& second_checksummed) {
    DAT_LMR_TRIPLET iov{};
    iov.lmr_context = lmr_context_;
    iov.virtual_address = reinterpret_cast<DAT_VADDR>(sink_.data());
    iov.segment_length = static_cast<DAT_VLEN>(sink_.size());
    DAT_RMR_TRIPLET remote{};
    remote.rmr_context = 0x1234;  // the raw peer checks nothing
    remote.virtual_address = 0x10000;
    remote.segment_length = static_cast<DAT_SEG_LENGTH>(sink_.size());
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = 7;
    ASSERT_EQ(dat_ep_post_rdma_read(ep_, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    std::vector<std::uint8_t> request;
    ASSERT_TRUE(peer_.Read(wire::kReadRequestHeaderSize + wire::kCrcSize, request));  // a Read Request is 52 bytes
    wire::FpduHeader header;
    wire::DecodeHeader(request.data(), header);
    ASSERT_EQ(header.opcode, wire::Opcode::kReadRequest);
    wire::ReadRequestBody body;
    wire::DecodeReadRequest(request.data() + wire::kUntaggedHeaderSize, body);
    ASSERT_EQ(body.size, sink_.size());
    peer_.Write(RawPeer::ReadResponse(body.sink_stag, body.sink_offset, false, first, first));
    peer_.Write(RawPeer::ReadResponse(body.sink_stag, body.sink_offset + kHalf, true, second, second_checksummed));
  }

  RawPeer peer_;
  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_ = DAT_HANDLE_NULL, dto_ = DAT_HANDLE_NULL, conn_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
  DAT_LMR_HANDLE lmr_ = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lmr_context_ = 0;
  DAT_RMR_CONTEXT rmr_context_ = 0;
  DAT_EP_HANDLE ep_ = DAT_HANDLE_NULL;
  std::vector<std::uint8_t> sink_;
};

// The control: the same exchange with both CRCs right completes the Read with the peer's bytes.
TEST_F(ReadResponseCrcTest, GoodReadResponsesCompleteTheRead) {
  const std::vector<std::uint8_t> a(kHalf, 0xA1), b(kHalf, 0xB2);
  ReadAnswered(a, b, b);
  DAT_EVENT event;
  ASSERT_EQ(Wait(dto_, event), DAT_SUCCESS);
  EXPECT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(std::vector<std::uint8_t>(sink_.begin(), sink_.begin() + kHalf), a);
  EXPECT_EQ(std::vector<std::uint8_t>(sink_.begin() + kHalf, sink_.end()), b);
}

// The second FPDU's CRC is of the bytes before they changed (0xB2), the bytes sent are new (0xC3).
TEST_F(ReadResponseCrcTest, ReadResponseWithTheCrcOfOlderBytesIsRefused) {
  const std::vector<std::uint8_t> a(kHalf, 0xA1), older(kHalf, 0xB2), newer(kHalf, 0xC3);
  ReadAnswered(a, newer, older);
  // softdat's Terminate: LLP, error type 0, code 2 (CRC), RFC bit order.
  std::vector<std::uint8_t> terminate;
  ASSERT_TRUE(peer_.Read(wire::kUntaggedHeaderSize + 4, terminate)) << "no Terminate from softdat";
  wire::FpduHeader header;
  wire::DecodeHeader(terminate.data(), header);
  ASSERT_EQ(header.opcode, wire::Opcode::kTerminate);
  EXPECT_EQ(header.queue, wire::kQueueTerminate);
  EXPECT_EQ(terminate[wire::kUntaggedHeaderSize], 0x20) << "layer 2 (LLP) in the high nibble, type 0";
  EXPECT_EQ(terminate[wire::kUntaggedHeaderSize + 1], 0x02) << "code 2: CRC error";
  // The Read fails, the connection breaks, and nothing else completes.
  DAT_EVENT event;
  ASSERT_EQ(Wait(dto_, event), DAT_SUCCESS);
  ASSERT_EQ(event.event_number, DAT_DTO_COMPLETION_EVENT);
  EXPECT_EQ(event.event_data.dto_completion_event_data.user_cookie.as_64, 7u);
  EXPECT_NE(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS) << "the refused bytes completed the Read";
  ASSERT_EQ(Wait(conn_, event), DAT_SUCCESS);
  EXPECT_EQ(event.event_number, DAT_CONNECTION_EVENT_BROKEN);
  EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(dto_, &event)), DAT_QUEUE_EMPTY) << "a completion after the failed Read";
}

}  // namespace
}  // namespace softdat::testing
