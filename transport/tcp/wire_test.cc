// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The wire format against fixed vectors: RFC 5044's CRC example, a zero-length Send whose bytes
// and CRC were computed by hand from RFC 5041/5040, header round trips, MPA frames, and siw's
// nibble-swapped Terminate control word.
#include "transport/tcp/wire.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <optional>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "transport/tcp/crc32c.h"

namespace softdat::transport::tcp::wire {
namespace {

TEST(Crc32c, MatchesTheRfc3720Vectors) {
  std::array<std::uint8_t, 32> zeros{};
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  std::array<std::uint8_t, 32> ones;
  ones.fill(0xFF);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

TEST(Crc32c, CopyChecksumsWhatItCopied) {
  std::vector<std::uint8_t> from(100'000);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<std::uint8_t>(i * 7 + (i >> 8));
  std::vector<std::uint8_t> to(from.size());
  const std::uint32_t copied = Crc32cFinal(Crc32cCopy(kCrc32cInit, to.data(), from.data(), from.size()));
  EXPECT_EQ(to, from);
  EXPECT_EQ(copied, Crc32c(from.data(), from.size()));
  EXPECT_EQ(Crc32cFinal(Crc32cCopy(kCrc32cInit, to.data(), "123456789", 9)), 0xE3069283u);
}

TEST(Crc32c, PiecewiseEqualsWhole) {
  std::array<std::uint8_t, 1000> bytes;
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 3);
  std::uint32_t state = kCrc32cInit;
  state = Crc32cUpdate(state, bytes.data(), 3);
  state = Crc32cUpdate(state, bytes.data() + 3, 500);
  state = Crc32cUpdate(state, bytes.data() + 503, 497);
  EXPECT_EQ(Crc32cFinal(state), Crc32c(bytes.data(), bytes.size()));
}

// The vector-register state components the CPU tracks as in use (XINUSE: XGETBV with ECX=1), or
// nothing where it cannot say.
std::optional<std::uint64_t> VectorStateInUse() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & bit_OSXSAVE) == 0) return std::nullopt;
  if (__get_cpuid_count(0xD, 1, &a, &b, &c, &d) == 0 || (a & (1u << 2)) == 0) return std::nullopt;
  std::uint32_t low = 0, high = 0;
  asm volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(1));
  return (std::uint64_t{high} << 32) | low;
#else
  return std::nullopt;
#endif
}

// Regression: on AVX-512 CPUs ISA-L's CRC returned with the upper halves of the vector registers
// dirty, and the next legacy-SSE instruction in the framing code stalled for hundreds of cycles,
// after every CRC of 256 bytes or more. The checksum must leave that state clean (XINUSE's AVX
// and ZMM_Hi256 components, bits 2 and 6, back in their initial state).
TEST(Crc32c, LeavesTheUpperVectorStateClean) {
  constexpr std::uint64_t kUpperHalves = (1u << 2) | (1u << 6);
  if (!VectorStateInUse()) GTEST_SKIP() << "this CPU does not report which vector state is in use (XINUSE)";
  std::vector<std::uint8_t> from(65440, 0x5A), to(from.size());
  for (const std::size_t length : {std::size_t{256}, std::size_t{4096}, from.size()}) {
    (void)Crc32cUpdate(kCrc32cInit, from.data(), length);
    EXPECT_EQ(*VectorStateInUse() & kUpperHalves, 0u) << "after Crc32cUpdate of " << length << " bytes";
    (void)Crc32cCopy(kCrc32cInit, to.data(), from.data(), length);
    EXPECT_EQ(*VectorStateInUse() & kUpperHalves, 0u) << "after Crc32cCopy of " << length << " bytes";
  }
}

TEST(Fpdu, ZeroLengthSendEncodesAsComputedByHand) {
  FpduHeader header;
  header.opcode = Opcode::kSend;
  header.last = true;
  header.queue = kQueueSend;
  header.msn = 1;
  header.ulpdu_length = kUntaggedHeaderSize - kLengthFieldSize;
  std::array<std::uint8_t, kUntaggedHeaderSize> bytes{};
  ASSERT_EQ(EncodeHeader(header, bytes.data()), kUntaggedHeaderSize);
  const std::array<std::uint8_t, kUntaggedHeaderSize> expected = {0x00, 0x12, 0x41, 0x43, 0, 0, 0, 0, 0, 0,
                                                                  0,    0,    0,    0,    0, 1, 0, 0, 0, 0};
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(PadSize(header.ulpdu_length), 0u);
  const std::uint32_t crc = Crc32c(bytes.data(), bytes.size());
  // Sent little-endian: 58 7b e8 c4.
  EXPECT_EQ(crc, 0xC4E87B58u);
}

TEST(Fpdu, TaggedHeaderRoundTrips) {
  FpduHeader header;
  header.opcode = Opcode::kRdmaWrite;
  header.last = false;
  header.stag = 0x12345678;
  header.tagged_offset = 0x0102030405060708ull;
  header.ulpdu_length = 1000;
  std::array<std::uint8_t, kMaxHeaderSize> bytes{};
  ASSERT_EQ(EncodeHeader(header, bytes.data()), kTaggedHeaderSize);
  std::size_t size = 0;
  ASSERT_EQ(DecodeControl(bytes.data(), size), ControlError::kNone);
  EXPECT_EQ(size, kTaggedHeaderSize);
  FpduHeader back;
  DecodeHeader(bytes.data(), back);
  EXPECT_TRUE(back.tagged);
  EXPECT_FALSE(back.last);
  EXPECT_EQ(back.opcode, Opcode::kRdmaWrite);
  EXPECT_EQ(back.stag, header.stag);
  EXPECT_EQ(back.tagged_offset, header.tagged_offset);
  EXPECT_EQ(back.ulpdu_length, 1000);
}

TEST(Fpdu, ReadRequestRoundTripsAndHasTheLongHeader) {
  FpduHeader header;
  header.opcode = Opcode::kReadRequest;
  header.last = true;
  header.queue = kQueueReadRequest;
  header.msn = 9;
  ReadRequestBody body{0x11, 0x22, 0x33, 0x44, 0x55};
  std::array<std::uint8_t, kMaxHeaderSize> bytes{};
  EncodeHeader(header, bytes.data());
  EncodeReadRequest(body, bytes.data() + kUntaggedHeaderSize);
  std::size_t size = 0;
  ASSERT_EQ(DecodeControl(bytes.data(), size), ControlError::kNone);
  EXPECT_EQ(size, kReadRequestHeaderSize);
  ReadRequestBody back;
  DecodeReadRequest(bytes.data() + kUntaggedHeaderSize, back);
  EXPECT_EQ(back.sink_stag, 0x11u);
  EXPECT_EQ(back.sink_offset, 0x22u);
  EXPECT_EQ(back.size, 0x33u);
  EXPECT_EQ(back.source_stag, 0x44u);
  EXPECT_EQ(back.source_offset, 0x55u);
}

// RFC 7306 §4 and §5: an Atomic Request (opcode 1010b, untagged, queue 3) encoded by hand,
// field by field, and decoded back.
TEST(Fpdu, AtomicRequestEncodesAsRfc7306LaysItOut) {
  FpduHeader header;
  header.opcode = Opcode::kAtomicRequest;
  header.last = true;
  header.queue = kQueueAtomic;
  header.msn = 1;
  header.ulpdu_length = static_cast<std::uint16_t>(HeaderSize(Opcode::kAtomicRequest) - kLengthFieldSize);
  AtomicRequestBody body;
  body.operation = static_cast<std::uint8_t>(AtomicOperation::kCompareSwap);
  body.request_id = 0x01020304;
  body.stag = 0xA0B0C0D0;
  body.offset = 0x1122334455667788;
  body.add_or_swap = 0x98765;
  body.compare = 0x12345;
  std::array<std::uint8_t, kMaxHeaderSize> bytes{};
  EncodeHeader(header, bytes.data());
  EncodeAtomicRequest(body, bytes.data() + kUntaggedHeaderSize);
  const std::array<std::uint8_t, 72> expected = {
      0x00, 0x46, 0x41, 0x4A,                          // ULPDU_Length 70, L, DV 1; RV 1, opcode 10
      0x00, 0x00, 0x00, 0x00,                          // reserved (no Invalidate STag)
      0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01,  // QN 3, MSN 1
      0x00, 0x00, 0x00, 0x00,                          // MO 0
      0x00, 0x00, 0x00, 0x02,                          // reserved, AOpCode CmpSwap
      0x01, 0x02, 0x03, 0x04,                          // Request Identifier
      0xA0, 0xB0, 0xC0, 0xD0,                          // Remote STag
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  // Remote Tagged Offset
      0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x87, 0x65,  // Swap Data
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // Swap Mask
      0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x23, 0x45,  // Compare Data
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // Compare Mask
  };
  EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), expected.size()), 0);
  std::size_t size = 0;
  ASSERT_EQ(DecodeControl(bytes.data(), size), ControlError::kNone);
  EXPECT_EQ(size, 72u);
  FpduHeader decoded;
  DecodeHeader(bytes.data(), decoded);
  EXPECT_EQ(decoded.queue, kQueueAtomic);
  AtomicRequestBody back;
  DecodeAtomicRequest(bytes.data() + kUntaggedHeaderSize, back);
  EXPECT_EQ(back.operation, static_cast<std::uint8_t>(AtomicOperation::kCompareSwap));
  EXPECT_EQ(back.request_id, body.request_id);
  EXPECT_EQ(back.stag, body.stag);
  EXPECT_EQ(back.offset, body.offset);
  EXPECT_EQ(back.add_or_swap, body.add_or_swap);
  EXPECT_EQ(back.compare, body.compare);
}

TEST(Fpdu, AtomicResponseAndImmediateDataRoundTrip) {
  std::array<std::uint8_t, kAtomicResponseBodySize> response{};
  EncodeAtomicResponse(AtomicResponseBody{7, 0xFEDCBA9876543210}, response.data());
  EXPECT_EQ(response[3], 7);
  EXPECT_EQ(response[4], 0xFE);
  AtomicResponseBody back;
  DecodeAtomicResponse(response.data(), back);
  EXPECT_EQ(back.request_id, 7u);
  EXPECT_EQ(back.original, 0xFEDCBA9876543210u);
  std::array<std::uint8_t, kImmediateBodySize> immediate{};
  immediate.fill(0xEE);
  EncodeImmediate(0x7777, immediate.data());
  const std::array<std::uint8_t, kImmediateBodySize> expected = {0, 0, 0x77, 0x77, 0, 0, 0, 0};
  EXPECT_EQ(immediate, expected);
  EXPECT_EQ(DecodeImmediate(immediate.data()), 0x7777u);
  EXPECT_EQ(HeaderSize(Opcode::kImmediateSolicited), kUntaggedHeaderSize + 8);
  EXPECT_EQ(HeaderSize(Opcode::kAtomicResponse), kUntaggedHeaderSize + 12);
  EXPECT_FALSE(IsTagged(Opcode::kAtomicRequest));
}

TEST(Fpdu, BadControlBytesAreRefused) {
  std::array<std::uint8_t, 4> bytes = {0, 20, 0x41, 0x43};
  std::size_t size = 0;
  EXPECT_EQ(DecodeControl(bytes.data(), size), ControlError::kNone);
  bytes[2] = 0x42;  // DDP version 2
  EXPECT_EQ(DecodeControl(bytes.data(), size), ControlError::kDdpVersion);
  bytes[2] = 0x41;
  bytes[3] = 0x83;  // RDMAP version 2
  EXPECT_EQ(DecodeControl(bytes.data(), size), ControlError::kRdmapVersion);
  bytes[3] = 0x4C;  // opcode 12: past RFC 7306's
  EXPECT_EQ(DecodeControl(bytes.data(), size), ControlError::kOpcode);
  bytes[3] = 0x48;  // RFC 7306 Immediate Data: untagged
  EXPECT_EQ(DecodeControl(bytes.data(), size), ControlError::kNone);
  EXPECT_EQ(size, kUntaggedHeaderSize + kImmediateBodySize);
  bytes[2] = 0xC1;  // tagged Send
  bytes[3] = 0x43;
  EXPECT_EQ(DecodeControl(bytes.data(), size), ControlError::kTagMismatch);
}

TEST(Mpa, EnhancedRequestRoundTrips) {
  MpaFrame frame;
  frame.crc = true;
  frame.enhanced = true;
  frame.peer_to_peer = true;
  frame.rtr_write = true;
  frame.ird = 16;
  frame.ord = 8;
  frame.private_data_length = 5;
  std::array<std::uint8_t, kMpaFrameHeaderSize + kMpaEnhancedBlockSize> bytes{};
  ASSERT_EQ(EncodeMpaFrame(frame, bytes.data()), bytes.size());
  EXPECT_EQ(std::memcmp(bytes.data(), "MPA ID Req Frame", 16), 0);
  EXPECT_EQ(bytes[16], kMpaFlagCrc | kMpaFlagEnhanced);
  EXPECT_EQ(bytes[17], 2);
  EXPECT_EQ(bytes[19], 9);  // PD_Length counts the block
  MpaFrame back;
  std::uint16_t pd_length = 0;
  const char* why = nullptr;
  ASSERT_TRUE(DecodeMpaHeader(bytes.data(), false, back, pd_length, why));
  DecodeMpaBlock(bytes.data() + kMpaFrameHeaderSize, back);
  EXPECT_TRUE(back.crc);
  EXPECT_TRUE(back.peer_to_peer);
  EXPECT_TRUE(back.rtr_write);
  EXPECT_FALSE(back.rtr_read);
  EXPECT_EQ(back.ird, 16);
  EXPECT_EQ(back.ord, 8);
  EXPECT_EQ(back.private_data_length, 5);
  EXPECT_FALSE(DecodeMpaHeader(bytes.data(), true, back, pd_length, why)) << "a Request is not a Reply";
}

TEST(Mpa, OversizedPrivateDataIsRefused) {
  MpaFrame frame;
  frame.private_data_length = 600;
  std::array<std::uint8_t, kMpaFrameHeaderSize> bytes{};
  EncodeMpaFrame(frame, bytes.data());
  MpaFrame back;
  std::uint16_t pd_length = 0;
  const char* why = nullptr;
  EXPECT_FALSE(DecodeMpaHeader(bytes.data(), false, back, pd_length, why));
  ASSERT_NE(why, nullptr);
}

TEST(Terminate, ControlWordRoundTripsAndSiwLayoutIsUnderstood) {
  std::array<std::uint8_t, 4> bytes{};
  EncodeTerminateControl(term::kCrcError, false, bytes.data());
  EXPECT_EQ(bytes[0], 0x20);
  EXPECT_EQ(bytes[1], 0x02);
  TerminateCode back = DecodeTerminateControl(bytes.data());
  EXPECT_EQ(back.layer, TermLayer::kLlp);
  EXPECT_EQ(back.code, 0x02);
  // siw on x86 sends the nibbles swapped: "no receive buffer" (DDP, untagged) as 21 02.
  const std::array<std::uint8_t, 4> siw = {0x21, 0x02, 0x00, 0x00};
  back = DecodeTerminateControl(siw.data());
  EXPECT_EQ(back.layer, TermLayer::kDdp);
  EXPECT_EQ(back.etype, 2);
  EXPECT_STREQ(DescribeTerminate(back), "DDP: no receive buffer for the message");
  // And the RFC layout of the same error is left alone.
  EncodeTerminateControl(term::kNoBuffer, false, bytes.data());
  EXPECT_EQ(bytes[0], 0x12);
  back = DecodeTerminateControl(bytes.data());
  EXPECT_EQ(back.layer, TermLayer::kDdp);
  EXPECT_EQ(back.etype, 2);
}

}  // namespace
}  // namespace softdat::transport::tcp::wire
