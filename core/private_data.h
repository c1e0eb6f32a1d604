// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The check of the private data a consumer hands dat_ep_connect, dat_ep_dup_connect,
// dat_cr_accept or dat_cr_reject to send.
#pragma once

#include <dat2/udat.h>

#include <cstdint>

#include "base/status.h"

namespace softdat::core {

// A size from 0 to `max` (else kParamPrivateDataSize) and, for a size above 0, a pointer (else
// kParamPrivateData).
inline Status CheckPrivateData(DAT_COUNT size, const void* data, std::uint64_t max) {
  if (size < 0 || static_cast<std::uint64_t>(size) > max)
    return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  if (size > 0 && data == nullptr) return Status(Code::kInvalidParameter, Detail::kParamPrivateData);
  return Status::Ok();
}

}  // namespace softdat::core
