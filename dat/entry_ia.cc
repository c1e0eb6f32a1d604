// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for the IA: dat_ia_open, dat_ia_close, dat_ia_query.
#include "core/ia.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"
#include "dat/provider_entry.h"
#include "dat/raw_bits.h"
#include "transport/factory.h"

namespace softdat::dat {

DAT_RETURN IaOpen(const DAT_NAME_PTR name, DAT_COUNT async_evd_qlen, DAT_EVD_HANDLE* async_evd,
                  DAT_IA_HANDLE* ia_handle) noexcept {
  return Guarded("dat_ia_open", [&]() -> Status {
    if (name == nullptr) return Status(Code::kInvalidParameter, Detail::kParamIaName);
    if (async_evd == nullptr) return Status(Code::kInvalidParameter, Detail::kParamAsyncEvd);
    if (ia_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    ProviderEntry* entry = FindProvider(name);
    if (entry == nullptr) {
      SOFTDAT_LOG(kError, "dat_ia_open(%s): no such IA registered with softdat", name);
      return Status(Code::kProviderNotFound);
    }
    core::Ia* ia = nullptr;
    return HandOut(core::Ia::Open(&entry->table, name, entry->params, transport::CreateTransport, async_evd_qlen,
                                  *async_evd, &ia),
                   ia, ia_handle);
  });
}

DAT_RETURN IaClose(DAT_IA_HANDLE ia_handle, DAT_CLOSE_FLAGS flags) noexcept {
  return GuardedOn<core::Ia>("dat_ia_close", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    return core::Ia::Close(&ia, flags);
  });
}

DAT_RETURN IaQuery(DAT_IA_HANDLE ia_handle, DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask,
                   DAT_IA_ATTR* ia_attr, DAT_PROVIDER_ATTR_MASK provider_mask,
                   DAT_PROVIDER_ATTR* provider_attr) noexcept {
  return GuardedOn<core::Ia>("dat_ia_query", ia_handle, Detail::kIa, [&](const core::Ia& ia) -> Status {
    if (ia_mask != 0 && ia_attr == nullptr) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
    if (provider_mask != 0 && provider_attr == nullptr)
      return Status(Code::kInvalidParameter, Detail::kParamProviderAttributes);
    return ia.Query(async_evd, ia_mask, ia_attr, provider_mask, provider_attr);
  });
}

}  // namespace softdat::dat
