// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The iWARP wire format softdat's TCP transport speaks: MPA FPDU framing (RFC 5044), DDP tagged
// and untagged headers (RFC 5041) and RDMAP opcodes, Read Request and Terminate (RFC 5040), and
// the RDMAP extensions of RFC 7306 (Immediate Data, Atomic Request and Response).
// Encoding and decoding only, on byte arrays; docs/WIRE.md describes what we send and accept.
// Multi-byte fields are big-endian, except the CRC (little-endian, as Linux writes it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace softdat::transport::tcp::wire {

// RDMAP opcodes (low nibble of byte 3 of an FPDU).
enum class Opcode : std::uint8_t {
  kRdmaWrite = 0,
  kReadRequest = 1,
  kReadResponse = 2,
  kSend = 3,
  kSendInvalidate = 4,
  kSendSolicited = 5,
  kSendSolicitedInvalidate = 6,
  kTerminate = 7,
  // RFC 7306.
  kImmediate = 8,
  kImmediateSolicited = 9,
  kAtomicRequest = 10,
  kAtomicResponse = 11,
};

// DDP queue numbers of untagged messages.
inline constexpr std::uint32_t kQueueSend = 0;
inline constexpr std::uint32_t kQueueReadRequest = 1;
inline constexpr std::uint32_t kQueueTerminate = 2;
// RFC 7306: Atomic Requests and Atomic Responses (Immediate Data messages use the Send queue).
inline constexpr std::uint32_t kQueueAtomic = 3;

// Sizes in bytes, counted from the first byte of the FPDU (the ULPDU_Length field).
inline constexpr std::size_t kLengthFieldSize = 2;
inline constexpr std::size_t kTaggedHeaderSize = 16;    // length + DDP/RDMAP tagged header
inline constexpr std::size_t kUntaggedHeaderSize = 20;  // length + DDP/RDMAP untagged header
inline constexpr std::size_t kReadRequestBodySize = 28;
inline constexpr std::size_t kReadRequestHeaderSize = kUntaggedHeaderSize + kReadRequestBodySize;
// RFC 7306 headers after the untagged DDP/RDMAP header: Immediate Data (8 bytes, of which softdat
// uses the first 4 for the InfiniBand 32-bit immediate), Atomic Request and Atomic Response.
inline constexpr std::size_t kImmediateBodySize = 8;
inline constexpr std::size_t kAtomicRequestBodySize = 52;
inline constexpr std::size_t kAtomicResponseBodySize = 12;
inline constexpr std::size_t kMaxHeaderSize = kUntaggedHeaderSize + kAtomicRequestBodySize;
inline constexpr std::size_t kCrcSize = 4;

// The CRC field (and the Terminate's), little-endian on the wire.
inline std::uint32_t LoadLe32(const std::uint8_t* at) {
  return std::uint32_t{at[0]} | std::uint32_t{at[1]} << 8 | std::uint32_t{at[2]} << 16 | std::uint32_t{at[3]} << 24;
}
inline void StoreLe32(std::uint8_t* at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::uint8_t>(value >> (8 * i));
}
// Every other multi-byte field (and the UD format's, ud_wire.h), big-endian.
inline void StoreBe16(std::uint8_t* at, std::uint16_t value) {
  at[0] = static_cast<std::uint8_t>(value >> 8);
  at[1] = static_cast<std::uint8_t>(value);
}
inline void StoreBe32(std::uint8_t* at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<std::uint8_t>(value >> (24 - 8 * i));
}
inline void StoreBe64(std::uint8_t* at, std::uint64_t value) {
  StoreBe32(at, static_cast<std::uint32_t>(value >> 32));
  StoreBe32(at + 4, static_cast<std::uint32_t>(value));
}
inline std::uint16_t LoadBe16(const std::uint8_t* at) { return static_cast<std::uint16_t>(at[0] << 8 | at[1]); }
inline std::uint32_t LoadBe32(const std::uint8_t* at) {
  return std::uint32_t{at[0]} << 24 | std::uint32_t{at[1]} << 16 | std::uint32_t{at[2]} << 8 | at[3];
}
inline std::uint64_t LoadBe64(const std::uint8_t* at) { return std::uint64_t{LoadBe32(at)} << 32 | LoadBe32(at + 4); }
// The largest ULPDU_Length we send and accept (the field is 16 bits).
inline constexpr std::size_t kMaxUlpduLength = 0xFFFF;
// Payload bytes per FPDU we send: the largest that keeps the untagged header and the frame a
// multiple of 8 below the 16-bit ULPDU_Length limit.
inline constexpr std::uint32_t kMaxFpduPayload = 65440;
// A Terminate's body: control word, DDP segment length, a DDP header and a Read Request header.
inline constexpr std::size_t kMaxTerminateBody = 4 + 2 + 18 + kReadRequestBodySize;

// The header of one FPDU, decoded.
struct FpduHeader {
  std::uint16_t ulpdu_length = 0;
  bool tagged = false;
  bool last = false;
  Opcode opcode = Opcode::kSend;
  // Tagged: sink STag and tagged offset. Untagged: invalidate STag (Send with Invalidate), queue
  // number, message sequence number and message offset.
  std::uint32_t stag = 0;
  std::uint64_t tagged_offset = 0;
  std::uint32_t queue = 0;
  std::uint32_t msn = 0;
  std::uint32_t message_offset = 0;
};

struct ReadRequestBody {
  std::uint32_t sink_stag = 0;
  std::uint64_t sink_offset = 0;
  std::uint32_t size = 0;
  std::uint32_t source_stag = 0;
  std::uint64_t source_offset = 0;
};

// RFC 7306 Atomic Request header (after the untagged header): the operation, the requester's
// identifier (echoed by the response), the target and the operands, 64-bit, big-endian.
enum class AtomicOperation : std::uint8_t { kFetchAdd = 0, kCompareSwap = 2 };
struct AtomicRequestBody {
  std::uint8_t operation = 0;  // AtomicOperation (the low 4 bits of the first word)
  std::uint32_t request_id = 0;
  std::uint32_t stag = 0;
  std::uint64_t offset = 0;
  std::uint64_t add_or_swap = 0;
  std::uint64_t add_or_swap_mask = 0;
  std::uint64_t compare = 0;
  std::uint64_t compare_mask = 0;
};
struct AtomicResponseBody {
  std::uint32_t request_id = 0;
  std::uint64_t original = 0;  // the remote data value before the operation
};

// Why DecodeControl refused the first bytes of an FPDU.
enum class ControlError : std::uint8_t { kNone, kDdpVersion, kRdmapVersion, kOpcode, kTagMismatch };

// Looks at the first 4 bytes (length, DDP control, RDMAP control): the full header size this FPDU
// has (HeaderSize of its opcode: the tagged or untagged header, and for a Read Request, an
// Immediate Data message or an atomic, the RDMAP header that follows).
ControlError DecodeControl(const std::uint8_t* bytes, std::size_t& header_size);
// Decodes a full header whose size DecodeControl gave.
void DecodeHeader(const std::uint8_t* bytes, FpduHeader& out);
void DecodeReadRequest(const std::uint8_t* bytes, ReadRequestBody& out);
void DecodeAtomicRequest(const std::uint8_t* bytes, AtomicRequestBody& out);
void DecodeAtomicResponse(const std::uint8_t* bytes, AtomicResponseBody& out);
// The InfiniBand 32-bit immediate of an Immediate Data header (its first 4 bytes).
std::uint32_t DecodeImmediate(const std::uint8_t* bytes);

// Encodes a header into `bytes` (kTaggedHeaderSize or kUntaggedHeaderSize bytes, by opcode);
// returns its size.
std::size_t EncodeHeader(const FpduHeader& header, std::uint8_t* bytes);
void EncodeReadRequest(const ReadRequestBody& body, std::uint8_t* bytes);
void EncodeAtomicRequest(const AtomicRequestBody& body, std::uint8_t* bytes);
void EncodeAtomicResponse(const AtomicResponseBody& body, std::uint8_t* bytes);
// The 8 bytes of Immediate Data: `immediate`, then 4 zero bytes.
void EncodeImmediate(std::uint32_t immediate, std::uint8_t* bytes);

bool IsTagged(Opcode opcode);
// The Send opcode of a Send posted with these flags.
inline Opcode SendOpcode(bool solicited, bool invalidate) {
  if (solicited) return invalidate ? Opcode::kSendSolicitedInvalidate : Opcode::kSendSolicited;
  return invalidate ? Opcode::kSendInvalidate : Opcode::kSend;
}
std::size_t HeaderSize(Opcode opcode);
// Zero bytes that make 2 + ulpdu_length a multiple of 4.
inline std::size_t PadSize(std::size_t ulpdu_length) { return (4 - ((2 + ulpdu_length) & 3)) & 3; }

// Terminate (RFC 5040 §4.8): layer, error type and code of the first word.
enum class TermLayer : std::uint8_t { kRdmap = 0, kDdp = 1, kLlp = 2 };
struct TerminateCode {
  TermLayer layer = TermLayer::kLlp;
  std::uint8_t etype = 0;
  std::uint8_t code = 0;
};
// RDMAP remote protection (etype 1) and remote operation (etype 2) codes, DDP tagged (etype 1)
// and untagged (etype 2) codes, LLP codes (etype 0) that softdat sends.
namespace term {
inline constexpr TerminateCode kInvalidStag{TermLayer::kRdmap, 1, 0x00};
inline constexpr TerminateCode kBaseBounds{TermLayer::kRdmap, 1, 0x01};
inline constexpr TerminateCode kAccessRights{TermLayer::kRdmap, 1, 0x02};
inline constexpr TerminateCode kStagNotAssociated{TermLayer::kRdmap, 1, 0x03};
inline constexpr TerminateCode kBadOpcode{TermLayer::kRdmap, 2, 0x06};
inline constexpr TerminateCode kStreamCatastrophic{TermLayer::kRdmap, 2, 0x07};
inline constexpr TerminateCode kDdpTaggedInvalidStag{TermLayer::kDdp, 1, 0x00};
inline constexpr TerminateCode kDdpTaggedBounds{TermLayer::kDdp, 1, 0x01};
inline constexpr TerminateCode kDdpVersion{TermLayer::kDdp, 1, 0x04};
inline constexpr TerminateCode kInvalidQueue{TermLayer::kDdp, 2, 0x01};
inline constexpr TerminateCode kNoBuffer{TermLayer::kDdp, 2, 0x02};
inline constexpr TerminateCode kMsnRange{TermLayer::kDdp, 2, 0x03};
inline constexpr TerminateCode kBadMessageOffset{TermLayer::kDdp, 2, 0x04};
inline constexpr TerminateCode kMessageTooLong{TermLayer::kDdp, 2, 0x05};
inline constexpr TerminateCode kCrcError{TermLayer::kLlp, 0, 0x02};
inline constexpr TerminateCode kBadFraming{TermLayer::kLlp, 0, 0x03};
}  // namespace term

// The Terminate's first word (RFC bit order: layer in the top nibble of byte 0).
void EncodeTerminateControl(TerminateCode code, bool with_ddp_header, std::uint8_t* bytes);
// Decodes it, accepting the nibble-swapped layout Linux siw sends on little-endian hosts.
TerminateCode DecodeTerminateControl(const std::uint8_t* bytes);
const char* DescribeTerminate(TerminateCode code);

// MPA Request and Reply frames (RFC 5044 §7.1, RFC 6581 §9).
inline constexpr std::uint16_t kMaxIrdOrd = 0x3FFF;  // the RFC 6581 block's 14-bit IRD and ORD
inline constexpr std::size_t kMpaFrameHeaderSize = 20;
inline constexpr std::size_t kMpaEnhancedBlockSize = 4;
inline constexpr std::size_t kMaxMpaPrivateData = 512;  // PD_Length limit, block included
inline constexpr std::uint8_t kMpaFlagMarkers = 0x80;
inline constexpr std::uint8_t kMpaFlagCrc = 0x40;
inline constexpr std::uint8_t kMpaFlagReject = 0x20;
inline constexpr std::uint8_t kMpaFlagEnhanced = 0x10;

struct MpaFrame {
  bool reply = false;
  bool markers = false;
  bool crc = false;
  bool rejected = false;
  bool enhanced = false;  // the RFC 6581 block leads the private data
  std::uint8_t revision = 2;
  // RFC 6581 block, when enhanced.
  bool peer_to_peer = false;
  bool rtr_send = false;
  bool rtr_write = false;
  bool rtr_read = false;
  std::uint16_t ird = 0;
  std::uint16_t ord = 0;
  std::uint16_t private_data_length = 0;  // the consumer's private data, block excluded
};

// Writes the 20-byte header and, when enhanced, the block after it; returns the bytes written
// (the consumer's private data goes right after).
std::size_t EncodeMpaFrame(const MpaFrame& frame, std::uint8_t* bytes);
// Decodes the 20-byte header; the PD_Length bytes that follow are read afterwards and
// DecodeMpaBlock takes the block out of them. False with a reason for a frame we refuse.
bool DecodeMpaHeader(const std::uint8_t* bytes, bool expect_reply, MpaFrame& out, std::uint16_t& pd_length,
                     const char*& why);
// For an enhanced frame: reads the block from the first 4 private-data bytes.
void DecodeMpaBlock(const std::uint8_t* bytes, MpaFrame& frame);

}  // namespace softdat::transport::tcp::wire
