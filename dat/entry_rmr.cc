// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for remote memory regions (memory windows).
#include "core/ep.h"
#include "core/ia.h"
#include "core/lmr.h"
#include "core/pz.h"
#include "core/rmr.h"
#include "dat/consumer_ia_handle.h"
#include "dat/entry.h"
#include "dat/raw_bits.h"
#include "dat/status_map.h"

namespace softdat::dat {

DAT_RETURN RmrCreate(DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE* rmr_handle) noexcept {
  return Guarded("dat_rmr_create", [&]() -> Status {
    core::Pz* pz = core::HandleAs<core::Pz>(pz_handle);
    if (pz == nullptr) return Status(Code::kInvalidHandle, Detail::kPz);
    core::Rmr* rmr = nullptr;
    if (rmr_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    Status status = core::Rmr::Create(pz, &rmr);
    if (status.ok()) *rmr_handle = rmr;
    return status;
  });
}

DAT_RETURN RmrQuery(DAT_RMR_HANDLE rmr_handle, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM* param) noexcept {
  return Guarded("dat_rmr_query", [&]() -> Status {
    const core::Rmr* rmr = core::HandleAs<core::Rmr>(rmr_handle);
    if (rmr == nullptr) return Status(Code::kInvalidHandle, Detail::kRmr);
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    rmr->Query(known, *param);
    if (known & DAT_RMR_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(rmr->ia());
    return Status::Ok();
  });
}

DAT_RETURN RmrBind(DAT_RMR_HANDLE rmr_handle, DAT_LMR_HANDLE lmr_handle, const DAT_LMR_TRIPLET* lmr_triplet,
                   DAT_MEM_PRIV_FLAGS mem_priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_handle,
                   DAT_RMR_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT* context) noexcept {
  const std::uint32_t mem_priv_bits = RawBits(mem_priv);
  return Guarded("dat_rmr_bind", [&]() -> Status {
    core::Rmr* rmr = core::HandleAs<core::Rmr>(rmr_handle);
    if (rmr == nullptr) return Status(Code::kInvalidHandle, Detail::kRmr);
    core::Ep* ep = core::HandleAs<core::Ep>(ep_handle);
    if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    core::Lmr* lmr = nullptr;
    if (lmr_handle != DAT_HANDLE_NULL) {
      lmr = core::HandleAs<core::Lmr>(lmr_handle);
      if (lmr == nullptr) return Status(Code::kInvalidHandle, Detail::kLmr);
    }
    if (lmr_triplet == nullptr) return Status(Code::kInvalidParameter, Detail::kParamLmrTriplet);
    if (context == nullptr) return Status(Code::kInvalidParameter, Detail::kParamRmrContext);
    if (!Fits(va_type)) return Status(Code::kInvalidParameter, Detail::kParamVaType);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
    return rmr->Bind(lmr, *lmr_triplet, mem_priv_bits, va_type, ep, user_cookie, flags, *context);
  });
}

DAT_RETURN RmrFree(DAT_RMR_HANDLE rmr_handle) noexcept {
  return Guarded("dat_rmr_free", [&]() -> Status {
    core::Rmr* rmr = core::HandleAs<core::Rmr>(rmr_handle);
    if (rmr == nullptr) return Status(Code::kInvalidHandle, Detail::kRmr);
    return core::Rmr::Free(rmr);
  });
}

}  // namespace softdat::dat
