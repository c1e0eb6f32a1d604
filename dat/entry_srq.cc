// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for shared receive queues.
#include "core/ia.h"
#include "core/pz.h"
#include "core/srq.h"
#include "dat/consumer_ia_handle.h"
#include "dat/entry.h"
#include "dat/raw_bits.h"
#include "dat/status_map.h"

namespace softdat::dat {

DAT_RETURN SrqCreate(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR* srq_attr,
                     DAT_SRQ_HANDLE* srq_handle) noexcept {
  return Guarded("dat_srq_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Pz* pz = core::HandleAs<core::Pz>(pz_handle);
    if (pz == nullptr) return Status(Code::kInvalidHandle, Detail::kPz);
    if (srq_attr == nullptr) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
    if (srq_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    core::Srq* srq = nullptr;
    Status status = core::Srq::Create(ia, pz, *srq_attr, &srq);
    if (status.ok()) *srq_handle = srq;
    return status;
  });
}

DAT_RETURN SrqFree(DAT_SRQ_HANDLE srq_handle) noexcept {
  return Guarded("dat_srq_free", [&]() -> Status {
    core::Srq* srq = core::HandleAs<core::Srq>(srq_handle);
    if (srq == nullptr) return Status(Code::kInvalidHandle, Detail::kSrq);
    return core::Srq::Free(srq);
  });
}

DAT_RETURN SrqPostRecv(DAT_SRQ_HANDLE srq_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                       DAT_DTO_COOKIE user_cookie) noexcept {
  return Guarded("dat_srq_post_recv", [&]() -> Status {
    core::Srq* srq = core::HandleAs<core::Srq>(srq_handle);
    if (srq == nullptr) return Status(Code::kInvalidHandle, Detail::kSrq);
    return srq->PostRecv(num_segments, local_iov, user_cookie);
  });
}

DAT_RETURN SrqQuery(DAT_SRQ_HANDLE srq_handle, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM* param) noexcept {
  return Guarded("dat_srq_query", [&]() -> Status {
    const core::Srq* srq = core::HandleAs<core::Srq>(srq_handle);
    if (srq == nullptr) return Status(Code::kInvalidHandle, Detail::kSrq);
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    srq->Query(known, *param);
    if (known & DAT_SRQ_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(srq->ia());
    return Status::Ok();
  });
}

DAT_RETURN SrqResize(DAT_SRQ_HANDLE srq_handle, DAT_COUNT srq_max_recv_dto) noexcept {
  return Guarded("dat_srq_resize", [&]() -> Status {
    core::Srq* srq = core::HandleAs<core::Srq>(srq_handle);
    if (srq == nullptr) return Status(Code::kInvalidHandle, Detail::kSrq);
    return srq->Resize(srq_max_recv_dto);
  });
}

DAT_RETURN SrqSetLw(DAT_SRQ_HANDLE srq_handle, DAT_COUNT low_watermark) noexcept {
  return Guarded("dat_srq_set_lw", [&]() -> Status {
    core::Srq* srq = core::HandleAs<core::Srq>(srq_handle);
    if (srq == nullptr) return Status(Code::kInvalidHandle, Detail::kSrq);
    return srq->SetLowWatermark(low_watermark);
  });
}

}  // namespace softdat::dat
