// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Decoding one direction of an iWARP stream into lines (see decoder.h).
#include "tools/iwarp_dump/decoder.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "transport/tcp/crc32c.h"
#include "transport/tcp/wire.h"

namespace softdat::tools::iwarp_dump {
namespace {

namespace wire = transport::tcp::wire;

constexpr char kRequestKey[] = "MPA ID Req Frame";
constexpr char kReplyKey[] = "MPA ID Rep Frame";
constexpr std::size_t kKeySize = 16;

std::uint16_t Get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
std::uint32_t Get32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}
std::uint64_t Get64(const std::uint8_t* p) { return std::uint64_t{Get32(p)} << 32 | Get32(p + 4); }

// printf into a std::string.
template <typename... Args>
void Add(std::string& out, const char* format, Args... args) {
  char piece[256];
  std::snprintf(piece, sizeof piece, format, args...);
  out += piece;
}

void AddHex(std::string& out, const char* name, const std::uint8_t* bytes, std::size_t length, std::size_t max) {
  Add(out, " %s(%zu)=", name, length);
  for (std::size_t i = 0; i < length && i < max; ++i) Add(out, "%02x", bytes[i]);
  if (length > max) out += "...";
}

const char* OpcodeName(std::uint8_t opcode) {
  static const char* const kNames[] = {"RDMA-Write", "Read-Request", "Read-Response", "Send", "Send-Inv",
                                       "Send-SE", "Send-SE-Inv", "Terminate", "Imm-Data", "Imm-Data-SE",
                                       "Atomic-Request", "Atomic-Response"};
  return opcode < std::size(kNames) ? kNames[opcode] : "reserved-opcode";
}

// The RFC 6581 block of an enhanced MPA frame.
void AddEnhancedBlock(std::string& out, const std::uint8_t* b) {
  const std::uint16_t first = Get16(b);
  const std::uint16_t second = Get16(b + 2);
  Add(out, " | P2P(A)=%d Send-RTR(B)=%d IRD=%u Write-RTR(C)=%d Read-RTR(D)=%d ORD=%u", first >> 15,
      (first >> 14) & 1, first & 0x3FFF, second >> 15, (second >> 14) & 1, second & 0x3FFF);
}

// Whether layer/etype/code is a Terminate code the RFCs define (RFC 5040 §4.8, 5041 §7.2, 5044 §8
// and 6581 §8).
bool ValidTerminate(unsigned layer, unsigned etype, unsigned code) {
  switch (layer) {
    case 0:  // RDMAP
      if (etype == 0) return code == 0;
      if (etype == 1) return code <= 0x04 || code == 0x09 || code == 0xFF;
      if (etype == 2) return (code >= 0x05 && code <= 0x09) || code == 0xFF;
      return false;
    case 1:  // DDP
      if (etype == 0) return code == 0;
      if (etype == 1) return code <= 0x04;
      if (etype == 2) return code >= 0x01 && code <= 0x06;
      return false;
    case 2:  // LLP (MPA)
      return etype == 0 && code >= 0x01 && code <= 0x07;
    default:
      return false;
  }
}

// The Terminate body: control word both ways, then the copied headers the flags announce.
void AddTerminate(std::string& out, const std::uint8_t* body, std::size_t length) {
  if (length < 4) {
    Add(out, " terminate-body-short(%zu)", length);
    return;
  }
  Add(out, " ctrl=%02x%02x%02x%02x", body[0], body[1], body[2], body[3]);
  const unsigned rfc_layer = body[0] >> 4, rfc_etype = body[0] & 0x0F;
  // RFC order, unless only the nibble-swapped reading names a code RFC 5040/5041/5044 define:
  // Linux siw writes the word as a little-endian bitfield (so LLP/CRC goes out as 02 02).
  const bool swapped = !ValidTerminate(rfc_layer, rfc_etype, body[1]) && ValidTerminate(rfc_etype, rfc_layer, body[1]);
  const wire::TerminateCode read{static_cast<wire::TermLayer>(swapped ? rfc_etype : std::min(rfc_layer, 2u)),
                                 static_cast<std::uint8_t>(swapped ? rfc_layer : rfc_etype), body[1]};
  Add(out, " layer=%u etype=%u code=0x%02x", swapped ? rfc_etype : rfc_layer, read.etype, read.code);
  if (swapped) Add(out, " (nibbles swapped, as Linux siw sends it; RFC order reads layer=%u etype=%u)", rfc_layer, rfc_etype);
  // M, D and R: RFC order at 0x80/0x40/0x20 of byte 2; siw's little-endian bitfield puts them at
  // 0x01/0x02/0x04. Take whichever layout the control word had.
  const bool m = swapped ? (body[2] & 0x01) != 0 : (body[2] & 0x80) != 0;
  const bool d = swapped ? (body[2] & 0x02) != 0 : (body[2] & 0x40) != 0;
  const bool r = swapped ? (body[2] & 0x04) != 0 : (body[2] & 0x20) != 0;
  Add(out, " M=%d D=%d R=%d \"%s\"", m, d, r, wire::DescribeTerminate(read));
  std::size_t at = 4;
  if (m && length >= at + 2) {
    Add(out, " ddp-segment-length=%u", Get16(body + at));
    at += 2;
  }
  if (d && length > at) {
    const std::size_t ddp = (body[at] & 0x80) != 0 ? 14 : 18;  // tagged or untagged DDP header
    AddHex(out, "ddp-header", body + at, std::min(ddp, length - at), 18);
    at += ddp;
  }
  if (r && length > at) AddHex(out, "rdma-header", body + at, std::min<std::size_t>(28, length - at), 28);
}

}  // namespace

std::optional<MpaSummary> PeekMpa(const std::uint8_t* bytes, std::size_t length) {
  if (length < wire::kMpaFrameHeaderSize) return std::nullopt;
  const bool request = std::memcmp(bytes, kRequestKey, kKeySize) == 0;
  const bool reply = std::memcmp(bytes, kReplyKey, kKeySize) == 0;
  if (!request && !reply) return std::nullopt;
  MpaSummary s;
  s.reply = reply;
  s.markers = (bytes[16] & wire::kMpaFlagMarkers) != 0;
  s.crc = (bytes[16] & wire::kMpaFlagCrc) != 0;
  s.rejected = reply && (bytes[16] & wire::kMpaFlagReject) != 0;
  return s;
}

void StreamDecoder::Emit(std::uint64_t length, std::string text, bool crc_bad) {
  sink_(Line{offset_, offset_ + length, std::move(text), crc_bad});
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(length));
  offset_ += length;
}

void StreamDecoder::Feed(const std::uint8_t* bytes, std::size_t length) {
  buffer_.insert(buffer_.end(), bytes, bytes + length);
  while (!lost_) {
    if (!started_) {
      if (!TryMpa()) return;
      continue;
    }
    if (!TryFpdu()) return;
  }
}

bool StreamDecoder::TryMpa() {
  const std::uint8_t* b = buffer_.data();
  const std::size_t seen = std::min(buffer_.size(), kKeySize);
  const bool request = std::memcmp(b, kRequestKey, seen) == 0;
  const bool reply = std::memcmp(b, kReplyKey, seen) == 0;
  if (!request && !reply) {
    started_ = true;  // no MPA frame: FPDUs from the first byte
    return true;
  }
  if (buffer_.size() < kKeySize) return false;
  if (buffer_.size() < wire::kMpaFrameHeaderSize) return false;
  const std::uint16_t pd_length = Get16(b + 18);
  if (buffer_.size() < wire::kMpaFrameHeaderSize + pd_length) return false;
  mpa_ = PeekMpa(b, buffer_.size());
  const std::uint8_t flags = b[16];
  const std::uint8_t revision = b[17];
  std::string text = request ? "MPA Request" : "MPA Reply";
  Add(text, " M=%d C=%d R=%d S=%d res=0x%x rev=%u pd_length=%u", flags >> 7, (flags >> 6) & 1, (flags >> 5) & 1,
      (flags >> 4) & 1, flags & 0x0F, revision, pd_length);
  const bool enhanced = revision >= 2 && (flags & wire::kMpaFlagEnhanced) != 0;
  std::size_t block = 0;
  if (enhanced && pd_length >= wire::kMpaEnhancedBlockSize) {
    AddEnhancedBlock(text, b + wire::kMpaFrameHeaderSize);
    block = wire::kMpaEnhancedBlockSize;
  } else if (enhanced) {
    text += " | enhanced but PD_Length < 4: no IRD/ORD block";
  }
  AddHex(text, "private", b + wire::kMpaFrameHeaderSize + block, pd_length - block, 64);
  if ((flags & wire::kMpaFlagReject) != 0 && reply) text += " REJECTED";
  if ((flags & wire::kMpaFlagMarkers) != 0) text += " (markers asked: the FPDUs below are decoded without them)";
  Emit(wire::kMpaFrameHeaderSize + pd_length, std::move(text));
  started_ = true;
  return true;
}

bool StreamDecoder::TryFpdu() {
  if (buffer_.size() < 2) return false;
  const std::uint8_t* b = buffer_.data();
  const std::uint16_t ulpdu_length = Get16(b);
  const std::size_t covered = 2 + ulpdu_length + wire::PadSize(ulpdu_length);
  const std::size_t total = covered + wire::kCrcSize;
  if (buffer_.size() < 4) return false;
  const std::uint8_t ddp = b[2], rdmap = b[3];
  // A DDP or RDMAP version other than 1 means this is not where an FPDU starts: the lengths can
  // no longer be trusted, so stop rather than print noise.
  if ((ddp & 0x03) != 1 || (rdmap >> 6) != 1 || ulpdu_length < 2) {
    std::string text;
    Add(text, "not an FPDU here: ULPDU_Length=%u DDP-control=0x%02x RDMAP-control=0x%02x (framing lost; the rest is not decoded)",
        ulpdu_length, ddp, rdmap);
    lost_ = true;
    sink_(Line{offset_, offset_ + buffer_.size(), std::move(text), false});
    return false;
  }
  if (buffer_.size() < total) return false;
  const bool tagged = (ddp & 0x80) != 0;
  const std::uint8_t opcode = rdmap & 0x0F;
  std::string text = "FPDU";
  Add(text, " ulpdu_length=%u DDP T=%d L=%d rsvd=0x%x DV=%u RDMAP RV=%u rsvd=%u op=%u %s", ulpdu_length, tagged,
      (ddp >> 6) & 1, (ddp >> 2) & 0x0F, ddp & 0x03, rdmap >> 6, (rdmap >> 4) & 0x03, opcode, OpcodeName(opcode));
  const std::size_t header = tagged ? wire::kTaggedHeaderSize : wire::kUntaggedHeaderSize;
  std::size_t body_at = header;
  if (std::size_t{2} + ulpdu_length < header) {
    Add(text, " SHORT: ULPDU_Length %u is less than the %s DDP header", ulpdu_length, tagged ? "tagged" : "untagged");
    body_at = std::size_t{2} + ulpdu_length;
  } else if (tagged) {
    Add(text, " STag=0x%08x TO=0x%016" PRIx64, Get32(b + 4), Get64(b + 8));
  } else {
    Add(text, " %s=0x%08x QN=%u MSN=%u MO=%u", opcode == 4 || opcode == 6 ? "Inv-STag" : "rsvdULP", Get32(b + 4),
        Get32(b + 8), Get32(b + 12), Get32(b + 16));
  }
  const std::size_t end = 2 + ulpdu_length;  // one past the ULPDU
  if (opcode == 1 && !tagged) {
    if (end >= body_at + wire::kReadRequestBodySize) {
      const std::uint8_t* r = b + body_at;
      Add(text, " sink-STag=0x%08x sink-TO=0x%016" PRIx64 " size=%u src-STag=0x%08x src-TO=0x%016" PRIx64, Get32(r),
          Get64(r + 4), Get32(r + 12), Get32(r + 16), Get64(r + 20));
      body_at += wire::kReadRequestBodySize;
    } else {
      text += " SHORT: no room for the Read Request header";
      body_at = end;
    }
  } else if (opcode == 7 && !tagged && end > body_at) {
    AddTerminate(text, b + body_at, end - body_at);
    body_at = end;
  } else if ((opcode == 8 || opcode == 9) && !tagged) {
    // RFC 7306 Immediate Data: 8 bytes; softdat carries InfiniBand's 32-bit immediate in the first 4.
    if (end >= body_at + wire::kImmediateBodySize) {
      Add(text, " immediate=0x%08x:%08x", Get32(b + body_at), Get32(b + body_at + 4));
      body_at += wire::kImmediateBodySize;
    } else {
      text += " SHORT: no room for the Immediate Data";
      body_at = end;
    }
  } else if (opcode == 10 && !tagged) {
    if (end >= body_at + wire::kAtomicRequestBodySize) {
      wire::AtomicRequestBody a;
      wire::DecodeAtomicRequest(b + body_at, a);
      const char* what = a.operation == 0 ? "FetchAdd" : a.operation == 2 ? "CmpSwap" : "reserved-atomic-op";
      Add(text, " %s(op=%u) req-id=%u STag=0x%08x TO=0x%016" PRIx64 " add/swap=0x%016" PRIx64
                " add/swap-mask=0x%016" PRIx64 " compare=0x%016" PRIx64 " compare-mask=0x%016" PRIx64,
          what, a.operation, a.request_id, a.stag, a.offset, a.add_or_swap, a.add_or_swap_mask, a.compare,
          a.compare_mask);
      body_at += wire::kAtomicRequestBodySize;
    } else {
      text += " SHORT: no room for the Atomic Request header";
      body_at = end;
    }
  } else if (opcode == 11 && !tagged) {
    if (end >= body_at + wire::kAtomicResponseBodySize) {
      wire::AtomicResponseBody r;
      wire::DecodeAtomicResponse(b + body_at, r);
      Add(text, " req-id=%u original=0x%016" PRIx64, r.request_id, r.original);
      body_at += wire::kAtomicResponseBodySize;
    } else {
      text += " SHORT: no room for the Atomic Response header";
      body_at = end;
    }
  }
  const std::size_t payload = end > body_at ? end - body_at : 0;
  Add(text, " payload=%zu pad=%zu", payload, covered - end);
  if (options_.payload_bytes > 0 && payload > 0) AddHex(text, "data", b + body_at, payload, options_.payload_bytes);
  // The CRC field: CRC32c of everything before it, sent little-endian (docs/WIRE.md).
  const std::uint8_t* f = b + covered;
  const std::uint32_t field = std::uint32_t{f[0]} | std::uint32_t{f[1]} << 8 | std::uint32_t{f[2]} << 16 |
                              std::uint32_t{f[3]} << 24;
  const std::uint32_t computed = transport::tcp::Crc32c(b, covered);
  Add(text, " crc=%08x", field);
  bool bad = false;
  const std::optional<bool> crc = options_.crc == CrcMode::kOn    ? std::optional<bool>(true)
                                  : options_.crc == CrcMode::kOff ? std::optional<bool>(false)
                                                                  : negotiated_crc_;
  if (crc.has_value() && !*crc) {
    text += field == 0 ? " crc-off" : " crc-off (field not checked)";
  } else if (field == computed) {
    text += " crc-ok";
  } else if (!crc.has_value() && field == 0) {
    text += " crc-zero (CRC off, or a bad CRC; say --crc=on|off)";
  } else {
    Add(text, " CRC-BAD (bytes give %08x)", computed);
    bad = true;
  }
  ++fpdus_;
  if (bad) ++bad_crcs_;
  Emit(total, std::move(text), bad);
  return true;
}

void StreamDecoder::Finish(const char* why) {
  if (buffer_.empty() || lost_) return;
  std::string text;
  if (!started_) {
    Add(text, "incomplete MPA frame: %zu bytes (%s)", buffer_.size(), why);
  } else if (buffer_.size() < 2) {
    Add(text, "incomplete FPDU: %zu byte (%s)", buffer_.size(), why);
  } else {
    const std::uint16_t ulpdu_length = Get16(buffer_.data());
    Add(text, "incomplete FPDU: %zu of %zu bytes (%s)", buffer_.size(),
        2 + ulpdu_length + wire::PadSize(ulpdu_length) + wire::kCrcSize, why);
  }
  sink_(Line{offset_, offset_ + buffer_.size(), std::move(text), false});
  offset_ += buffer_.size();
  buffer_.clear();
}

}  // namespace softdat::tools::iwarp_dump
