// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The target side of RDMA and atomics: whether a peer may access `length` bytes at `address`
// through the window its STag named, as an RNIC checks it (key, PZ or bound EP, privilege,
// bounds; an atomic also 8-byte alignment, which an RNIC reports as a remote access error too).
#pragma once

#include <cstdint>

#include "core/dat_ib.h"
#include "core/memory_window.h"
#include "transport/work.h"

namespace softdat::core {

inline transport::RemoteResolution ResolveWindow(const WindowView& window, const Pz* pz, const void* ep,
                                                 std::uint64_t address, std::uint64_t length,
                                                 transport::RemoteAccess access) {
  using transport::RemoteAccess;
  using transport::RemoteCheck;
  if (window.key == 0) return {RemoteCheck::kInvalidKey, nullptr};
  if (window.pz != pz || (window.endpoint != nullptr && window.endpoint != ep))
    return {RemoteCheck::kNotAssociated, nullptr};
  const DAT_MEM_PRIV_FLAGS needed =
      access == RemoteAccess::kRead    ? DAT_MEM_PRIV_REMOTE_READ_FLAG
      : access == RemoteAccess::kWrite ? DAT_MEM_PRIV_REMOTE_WRITE_FLAG
                                       : static_cast<DAT_MEM_PRIV_FLAGS>(kPrivRemoteAtomic);
  if (!window.Allows(needed)) return {RemoteCheck::kAccessRights, nullptr};
  if (!window.Contains(address, length)) return {RemoteCheck::kBounds, nullptr};
  if (access == RemoteAccess::kAtomic && (address % 8 != 0 || length != 8)) return {RemoteCheck::kBounds, nullptr};
  return {RemoteCheck::kOk, reinterpret_cast<std::uint8_t*>(address)};
}

}  // namespace softdat::core
