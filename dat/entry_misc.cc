// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT 2.0 entry points that answer without touching a transport: high-availability relations.
#include "core/ia.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"

namespace softdat::dat {

// softdat IAs are never high-availability peers of one another.
DAT_RETURN IaHaRelated(DAT_IA_HANDLE ia_handle, const DAT_NAME_PTR provider, DAT_BOOLEAN* answer) noexcept {
  return GuardedOn<core::Ia>("dat_ia_ha_related", ia_handle, Detail::kIa, [&](core::Ia&) -> Status {
    if (provider == nullptr) return Status(Code::kInvalidParameter, Detail::kParamIaName);
    if (answer == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    *answer = DAT_FALSE;
    return Status::Ok();
  });
}

}  // namespace softdat::dat
