// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// iwarp-dump's decoder on streams built here with transport/tcp/wire.h: every field of each frame
// kind, the CRC verdicts, siw's nibble-swapped Terminate, streams cut anywhere, a torn last frame,
// and bytes that are not FPDUs. The captured traffic is tested by iwarp_dump_test.sh.
#include "tools/iwarp_dump/decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "transport/tcp/crc32c.h"
#include "transport/tcp/wire.h"

namespace softdat::tools::iwarp_dump {
namespace {

namespace wire = transport::tcp::wire;
using Bytes = std::vector<std::uint8_t>;

// An FPDU of `header` and `payload` (`body` first for a Read Request or Terminate), its CRC right
// or flipped.
Bytes Fpdu(wire::FpduHeader header, const Bytes& body, const Bytes& payload, bool good_crc = true) {
  const std::size_t head = wire::IsTagged(header.opcode) ? wire::kTaggedHeaderSize : wire::kUntaggedHeaderSize;
  header.ulpdu_length = static_cast<std::uint16_t>(head - 2 + body.size() + payload.size());
  const std::size_t covered = 2 + header.ulpdu_length + wire::PadSize(header.ulpdu_length);
  Bytes bytes(covered + 4, 0);
  wire::EncodeHeader(header, bytes.data());
  // std::copy, not memcpy: an empty vector's data() may be null, which memcpy must not get.
  std::copy(body.begin(), body.end(), bytes.begin() + static_cast<std::ptrdiff_t>(head));
  std::copy(payload.begin(), payload.end(), bytes.begin() + static_cast<std::ptrdiff_t>(head + body.size()));
  std::uint32_t crc = transport::tcp::Crc32c(bytes.data(), covered);
  if (!good_crc) crc ^= 0x80;
  for (int i = 0; i < 4; ++i) bytes[covered + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  return bytes;
}

wire::FpduHeader Untagged(wire::Opcode opcode, std::uint32_t queue, std::uint32_t msn, std::uint32_t mo, bool last) {
  wire::FpduHeader h;
  h.opcode = opcode;
  h.queue = queue;
  h.msn = msn;
  h.message_offset = mo;
  h.last = last;
  return h;
}

Bytes Request(bool crc, const Bytes& private_data) {
  wire::MpaFrame f;
  f.crc = crc;
  f.enhanced = f.peer_to_peer = f.rtr_write = true;
  f.ird = 4;
  f.ord = 2;
  f.private_data_length = static_cast<std::uint16_t>(private_data.size());
  Bytes bytes(wire::kMpaFrameHeaderSize + wire::kMpaEnhancedBlockSize);
  wire::EncodeMpaFrame(f, bytes.data());
  bytes.insert(bytes.end(), private_data.begin(), private_data.end());
  return bytes;
}

// A whole conversation of one direction: Request, RTR, a Send in two FPDUs, a Read Request, a
// Read Response with a wrong CRC, and the Terminate siw would send for it.
Bytes Conversation() {
  Bytes s = Request(true, {0xAB, 0xCD, 0xEF});
  auto add = [&](const Bytes& b) { s.insert(s.end(), b.begin(), b.end()); };
  wire::FpduHeader rtr;
  rtr.opcode = wire::Opcode::kRdmaWrite;
  rtr.last = true;
  add(Fpdu(rtr, {}, {}));
  add(Fpdu(Untagged(wire::Opcode::kSend, 0, 1, 0, false), {}, Bytes(10, 1)));
  add(Fpdu(Untagged(wire::Opcode::kSend, 0, 1, 10, true), {}, Bytes(7, 2)));
  Bytes read(wire::kReadRequestBodySize);
  wire::EncodeReadRequest({0x11, 0x22, 4096, 0x33, 0x44}, read.data());
  add(Fpdu(Untagged(wire::Opcode::kReadRequest, 1, 1, 0, true), read, {}));
  wire::FpduHeader response;
  response.opcode = wire::Opcode::kReadResponse;
  response.last = true;
  response.stag = 0x55;
  response.tagged_offset = 0x66;
  add(Fpdu(response, {}, Bytes(12, 3), /*good_crc=*/false));
  // siw on x86: layer and type nibbles swapped (LLP=2 in the low nibble), M/D/R at 0x01/0x02/0x04.
  add(Fpdu(Untagged(wire::Opcode::kTerminate, 2, 1, 0, true), {0x02, 0x02, 0x00, 0x00}, {}));
  return s;
}

std::vector<Line> Decode(const Bytes& bytes, std::size_t piece = SIZE_MAX, Options options = {}) {
  std::vector<Line> lines;
  StreamDecoder decoder(options, [&](const Line& line) { lines.push_back(line); });
  for (std::size_t at = 0; at < bytes.size(); at += piece)
    decoder.Feed(bytes.data() + at, std::min(piece, bytes.size() - at));
  decoder.Finish();
  return lines;
}

bool Has(const Line& line, const std::string& text) { return line.text.find(text) != std::string::npos; }

TEST(DecoderTest, EveryFrameOfAConversationOnItsLineWithItsFields) {
  const std::vector<Line> lines = Decode(Conversation());
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_TRUE(Has(lines[0], "MPA Request M=0 C=1 R=0 S=1 res=0x0 rev=2 pd_length=7")) << lines[0].text;
  EXPECT_TRUE(Has(lines[0], "P2P(A)=1 Send-RTR(B)=0 IRD=4 Write-RTR(C)=1 Read-RTR(D)=0 ORD=2")) << lines[0].text;
  EXPECT_TRUE(Has(lines[0], "private(3)=abcdef")) << lines[0].text;
  EXPECT_EQ(lines[1].offset, 27u);  // after the 20-byte header and 7 bytes of private data
  EXPECT_TRUE(Has(lines[1], "ulpdu_length=14 DDP T=1 L=1") && Has(lines[1], "op=0 RDMA-Write STag=0x00000000"));
  EXPECT_TRUE(Has(lines[2], "op=3 Send") && Has(lines[2], "L=0") && Has(lines[2], "QN=0 MSN=1 MO=0 payload=10 pad=2"))
      << lines[2].text;
  EXPECT_TRUE(Has(lines[3], "MO=10 payload=7 pad=1")) << lines[3].text;
  EXPECT_TRUE(Has(lines[4], "op=1 Read-Request") && Has(lines[4], "QN=1") &&
              Has(lines[4], "sink-STag=0x00000011 sink-TO=0x0000000000000022 size=4096 src-STag=0x00000033"))
      << lines[4].text;
  EXPECT_TRUE(Has(lines[5], "op=2 Read-Response STag=0x00000055 TO=0x0000000000000066 payload=12"));
  EXPECT_TRUE(Has(lines[5], "CRC-BAD (bytes give ")) << lines[5].text;
  EXPECT_TRUE(lines[5].crc_bad);
  EXPECT_TRUE(Has(lines[6], "op=7 Terminate") && Has(lines[6], "ctrl=02020000") &&
              Has(lines[6], "layer=2 etype=0 code=0x02") && Has(lines[6], "nibbles swapped") &&
              Has(lines[6], "\"MPA: CRC error\""))
      << lines[6].text;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (i != 5) {
      EXPECT_TRUE(Has(lines[i], "crc-ok")) << lines[i].text;
    }
  }
}

TEST(DecoderTest, Rfc7306ImmediateDataAndAtomicsShowTheirHeaders) {
  Bytes s;
  auto add = [&](const Bytes& b) { s.insert(s.end(), b.begin(), b.end()); };
  Bytes immediate(wire::kImmediateBodySize);
  wire::EncodeImmediate(0x7777, immediate.data());
  add(Fpdu(Untagged(wire::Opcode::kImmediate, 0, 4, 0, true), immediate, {}));
  Bytes request(wire::kAtomicRequestBodySize);
  wire::AtomicRequestBody body;
  body.operation = static_cast<std::uint8_t>(wire::AtomicOperation::kFetchAdd);
  body.request_id = 9;
  body.stag = 0x1234;
  body.offset = 0x1000;
  body.add_or_swap = 0x10;
  wire::EncodeAtomicRequest(body, request.data());
  add(Fpdu(Untagged(wire::Opcode::kAtomicRequest, wire::kQueueAtomic, 1, 0, true), request, {}));
  Bytes response(wire::kAtomicResponseBodySize);
  wire::EncodeAtomicResponse({9, 0x100}, response.data());
  add(Fpdu(Untagged(wire::Opcode::kAtomicResponse, wire::kQueueAtomic, 1, 0, true), response, {}));
  const std::vector<Line> lines = Decode(s);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(Has(lines[0], "op=8 Imm-Data") && Has(lines[0], "QN=0 MSN=4") &&
              Has(lines[0], "immediate=0x00007777:00000000 payload=0"))
      << lines[0].text;
  EXPECT_TRUE(Has(lines[1], "op=10 Atomic-Request") && Has(lines[1], "QN=3") &&
              Has(lines[1], "FetchAdd(op=0) req-id=9 STag=0x00001234 TO=0x0000000000001000 add/swap=0x0000000000000010"))
      << lines[1].text;
  EXPECT_TRUE(Has(lines[2], "op=11 Atomic-Response") && Has(lines[2], "req-id=9 original=0x0000000000000100 payload=0"))
      << lines[2].text;
  for (const Line& line : lines) EXPECT_TRUE(Has(line, "crc-ok")) << line.text;
}

TEST(DecoderTest, RfcOrderTerminateIsReadAsIs) {
  // softdat's own CRC Terminate: layer 2 in the high nibble, M/D/R clear.
  const Bytes s = Fpdu(Untagged(wire::Opcode::kTerminate, 2, 1, 0, true), {0x20, 0x02, 0x00, 0x00}, {});
  const std::vector<Line> lines = Decode(s);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Has(lines[0], "ctrl=20020000 layer=2 etype=0 code=0x02 M=0 D=0 R=0 \"MPA: CRC error\"")) << lines[0].text;
  EXPECT_FALSE(Has(lines[0], "swapped"));
}

TEST(DecoderTest, TheStreamMayArriveInAnyPieces) {
  const Bytes bytes = Conversation();
  const std::vector<Line> whole = Decode(bytes);
  for (std::size_t piece : {1u, 3u, 17u, 64u}) {
    const std::vector<Line> cut = Decode(bytes, piece);
    ASSERT_EQ(cut.size(), whole.size()) << "pieces of " << piece;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(cut[i].text, whole[i].text);
      EXPECT_EQ(cut[i].offset, whole[i].offset);
    }
  }
}

TEST(DecoderTest, CountsFpdusAndBadCrcs) {
  const Bytes bytes = Conversation();
  StreamDecoder decoder({}, [](const Line&) {});
  decoder.Feed(bytes.data(), bytes.size());
  EXPECT_EQ(decoder.fpdus(), 6u);
  EXPECT_EQ(decoder.bad_crcs(), 1u);
  ASSERT_TRUE(decoder.mpa().has_value());
  EXPECT_TRUE(decoder.mpa()->crc);
  EXPECT_FALSE(decoder.mpa()->reply);
}

TEST(DecoderTest, CrcOffReadsZeroFieldsAsOffAndAutoSaysItCannotTell) {
  Bytes s;
  Bytes fpdu = Fpdu(Untagged(wire::Opcode::kSend, 0, 1, 0, true), {}, Bytes(4, 9));
  std::fill(fpdu.end() - 4, fpdu.end(), 0);  // what a sender without CRC puts there
  s.insert(s.end(), fpdu.begin(), fpdu.end());
  Options off;
  off.crc = CrcMode::kOff;
  EXPECT_TRUE(Has(Decode(s, SIZE_MAX, off)[0], "crc=00000000 crc-off"));
  EXPECT_TRUE(Has(Decode(s)[0], "crc-zero (CRC off, or a bad CRC"));
  Options on;
  on.crc = CrcMode::kOn;
  EXPECT_TRUE(Decode(s, SIZE_MAX, on)[0].crc_bad);
  // Negotiated by the connection's MPA frames.
  std::vector<Line> lines;
  StreamDecoder decoder({}, [&](const Line& line) { lines.push_back(line); });
  decoder.SetNegotiatedCrc(false);
  decoder.Feed(s.data(), s.size());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Has(lines[0], "crc-off"));
}

TEST(DecoderTest, PayloadBytesOnRequest) {
  Options options;
  options.payload_bytes = 4;
  const Bytes s = Fpdu(Untagged(wire::Opcode::kSend, 0, 1, 0, true), {}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(Has(Decode(s, SIZE_MAX, options)[0], "data(6)=01020304...")) << Decode(s, SIZE_MAX, options)[0].text;
}

TEST(DecoderTest, ATornLastFrameAndBytesThatAreNoFpduAreSaidSo) {
  Bytes s = Fpdu(Untagged(wire::Opcode::kSend, 0, 1, 0, true), {}, Bytes(40, 1));
  s.resize(s.size() - 5);
  std::vector<Line> lines = Decode(s);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Has(lines[0], "incomplete FPDU: 59 of 64 bytes")) << lines[0].text;
  lines = Decode(Bytes(32, 0x5A));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Has(lines[0], "not an FPDU here")) << lines[0].text;
}

TEST(DecoderTest, RejectedReplyAndShortUlpdu) {
  wire::MpaFrame reply;
  reply.reply = reply.rejected = true;
  reply.revision = 1;
  Bytes s(wire::kMpaFrameHeaderSize);
  wire::EncodeMpaFrame(reply, s.data());
  std::vector<Line> lines = Decode(s);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(Has(lines[0], "MPA Reply M=0 C=0 R=1 S=0 res=0x0 rev=1 pd_length=0") && Has(lines[0], "REJECTED"))
      << lines[0].text;
  // A Send whose ULPDU_Length (6) cannot hold its 18-byte DDP header.
  Bytes shortie = {0x00, 0x06, 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0};
  lines = Decode(shortie);
  ASSERT_GE(lines.size(), 1u);
  EXPECT_TRUE(Has(lines[0], "SHORT: ULPDU_Length 6 is less than the untagged DDP header")) << lines[0].text;
}

}  // namespace
}  // namespace softdat::tools::iwarp_dump
