// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for protection zones and local memory regions.
#include "core/ia.h"
#include "core/lmr.h"
#include "core/pz.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"
#include "dat/raw_bits.h"

namespace softdat::dat {

DAT_RETURN PzCreate(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE* pz_handle) noexcept {
  return GuardedOn<core::Ia>("dat_pz_create", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    core::Pz* pz = nullptr;
    if (pz_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    return HandOut(core::Pz::Create(&ia, &pz), pz, pz_handle);
  });
}

DAT_RETURN PzQuery(DAT_PZ_HANDLE pz_handle, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM* param) noexcept {
  return QueryEntry<core::Pz>("dat_pz_query", pz_handle, Detail::kPz, mask, param, DAT_PZ_FIELD_IA_HANDLE);
}

DAT_RETURN PzFree(DAT_PZ_HANDLE pz_handle) noexcept {
  return FreeEntry<core::Pz>("dat_pz_free", pz_handle, Detail::kPz);
}

DAT_RETURN LmrCreate(DAT_IA_HANDLE ia_handle, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                     DAT_VLEN length, DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS privileges,
                     DAT_VA_TYPE va_type, DAT_LMR_HANDLE* lmr_handle, DAT_LMR_CONTEXT* lmr_context,
                     DAT_RMR_CONTEXT* rmr_context, DAT_VLEN* registered_length,
                     DAT_VADDR* registered_address) noexcept {
  const std::uint32_t privilege_bits = RawBits(privileges);
  return GuardedOn<core::Ia>("dat_lmr_create", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    core::Pz* pz = core::HandleAs<core::Pz>(pz_handle);
    if (pz == nullptr) return Status(Code::kInvalidHandle, Detail::kPz);
    if (lmr_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    if (!Fits(mem_type)) return Status(Code::kInvalidParameter, Detail::kParamMemType);
    if (!Fits(va_type)) return Status(Code::kInvalidParameter, Detail::kParamVaType);
    core::Lmr* lmr = nullptr;
    return HandOut(core::Lmr::Create(&ia, mem_type, region, length, pz, privilege_bits, va_type, &lmr, lmr_context,
                                     rmr_context, registered_length, registered_address),
                   lmr, lmr_handle);
  });
}

DAT_RETURN LmrQuery(DAT_LMR_HANDLE lmr_handle, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM* param) noexcept {
  return QueryEntry<core::Lmr>("dat_lmr_query", lmr_handle, Detail::kLmr, mask, param, DAT_LMR_FIELD_IA_HANDLE);
}

DAT_RETURN LmrFree(DAT_LMR_HANDLE lmr_handle) noexcept {
  return FreeEntry<core::Lmr>("dat_lmr_free", lmr_handle, Detail::kLmr);
}

DAT_RETURN LmrSyncRdma(DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET* segments,
                       DAT_VLEN num_segments) noexcept {
  return GuardedOn<core::Ia>("dat_lmr_sync_rdma", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    if (num_segments > 0 && segments == nullptr) return Status(Code::kInvalidParameter, Detail::kParamSegments);
    return core::Lmr::SyncRdma(ia, {segments, static_cast<std::size_t>(num_segments)});
  });
}

}  // namespace softdat::dat
