// CRC32c (Castagnoli), the MPA FPDU checksum of RFC 5044 §4.4: reflected polynomial 0x82F63B78,
// initial value and final XOR 0xFFFFFFFF. Uses the SSE4.2 crc32 instruction when the CPU has it
// and a table otherwise, so a checksummed byte costs about what copying it does.
#pragma once

#include <cstddef>
#include <cstdint>

namespace softdat::transport::tcp {

// Running state: start with kCrc32cInit, feed pieces with Crc32cUpdate, finish with Crc32cFinal.
inline constexpr std::uint32_t kCrc32cInit = 0xFFFFFFFFu;
std::uint32_t Crc32cUpdate(std::uint32_t state, const void* data, std::size_t length);
inline std::uint32_t Crc32cFinal(std::uint32_t state) { return state ^ 0xFFFFFFFFu; }

inline std::uint32_t Crc32c(const void* data, std::size_t length) {
  return Crc32cFinal(Crc32cUpdate(kCrc32cInit, data, length));
}

}  // namespace softdat::transport::tcp
