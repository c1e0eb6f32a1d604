// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for shared receive queues.
#include "core/ia.h"
#include "core/pz.h"
#include "core/srq.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"

namespace softdat::dat {

DAT_RETURN SrqCreate(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR* srq_attr,
                     DAT_SRQ_HANDLE* srq_handle) noexcept {
  return GuardedOn<core::Ia>("dat_srq_create", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    core::Pz* pz = core::HandleAs<core::Pz>(pz_handle);
    if (pz == nullptr) return Status(Code::kInvalidHandle, Detail::kPz);
    if (srq_attr == nullptr) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
    if (srq_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    core::Srq* srq = nullptr;
    return HandOut(core::Srq::Create(&ia, pz, *srq_attr, &srq), srq, srq_handle);
  });
}

DAT_RETURN SrqFree(DAT_SRQ_HANDLE srq_handle) noexcept {
  return FreeEntry<core::Srq>("dat_srq_free", srq_handle, Detail::kSrq);
}

DAT_RETURN SrqPostRecv(DAT_SRQ_HANDLE srq_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                       DAT_DTO_COOKIE user_cookie) noexcept {
  return GuardedOn<core::Srq>("dat_srq_post_recv", srq_handle, Detail::kSrq, [&](core::Srq& srq) {
    return srq.PostRecv(num_segments, local_iov, user_cookie);
  });
}

DAT_RETURN SrqQuery(DAT_SRQ_HANDLE srq_handle, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM* param) noexcept {
  return QueryEntry<core::Srq>("dat_srq_query", srq_handle, Detail::kSrq, mask, param, DAT_SRQ_FIELD_IA_HANDLE);
}

DAT_RETURN SrqResize(DAT_SRQ_HANDLE srq_handle, DAT_COUNT srq_max_recv_dto) noexcept {
  return GuardedOn<core::Srq>("dat_srq_resize", srq_handle, Detail::kSrq, [&](core::Srq& srq) {
    return srq.Resize(srq_max_recv_dto);
  });
}

DAT_RETURN SrqSetLw(DAT_SRQ_HANDLE srq_handle, DAT_COUNT low_watermark) noexcept {
  return GuardedOn<core::Srq>("dat_srq_set_lw", srq_handle, Detail::kSrq, [&](core::Srq& srq) {
    return srq.SetLowWatermark(low_watermark);
  });
}

}  // namespace softdat::dat
