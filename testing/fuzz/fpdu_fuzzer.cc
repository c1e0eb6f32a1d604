// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Fuzz target: the stateless FPDU decoders of transport/tcp/wire.h (DDP/RDMAP control bytes,
// tagged and untagged headers, the Read Request body, the Terminate control word) on arbitrary
// bytes. Besides "no crash, no undefined behaviour", it checks that what decodes re-encodes to
// the same bytes (reserved bits aside) and that the CRC32c fused with a copy agrees with the plain
// one. The stateful receive path is connection_fuzzer's.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "transport/tcp/crc32c.h"
#include "transport/tcp/wire.h"

namespace wire = softdat::transport::tcp::wire;
namespace tcp = softdat::transport::tcp;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

// The bits of bytes 2 and 3 the header encoding owns: T, L, DV and RV, opcode (the reserved bits
// are sent as zero and ignored on receipt).
constexpr std::uint8_t kDdpOwned = 0xC3;
constexpr std::uint8_t kRdmapOwned = 0xCF;

void Header(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return;
  std::size_t header_size = 0;
  const wire::ControlError error = wire::DecodeControl(data, header_size);
  if (error != wire::ControlError::kNone) return;
  Check(header_size >= wire::kTaggedHeaderSize && header_size <= wire::kMaxHeaderSize);
  if (size < header_size) return;
  wire::FpduHeader header;
  wire::DecodeHeader(data, header);
  Check(header.tagged == wire::IsTagged(header.opcode));
  Check(wire::HeaderSize(header.opcode) == header_size);
  std::uint8_t again[wire::kMaxHeaderSize] = {};
  const std::size_t encoded = wire::EncodeHeader(header, again);
  Check(encoded == (header.tagged ? wire::kTaggedHeaderSize : wire::kUntaggedHeaderSize));
  Check(again[0] == data[0] && again[1] == data[1]);
  Check((again[2] & kDdpOwned) == (data[2] & kDdpOwned));
  Check((again[3] & kRdmapOwned) == (data[3] & kRdmapOwned));
  Check(std::memcmp(again + 4, data + 4, encoded - 4) == 0);
  if (header.opcode == wire::Opcode::kReadRequest) {
    wire::ReadRequestBody body;
    wire::DecodeReadRequest(data + wire::kUntaggedHeaderSize, body);
    wire::EncodeReadRequest(body, again + wire::kUntaggedHeaderSize);
    Check(std::memcmp(again + wire::kUntaggedHeaderSize, data + wire::kUntaggedHeaderSize,
                      wire::kReadRequestBodySize) == 0);
  }
  // RFC 7306 headers: what decodes re-encodes to the same bytes (the reserved bits of the atomic
  // operation word aside: sent as zero, ignored on receipt).
  if (header.opcode == wire::Opcode::kAtomicRequest) {
    wire::AtomicRequestBody body;
    wire::DecodeAtomicRequest(data + wire::kUntaggedHeaderSize, body);
    wire::EncodeAtomicRequest(body, again + wire::kUntaggedHeaderSize);
    Check((again[wire::kUntaggedHeaderSize + 3] & 0x0F) == (data[wire::kUntaggedHeaderSize + 3] & 0x0F));
    Check(std::memcmp(again + wire::kUntaggedHeaderSize + 4, data + wire::kUntaggedHeaderSize + 4,
                      wire::kAtomicRequestBodySize - 4) == 0);
  } else if (header.opcode == wire::Opcode::kAtomicResponse) {
    wire::AtomicResponseBody body;
    wire::DecodeAtomicResponse(data + wire::kUntaggedHeaderSize, body);
    wire::EncodeAtomicResponse(body, again + wire::kUntaggedHeaderSize);
    Check(std::memcmp(again + wire::kUntaggedHeaderSize, data + wire::kUntaggedHeaderSize,
                      wire::kAtomicResponseBodySize) == 0);
  } else if (header.opcode == wire::Opcode::kImmediate || header.opcode == wire::Opcode::kImmediateSolicited) {
    wire::EncodeImmediate(wire::DecodeImmediate(data + wire::kUntaggedHeaderSize), again + wire::kUntaggedHeaderSize);
    Check(std::memcmp(again + wire::kUntaggedHeaderSize, data + wire::kUntaggedHeaderSize, 4) == 0);
  }
  Check(wire::PadSize(header.ulpdu_length) < 4 && (2 + header.ulpdu_length + wire::PadSize(header.ulpdu_length)) % 4 == 0);
}

void Terminate(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return;
  const wire::TerminateCode code = wire::DecodeTerminateControl(data);
  Check(static_cast<std::uint8_t>(code.layer) <= 2);
  Check(wire::DescribeTerminate(code) != nullptr);
  // Whatever we send reads back as sent (the RFC reading is always taken when it is possible).
  const wire::TerminateCode sent{static_cast<wire::TermLayer>(data[0] % 3), static_cast<std::uint8_t>(data[1] & 0x0F),
                                 data[2]};
  const bool possible = !(sent.layer == wire::TermLayer::kLlp && sent.etype != 0);
  std::uint8_t word[4];
  wire::EncodeTerminateControl(sent, (data[3] & 1) != 0, word);
  const wire::TerminateCode back = wire::DecodeTerminateControl(word);
  if (possible) Check(back.layer == sent.layer && back.etype == sent.etype && back.code == sent.code);
}

void Crc(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  std::vector<std::uint8_t> copy(size);
  const std::size_t split = data[0] % (size + 1);
  std::uint32_t state = tcp::Crc32cCopy(tcp::kCrc32cInit, copy.data(), data, split);
  state = tcp::Crc32cCopy(state, copy.data() + split, data + split, size - split);
  Check(std::memcmp(copy.data(), data, size) == 0);
  Check(tcp::Crc32cFinal(state) == tcp::Crc32c(data, size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Header(data, size);
  Terminate(data, size);
  Crc(data, size);
  return 0;
}
