// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for protection zones and local memory regions.
#include "core/ia.h"
#include "core/lmr.h"
#include "core/pz.h"
#include "dat/consumer_ia_handle.h"
#include "dat/entry.h"
#include "dat/raw_bits.h"
#include "dat/status_map.h"

namespace softdat::dat {

DAT_RETURN PzCreate(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE* pz_handle) noexcept {
  return Guarded("dat_pz_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Pz* pz = nullptr;
    if (pz_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    Status status = core::Pz::Create(ia, &pz);
    if (status.ok()) *pz_handle = pz;
    return status;
  });
}

DAT_RETURN PzQuery(DAT_PZ_HANDLE pz_handle, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM* param) noexcept {
  return Guarded("dat_pz_query", [&]() -> Status {
    const core::Pz* pz = core::HandleAs<core::Pz>(pz_handle);
    if (pz == nullptr) return Status(Code::kInvalidHandle, Detail::kPz);
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    pz->Query(known, *param);
    if (known & DAT_PZ_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(pz->ia());
    return Status::Ok();
  });
}

DAT_RETURN PzFree(DAT_PZ_HANDLE pz_handle) noexcept {
  return Guarded("dat_pz_free", [&]() -> Status {
    core::Pz* pz = core::HandleAs<core::Pz>(pz_handle);
    if (pz == nullptr) return Status(Code::kInvalidHandle, Detail::kPz);
    return core::Pz::Free(pz);
  });
}

DAT_RETURN LmrCreate(DAT_IA_HANDLE ia_handle, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                     DAT_VLEN length, DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS privileges,
                     DAT_VA_TYPE va_type, DAT_LMR_HANDLE* lmr_handle, DAT_LMR_CONTEXT* lmr_context,
                     DAT_RMR_CONTEXT* rmr_context, DAT_VLEN* registered_length,
                     DAT_VADDR* registered_address) noexcept {
  const std::uint32_t privilege_bits = RawBits(privileges);
  return Guarded("dat_lmr_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Pz* pz = core::HandleAs<core::Pz>(pz_handle);
    if (pz == nullptr) return Status(Code::kInvalidHandle, Detail::kPz);
    if (lmr_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    if (!Fits(mem_type)) return Status(Code::kInvalidParameter, Detail::kParamMemType);
    if (!Fits(va_type)) return Status(Code::kInvalidParameter, Detail::kParamVaType);
    core::Lmr* lmr = nullptr;
    Status status = core::Lmr::Create(ia, mem_type, region, length, pz, privilege_bits, va_type, &lmr,
                                      lmr_context, rmr_context, registered_length, registered_address);
    if (status.ok()) *lmr_handle = lmr;
    return status;
  });
}

DAT_RETURN LmrQuery(DAT_LMR_HANDLE lmr_handle, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM* param) noexcept {
  return Guarded("dat_lmr_query", [&]() -> Status {
    const core::Lmr* lmr = core::HandleAs<core::Lmr>(lmr_handle);
    if (lmr == nullptr) return Status(Code::kInvalidHandle, Detail::kLmr);
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    lmr->Query(known, *param);
    if (known & DAT_LMR_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(lmr->ia());
    return Status::Ok();
  });
}

DAT_RETURN LmrFree(DAT_LMR_HANDLE lmr_handle) noexcept {
  return Guarded("dat_lmr_free", [&]() -> Status {
    core::Lmr* lmr = core::HandleAs<core::Lmr>(lmr_handle);
    if (lmr == nullptr) return Status(Code::kInvalidHandle, Detail::kLmr);
    return core::Lmr::Free(lmr);
  });
}

DAT_RETURN LmrSyncRdma(DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET* segments,
                       DAT_VLEN num_segments) noexcept {
  return Guarded("dat_lmr_sync_rdma", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    if (num_segments > 0 && segments == nullptr) return Status(Code::kInvalidParameter, Detail::kParamSegments);
    return core::Lmr::SyncRdma(*ia, {segments, static_cast<std::size_t>(num_segments)});
  });
}

}  // namespace softdat::dat
