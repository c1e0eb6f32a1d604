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

}  // namespace

std::uint32_t Crc32cUpdate(std::uint32_t state, const void* data, std::size_t length) {
  auto* bytes = static_cast<unsigned char*>(const_cast<void*>(data));
  while (length > 0) {
    const std::size_t n = std::min<std::size_t>(length, INT_MAX);
    // ISA-L keeps the reflected register without the final XOR: it chains as our state does.
    state = crc32_iscsi(bytes, static_cast<int>(n), state);
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
    done += n;
  }
  return state;
}

}  // namespace softdat::transport::tcp
