// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT 2.0 entry points that answer without touching a transport: high-availability relations.
#include "core/ia.h"
#include "dat/entry.h"
#include "dat/status_map.h"

namespace softdat::dat {

// softdat IAs are never high-availability peers of one another.
DAT_RETURN IaHaRelated(DAT_IA_HANDLE ia_handle, const DAT_NAME_PTR provider, DAT_BOOLEAN* answer) noexcept {
  return Guarded("dat_ia_ha_related", [&]() -> Status {
    if (core::HandleAs<core::Ia>(ia_handle) == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    if (provider == nullptr) return Status(Code::kInvalidParameter, Detail::kParamIaName);
    if (answer == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    *answer = DAT_FALSE;
    return Status::Ok();
  });
}

}  // namespace softdat::dat
