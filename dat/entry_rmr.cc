// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for remote memory regions (memory windows).
#include "core/ep.h"
#include "core/ia.h"
#include "core/lmr.h"
#include "core/pz.h"
#include "core/rmr.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"
#include "dat/raw_bits.h"

namespace softdat::dat {

DAT_RETURN RmrCreate(DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE* rmr_handle) noexcept {
  return GuardedOn<core::Pz>("dat_rmr_create", pz_handle, Detail::kPz, [&](core::Pz& pz) -> Status {
    core::Rmr* rmr = nullptr;
    if (rmr_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    return HandOut(core::Rmr::Create(&pz, &rmr), rmr, rmr_handle);
  });
}

DAT_RETURN RmrQuery(DAT_RMR_HANDLE rmr_handle, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM* param) noexcept {
  return QueryEntry<core::Rmr>("dat_rmr_query", rmr_handle, Detail::kRmr, mask, param, DAT_RMR_FIELD_IA_HANDLE);
}

DAT_RETURN RmrBind(DAT_RMR_HANDLE rmr_handle, DAT_LMR_HANDLE lmr_handle, const DAT_LMR_TRIPLET* lmr_triplet,
                   DAT_MEM_PRIV_FLAGS mem_priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_handle,
                   DAT_RMR_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT* context) noexcept {
  const std::uint32_t mem_priv_bits = RawBits(mem_priv);
  return GuardedOn<core::Rmr>("dat_rmr_bind", rmr_handle, Detail::kRmr, [&](core::Rmr& rmr) -> Status {
    core::Ep* ep = core::HandleAs<core::Ep>(ep_handle);
    if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    core::Lmr* lmr;
    if (!ResolveOptional(lmr_handle, lmr)) return Status(Code::kInvalidHandle, Detail::kLmr);
    if (lmr_triplet == nullptr) return Status(Code::kInvalidParameter, Detail::kParamLmrTriplet);
    if (context == nullptr) return Status(Code::kInvalidParameter, Detail::kParamRmrContext);
    if (!Fits(va_type)) return Status(Code::kInvalidParameter, Detail::kParamVaType);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
    return rmr.Bind(lmr, *lmr_triplet, mem_priv_bits, va_type, ep, user_cookie, flags, *context);
  });
}

DAT_RETURN RmrFree(DAT_RMR_HANDLE rmr_handle) noexcept {
  return FreeEntry<core::Rmr>("dat_rmr_free", rmr_handle, Detail::kRmr);
}

}  // namespace softdat::dat
