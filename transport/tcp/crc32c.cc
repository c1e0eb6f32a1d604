// CRC32c: hardware path (SSE4.2, eight bytes per instruction) chosen once at load time, table
// fallback for CPUs without it.
#include "transport/tcp/crc32c.h"

#include <array>
#include <cstring>

namespace softdat::transport::tcp {
namespace {

constexpr std::array<std::uint32_t, 256> MakeTable() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t value = i;
    for (int bit = 0; bit < 8; ++bit) value = (value >> 1) ^ ((value & 1u) ? 0x82F63B78u : 0u);
    table[i] = value;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kTable = MakeTable();

std::uint32_t UpdateTable(std::uint32_t state, const std::uint8_t* bytes, std::size_t length) {
  for (std::size_t i = 0; i < length; ++i) state = kTable[(state ^ bytes[i]) & 0xFFu] ^ (state >> 8);
  return state;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t UpdateSse42(std::uint32_t state, const std::uint8_t* bytes,
                                                             std::size_t length) {
  std::uint64_t wide = state;
  while (length >= 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes, sizeof word);
    wide = __builtin_ia32_crc32di(wide, word);
    bytes += 8;
    length -= 8;
  }
  std::uint32_t narrow = static_cast<std::uint32_t>(wide);
  while (length-- > 0) narrow = __builtin_ia32_crc32qi(narrow, *bytes++);
  return narrow;
}

bool HasSse42() { return __builtin_cpu_supports("sse4.2"); }
#endif

using UpdateFunction = std::uint32_t (*)(std::uint32_t, const std::uint8_t*, std::size_t);

UpdateFunction ChooseUpdate() {
#if defined(__x86_64__)
  if (HasSse42()) return &UpdateSse42;
#endif
  return &UpdateTable;
}

const UpdateFunction kUpdate = ChooseUpdate();

}  // namespace

std::uint32_t Crc32cUpdate(std::uint32_t state, const void* data, std::size_t length) {
  return kUpdate(state, static_cast<const std::uint8_t*>(data), length);
}

}  // namespace softdat::transport::tcp
