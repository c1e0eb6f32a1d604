// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for endpoints: create, query, modify, status, free, reset, receive query and
// watermarks.
#include "core/ep.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/pz.h"
#include "core/srq.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"
#include "dat/raw_bits.h"

namespace softdat::dat {
namespace {

// Whether the enum types of the attributes hold the consumer's values (core reads them as enums).
bool AttributesFit(const DAT_EP_ATTR& attr) {
  return Fits(attr.service_type) && Fits(attr.qos) && Fits(attr.recv_completion_flags) &&
         Fits(attr.request_completion_flags);
}

Status CreateEp(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_handle,
                DAT_EVD_HANDLE request_handle, DAT_EVD_HANDLE connect_handle, core::Srq* srq,
                const DAT_EP_ATTR* attr, DAT_EP_HANDLE* ep_handle) {
  core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
  if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
  core::Pz* pz = core::HandleAs<core::Pz>(pz_handle);
  if (pz == nullptr) return Status(Code::kInvalidHandle, Detail::kPz);
  core::Evd* recv = nullptr;
  core::Evd* request = nullptr;
  core::Evd* connect = nullptr;
  if (!ResolveOptional(recv_handle, recv)) return Status(Code::kInvalidHandle, Detail::kEvdRecv);
  if (!ResolveOptional(request_handle, request)) return Status(Code::kInvalidHandle, Detail::kEvdRequest);
  if (!ResolveOptional(connect_handle, connect)) return Status(Code::kInvalidHandle, Detail::kEvdConnect);
  if (ep_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
  if (attr != nullptr && !AttributesFit(*attr)) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  core::Ep* ep = nullptr;
  return HandOut(core::Ep::Create(ia, pz, recv, request, connect, srq, attr, &ep), ep, ep_handle);
}

}  // namespace

DAT_RETURN EpCreate(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
                    DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd, const DAT_EP_ATTR* attr,
                    DAT_EP_HANDLE* ep_handle) noexcept {
  return Guarded("dat_ep_create", [&]() -> Status {
    return CreateEp(ia_handle, pz_handle, recv_evd, request_evd, connect_evd, nullptr, attr, ep_handle);
  });
}

DAT_RETURN EpCreateWithSrq(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
                           DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd, DAT_SRQ_HANDLE srq_handle,
                           const DAT_EP_ATTR* attr, DAT_EP_HANDLE* ep_handle) noexcept {
  return GuardedOn<core::Srq>("dat_ep_create_with_srq", srq_handle, Detail::kSrq, [&](core::Srq& srq) {
    return CreateEp(ia_handle, pz_handle, recv_evd, request_evd, connect_evd, &srq, attr, ep_handle);
  });
}

DAT_RETURN EpQuery(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM* param) noexcept {
  return GuardedOn<core::Ep>("dat_ep_query", ep_handle, Detail::kEp, [&](const core::Ep& ep) -> Status {
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    ep.Query(mask, *param);
    if (mask & DAT_EP_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(ep.ia());
    return Status::Ok();
  });
}

DAT_RETURN EpModify(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM* param) noexcept {
  return GuardedOn<core::Ep>("dat_ep_modify", ep_handle, Detail::kEp, [&](core::Ep& ep) -> Status {
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    if ((mask & DAT_EP_FIELD_EP_ATTR_ALL) != 0 && !AttributesFit(param->ep_attr))
      return Status(Code::kInvalidParameter, Detail::kParamAttributes);
    return ep.Modify(mask, *param);
  });
}

DAT_RETURN EpGetStatus(DAT_EP_HANDLE ep_handle, DAT_EP_STATE* state, DAT_BOOLEAN* recv_idle,
                       DAT_BOOLEAN* request_idle) noexcept {
  return GuardedOn<core::Ep>("dat_ep_get_status", ep_handle, Detail::kEp, [&](const core::Ep& ep) -> Status {
    if (state == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEpState);
    ep.GetStatus(*state, recv_idle, request_idle);
    return Status::Ok();
  });
}

DAT_RETURN EpFree(DAT_EP_HANDLE ep_handle) noexcept {
  return FreeEntry<core::Ep>("dat_ep_free", ep_handle, Detail::kEp);
}

DAT_RETURN EpReset(DAT_EP_HANDLE ep_handle) noexcept {
  return GuardedOn<core::Ep>("dat_ep_reset", ep_handle, Detail::kEp, [](core::Ep& ep) { return ep.Reset(); });
}

DAT_RETURN EpRecvQuery(DAT_EP_HANDLE ep_handle, DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) noexcept {
  return GuardedOn<core::Ep>("dat_ep_recv_query", ep_handle, Detail::kEp, [&](const core::Ep& ep) {
    return ep.RecvQuery(nbufs_allocated, bufs_alloc_span);
  });
}

DAT_RETURN EpSetWatermark(DAT_EP_HANDLE ep_handle, DAT_COUNT soft_high_watermark,
                          DAT_COUNT hard_high_watermark) noexcept {
  return GuardedOn<core::Ep>("dat_ep_set_watermark", ep_handle, Detail::kEp, [&](core::Ep& ep) {
    return ep.SetWatermark(soft_high_watermark, hard_high_watermark);
  });
}

}  // namespace softdat::dat
