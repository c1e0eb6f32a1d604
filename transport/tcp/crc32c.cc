// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// CRC32c through ISA-L, and the blocked copy-and-checksum.
#include "transport/tcp/crc32c.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace softdat::transport::tcp {
namespace {

// Small enough that a copied block is still in L1 when it is checksummed.
constexpr std::size_t kBlock = 16 * 1024;

// On CPUs with AVX-512, crc32_iscsi runs ISA-L's crc32_iscsi_by16_10, which in Debian 12's ISA-L
// (2.30) returns without `vzeroupper`: the upper halves of the vector registers stay dirty, and
// the CPU pays a transition penalty at the next legacy-SSE instruction (framing and receive code)
// and again at the next CRC (docs/PERFORMANCE.md, "The CRC and the vector state", has the measurement).
// `vzeroupper` costs a cycle and keeps the low halves, which is all SSE code uses.
// (Called before this file's initializer has run, the CRC just skips it.)
#if defined(__x86_64__)
bool CpuHasAvx() {
  __builtin_cpu_init();  // may run before libgcc's own initializer
  return __builtin_cpu_supports("avx");
}
const bool kClearUpperState = CpuHasAvx();
inline void AfterVectorCode() {
  if (kClearUpperState) asm volatile("vzeroupper");
}
#else
inline void AfterVectorCode() {}
#endif

}  // namespace

std::uint32_t Crc32cUpdate(std::uint32_t state, const void* data, std::size_t length) {
  auto* bytes = static_cast<unsigned char*>(const_cast<void*>(data));
  while (length > 0) {
    const std::size_t n = std::min<std::size_t>(length, INT_MAX);
    // ISA-L keeps the reflected register without the final XOR: it chains as our state does.
    state = crc32_iscsi(bytes, static_cast<int>(n), state);
    AfterVectorCode();
    bytes += n;
    length -= n;
  }
  return state;
}

std::uint32_t Crc32cCopy(std::uint32_t state, void* to, const void* from, std::size_t length) {
  auto* out = static_cast<unsigned char*>(to);
  const auto* in = static_cast<const unsigned char*>(from);
  for (std::size_t done = 0; done < length;) {
    const std::size_t n = std::min(kBlock, length - done);
    std::memcpy(out + done, in + done, n);
    state = crc32_iscsi(out + done, static_cast<int>(n), state);
    AfterVectorCode();
    done += n;
  }
  return state;
}

}  // namespace softdat::transport::tcp
