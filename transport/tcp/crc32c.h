// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// CRC32c (Castagnoli), the MPA FPDU checksum of RFC 5044 §4.4: reflected polynomial 0x82F63B78,
// initial value and final XOR 0xFFFFFFFF. Computed by ISA-L's crc32_iscsi (Debian's libisal),
// which picks the CPU's fastest folding code at run time. Where a copy is needed anyway
// (Crc32cCopy), copying and checksumming go cache block by cache block, so the bytes are read
// from memory once.
#pragma once

#include <cstddef>
#include <cstdint>

namespace softdat::transport::tcp {

// Running state: start with kCrc32cInit, feed pieces with Crc32cUpdate, finish with Crc32cFinal.
inline constexpr std::uint32_t kCrc32cInit = 0xFFFFFFFFu;
std::uint32_t Crc32cUpdate(std::uint32_t state, const void* data, std::size_t length);
inline std::uint32_t Crc32cFinal(std::uint32_t state) { return state ^ 0xFFFFFFFFu; }

// Copies `length` bytes from `from` to `to` and feeds them to the running state: the checksum is
// of the bytes written to `to` (the copy), whatever `from` does meanwhile.
std::uint32_t Crc32cCopy(std::uint32_t state, void* to, const void* from, std::size_t length);

inline std::uint32_t Crc32c(const void* data, std::size_t length) {
  return Crc32cFinal(Crc32cUpdate(kCrc32cInit, data, length));
}

}  // namespace softdat::transport::tcp
