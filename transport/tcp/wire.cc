// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Byte-level encoding of MPA, DDP and RDMAP headers. Field offsets follow the tables of
// /docs/WIRE.md (from RFC 5040/5041/5044/6581).
#include "transport/tcp/wire.h"

#include <cstring>
#include <utility>

namespace softdat::transport::tcp::wire {
namespace {

constexpr std::uint8_t kDdpTagged = 0x80;
constexpr std::uint8_t kDdpLast = 0x40;
constexpr std::uint8_t kDdpVersionMask = 0x03;
constexpr std::uint8_t kDdpVersion = 1;
constexpr std::uint8_t kRdmapVersionMask = 0xC0;
constexpr std::uint8_t kRdmapVersion = 0x40;
constexpr std::uint8_t kOpcodeMask = 0x0F;

constexpr char kRequestKey[] = "MPA ID Req Frame";
constexpr char kReplyKey[] = "MPA ID Rep Frame";
constexpr std::size_t kKeySize = 16;

}  // namespace

bool IsTagged(Opcode opcode) { return opcode == Opcode::kRdmaWrite || opcode == Opcode::kReadResponse; }

std::size_t HeaderSize(Opcode opcode) {
  switch (opcode) {
    case Opcode::kRdmaWrite:
    case Opcode::kReadResponse: return kTaggedHeaderSize;
    case Opcode::kReadRequest: return kReadRequestHeaderSize;
    case Opcode::kImmediate:
    case Opcode::kImmediateSolicited: return kUntaggedHeaderSize + kImmediateBodySize;
    case Opcode::kAtomicRequest: return kUntaggedHeaderSize + kAtomicRequestBodySize;
    case Opcode::kAtomicResponse: return kUntaggedHeaderSize + kAtomicResponseBodySize;
    default: return kUntaggedHeaderSize;
  }
}

ControlError DecodeControl(const std::uint8_t* bytes, std::size_t& header_size) {
  const std::uint8_t ddp = bytes[2];
  const std::uint8_t rdmap = bytes[3];
  if ((ddp & kDdpVersionMask) != kDdpVersion) return ControlError::kDdpVersion;
  if ((rdmap & kRdmapVersionMask) != kRdmapVersion) return ControlError::kRdmapVersion;
  const std::uint8_t opcode = rdmap & kOpcodeMask;
  if (opcode > static_cast<std::uint8_t>(Opcode::kAtomicResponse)) return ControlError::kOpcode;
  if (((ddp & kDdpTagged) != 0) != IsTagged(static_cast<Opcode>(opcode))) return ControlError::kTagMismatch;
  header_size = HeaderSize(static_cast<Opcode>(opcode));
  return ControlError::kNone;
}

void DecodeHeader(const std::uint8_t* bytes, FpduHeader& out) {
  out.ulpdu_length = LoadBe16(bytes);
  out.tagged = (bytes[2] & kDdpTagged) != 0;
  out.last = (bytes[2] & kDdpLast) != 0;
  out.opcode = static_cast<Opcode>(bytes[3] & kOpcodeMask);
  out.stag = LoadBe32(bytes + 4);
  if (out.tagged) {
    out.tagged_offset = LoadBe64(bytes + 8);
    out.queue = out.msn = out.message_offset = 0;
  } else {
    out.tagged_offset = 0;
    out.queue = LoadBe32(bytes + 8);
    out.msn = LoadBe32(bytes + 12);
    out.message_offset = LoadBe32(bytes + 16);
  }
}

void DecodeReadRequest(const std::uint8_t* bytes, ReadRequestBody& out) {
  out.sink_stag = LoadBe32(bytes);
  out.sink_offset = LoadBe64(bytes + 4);
  out.size = LoadBe32(bytes + 12);
  out.source_stag = LoadBe32(bytes + 16);
  out.source_offset = LoadBe64(bytes + 20);
}

void DecodeAtomicRequest(const std::uint8_t* bytes, AtomicRequestBody& out) {
  out.operation = bytes[3] & 0x0F;  // Reserved (28 bits), then the operation code
  out.request_id = LoadBe32(bytes + 4);
  out.stag = LoadBe32(bytes + 8);
  out.offset = LoadBe64(bytes + 12);
  out.add_or_swap = LoadBe64(bytes + 20);
  out.add_or_swap_mask = LoadBe64(bytes + 28);
  out.compare = LoadBe64(bytes + 36);
  out.compare_mask = LoadBe64(bytes + 44);
}

void DecodeAtomicResponse(const std::uint8_t* bytes, AtomicResponseBody& out) {
  out.request_id = LoadBe32(bytes);
  out.original = LoadBe64(bytes + 4);
}

std::uint32_t DecodeImmediate(const std::uint8_t* bytes) { return LoadBe32(bytes); }

void EncodeAtomicRequest(const AtomicRequestBody& body, std::uint8_t* bytes) {
  StoreBe32(bytes, body.operation & 0x0Fu);
  StoreBe32(bytes + 4, body.request_id);
  StoreBe32(bytes + 8, body.stag);
  StoreBe64(bytes + 12, body.offset);
  StoreBe64(bytes + 20, body.add_or_swap);
  StoreBe64(bytes + 28, body.add_or_swap_mask);
  StoreBe64(bytes + 36, body.compare);
  StoreBe64(bytes + 44, body.compare_mask);
}

void EncodeAtomicResponse(const AtomicResponseBody& body, std::uint8_t* bytes) {
  StoreBe32(bytes, body.request_id);
  StoreBe64(bytes + 4, body.original);
}

void EncodeImmediate(std::uint32_t immediate, std::uint8_t* bytes) {
  StoreBe32(bytes, immediate);
  StoreBe32(bytes + 4, 0);
}

std::size_t EncodeHeader(const FpduHeader& header, std::uint8_t* bytes) {
  const bool tagged = IsTagged(header.opcode);
  StoreBe16(bytes, header.ulpdu_length);
  bytes[2] = static_cast<std::uint8_t>((tagged ? kDdpTagged : 0) | (header.last ? kDdpLast : 0) | kDdpVersion);
  bytes[3] = static_cast<std::uint8_t>(kRdmapVersion | static_cast<std::uint8_t>(header.opcode));
  StoreBe32(bytes + 4, header.stag);
  if (tagged) {
    StoreBe64(bytes + 8, header.tagged_offset);
    return kTaggedHeaderSize;
  }
  StoreBe32(bytes + 8, header.queue);
  StoreBe32(bytes + 12, header.msn);
  StoreBe32(bytes + 16, header.message_offset);
  return kUntaggedHeaderSize;
}

void EncodeReadRequest(const ReadRequestBody& body, std::uint8_t* bytes) {
  StoreBe32(bytes, body.sink_stag);
  StoreBe64(bytes + 4, body.sink_offset);
  StoreBe32(bytes + 12, body.size);
  StoreBe32(bytes + 16, body.source_stag);
  StoreBe64(bytes + 20, body.source_offset);
}

void EncodeTerminateControl(TerminateCode code, bool with_ddp_header, std::uint8_t* bytes) {
  bytes[0] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(code.layer) << 4 | (code.etype & 0x0F));
  bytes[1] = code.code;
  bytes[2] = with_ddp_header ? 0xC0 : 0x00;  // M (segment length valid) and D (DDP header included)
  bytes[3] = 0;
}

TerminateCode DecodeTerminateControl(const std::uint8_t* bytes) {
  std::uint8_t layer = bytes[0] >> 4;
  std::uint8_t etype = bytes[0] & 0x0F;
  // siw on little-endian hosts swaps the nibbles. Swap back when the RFC reading is impossible
  // (no layer above 2; LLP errors have type 0) and the swapped one is not; 0x02 stays ambiguous
  // (RDMAP type 2, or siw's LLP CRC error) and is read the RFC way.
  const bool impossible = layer > 2 || (layer == 2 && etype != 0);
  const bool swapped_possible = etype <= 2 && !(etype == 2 && layer != 0);
  if (impossible && swapped_possible) std::swap(layer, etype);
  return TerminateCode{static_cast<TermLayer>(layer > 2 ? 2 : layer), etype, bytes[1]};
}

const char* DescribeTerminate(TerminateCode code) {
  switch (code.layer) {
    case TermLayer::kRdmap:
      if (code.etype == 1) {
        switch (code.code) {
          case 0x00: return "RDMAP: invalid STag";
          case 0x01: return "RDMAP: base or bounds violation";
          case 0x02: return "RDMAP: access rights violation";
          case 0x03: return "RDMAP: STag not associated with this stream";
          case 0x04: return "RDMAP: tagged offset wrap";
          default: return "RDMAP: remote protection error";
        }
      }
      if (code.etype == 2 && code.code == 0x06) return "RDMAP: invalid opcode";
      if (code.etype == 2 && code.code == 0x07) return "RDMAP: catastrophic error, localized to this stream";
      return "RDMAP: remote operation error";
    case TermLayer::kDdp:
      if (code.etype == 1) return code.code == 0x01 ? "DDP: tagged base or bounds" : "DDP: tagged buffer error";
      if (code.etype == 2) {
        switch (code.code) {
          case 0x01: return "DDP: invalid queue number";
          case 0x02: return "DDP: no receive buffer for the message";
          case 0x03: return "DDP: message sequence number out of range";
          case 0x04: return "DDP: invalid message offset";
          case 0x05: return "DDP: message too long for the receive buffer";
          default: return "DDP: untagged buffer error";
        }
      }
      return "DDP: catastrophic error";
    case TermLayer::kLlp:
      if (code.code == 0x02) return "MPA: CRC error";
      if (code.code == 0x03) return "MPA: framing error";
      return "MPA/TCP error";
  }
  return "unknown";
}

std::size_t EncodeMpaFrame(const MpaFrame& frame, std::uint8_t* bytes) {
  std::memcpy(bytes, frame.reply ? kReplyKey : kRequestKey, kKeySize);
  bytes[16] = static_cast<std::uint8_t>((frame.markers ? kMpaFlagMarkers : 0) | (frame.crc ? kMpaFlagCrc : 0) |
                                        (frame.rejected ? kMpaFlagReject : 0) |
                                        (frame.enhanced ? kMpaFlagEnhanced : 0));
  bytes[17] = frame.revision;
  const std::size_t block = frame.enhanced ? kMpaEnhancedBlockSize : 0;
  StoreBe16(bytes + 18, static_cast<std::uint16_t>(frame.private_data_length + block));
  if (!frame.enhanced) return kMpaFrameHeaderSize;
  std::uint8_t* b = bytes + kMpaFrameHeaderSize;
  StoreBe16(b, static_cast<std::uint16_t>((frame.peer_to_peer ? 0x8000 : 0) | (frame.rtr_send ? 0x4000 : 0) |
                                      (frame.ird & kMaxIrdOrd)));
  StoreBe16(b + 2, static_cast<std::uint16_t>((frame.rtr_write ? 0x8000 : 0) | (frame.rtr_read ? 0x4000 : 0) |
                                          (frame.ord & kMaxIrdOrd)));
  return kMpaFrameHeaderSize + block;
}

bool DecodeMpaHeader(const std::uint8_t* bytes, bool expect_reply, MpaFrame& out, std::uint16_t& pd_length,
                     const char*& why) {
  if (std::memcmp(bytes, expect_reply ? kReplyKey : kRequestKey, kKeySize) != 0) {
    why = expect_reply ? "not an MPA Reply frame (bad key)" : "not an MPA Request frame (bad key)";
    return false;
  }
  out = MpaFrame{};
  out.reply = expect_reply;
  out.markers = (bytes[16] & kMpaFlagMarkers) != 0;
  out.crc = (bytes[16] & kMpaFlagCrc) != 0;
  out.rejected = expect_reply && (bytes[16] & kMpaFlagReject) != 0;
  out.revision = bytes[17];
  out.enhanced = out.revision >= 2 && (bytes[16] & kMpaFlagEnhanced) != 0;
  pd_length = LoadBe16(bytes + 18);
  if (out.revision < 1 || out.revision > 2) {
    why = "unsupported MPA revision";
    return false;
  }
  if (pd_length > kMaxMpaPrivateData) {
    why = "MPA private data longer than 512 bytes";
    return false;
  }
  if (out.enhanced && pd_length < kMpaEnhancedBlockSize) {
    why = "enhanced MPA frame without its IRD/ORD block";
    return false;
  }
  out.private_data_length = static_cast<std::uint16_t>(pd_length - (out.enhanced ? kMpaEnhancedBlockSize : 0));
  return true;
}

void DecodeMpaBlock(const std::uint8_t* bytes, MpaFrame& frame) {
  const std::uint16_t first = LoadBe16(bytes);
  const std::uint16_t second = LoadBe16(bytes + 2);
  frame.peer_to_peer = (first & 0x8000) != 0;
  frame.rtr_send = frame.peer_to_peer && (first & 0x4000) != 0;
  frame.ird = first & kMaxIrdOrd;
  frame.rtr_write = frame.peer_to_peer && (second & 0x8000) != 0;
  frame.rtr_read = frame.peer_to_peer && (second & 0x4000) != 0;
  frame.ord = second & kMaxIrdOrd;
}

}  // namespace softdat::transport::tcp::wire
