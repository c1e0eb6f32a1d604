// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Fuzz target: the MPA Request/Reply parser (transport/tcp/wire.h) on the bytes a peer sends
// first, read both as a Request (what the listener does) and as a Reply (what a connecting
// endpoint does), with the RFC 6581 block when the frame says it has one. Besides "no crash, no
// undefined behaviour", it checks the parser's promises: a refusal always says why; an accepted
// frame has a revision of 1 or 2, at most 512 bytes of private data, its block when enhanced,
// R only in a Reply; and it re-encodes to the same bytes (bits the parser ignores aside). The
// stateful side (a Reply followed at once by FPDUs) is connection_fuzzer's.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/tcp/wire.h"

namespace wire = softdat::transport::tcp::wire;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void Parse(const std::uint8_t* data, std::size_t size, bool expect_reply) {
  if (size < wire::kMpaFrameHeaderSize) return;
  wire::MpaFrame frame;
  frame.ird = 0x1234;  // a refusal may leave the frame in any state; an acceptance sets it whole
  std::uint16_t pd_length = 0;
  const char* why = nullptr;
  if (!wire::DecodeMpaHeader(data, expect_reply, frame, pd_length, why)) {
    Check(why != nullptr && why[0] != '\0');
    return;
  }
  Check(frame.reply == expect_reply);
  Check(frame.revision == 1 || frame.revision == 2);
  Check(pd_length <= wire::kMaxMpaPrivateData);
  Check(!frame.enhanced || (frame.revision == 2 && pd_length >= wire::kMpaEnhancedBlockSize));
  Check(frame.private_data_length == pd_length - (frame.enhanced ? wire::kMpaEnhancedBlockSize : 0));
  Check(expect_reply || !frame.rejected);
  Check(!frame.peer_to_peer && frame.ird == 0 && frame.ord == 0);  // the block comes separately
  const bool block = frame.enhanced && size >= wire::kMpaFrameHeaderSize + wire::kMpaEnhancedBlockSize;
  if (block) {
    wire::DecodeMpaBlock(data + wire::kMpaFrameHeaderSize, frame);
    Check(frame.ird <= 0x3FFF && frame.ord <= 0x3FFF);
    Check(frame.peer_to_peer || (!frame.rtr_send && !frame.rtr_write && !frame.rtr_read));
  }
  // Re-encoded, the frame is what was sent, but for what the parser does not keep: the
  // reserved flag bits, R in a Request, S in a revision 1 frame, and the RTR bits without P2P.
  std::uint8_t again[wire::kMpaFrameHeaderSize + wire::kMpaEnhancedBlockSize] = {};
  const std::size_t encoded = wire::EncodeMpaFrame(frame, again);
  Check(encoded == wire::kMpaFrameHeaderSize + (frame.enhanced ? wire::kMpaEnhancedBlockSize : 0));
  Check(std::memcmp(again, data, 16) == 0);
  std::uint8_t kept = wire::kMpaFlagMarkers | wire::kMpaFlagCrc;
  if (expect_reply) kept |= wire::kMpaFlagReject;
  if (frame.revision == 2) kept |= wire::kMpaFlagEnhanced;
  Check((again[16] & kept) == (data[16] & kept));
  Check(again[17] == data[17] && again[18] == data[18] && again[19] == data[19]);
  if (block) {
    const std::uint8_t* sent = data + wire::kMpaFrameHeaderSize;
    const std::uint8_t* back = again + wire::kMpaFrameHeaderSize;
    const std::uint8_t rtr_bits = frame.peer_to_peer ? 0xC0 : 0x00;  // B, C, D count only with P2P
    Check((back[0] & 0xBF) == (sent[0] & 0xBF));                     // P2P and the IRD
    Check((back[0] & 0x40) == (sent[0] & 0x40 & rtr_bits));         // B
    Check(back[1] == sent[1] && back[3] == sent[3]);
    Check((back[2] & 0x3F) == (sent[2] & 0x3F) && (back[2] & 0xC0) == (sent[2] & rtr_bits));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Parse(data, size, false);
  Parse(data, size, true);
  return 0;
}
