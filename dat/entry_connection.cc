// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for connection management: active connect and disconnect, public and reserved
// service points, connection requests.
#include "core/cr.h"
#include "core/ep.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/service_point.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"
#include "dat/raw_bits.h"

namespace softdat::dat {

DAT_RETURN EpConnect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote_ia_address, DAT_CONN_QUAL remote_conn_qual,
                     DAT_TIMEOUT timeout, DAT_COUNT private_data_size, const DAT_PVOID private_data,
                     DAT_QOS qos, DAT_CONNECT_FLAGS flags) noexcept {
  return GuardedOn<core::Ep>("dat_ep_connect", ep_handle, Detail::kEp, [&](core::Ep& ep) -> Status {
    if (!Fits(flags) || flags & ~(DAT_CONNECT_MULTIPATH_REQUESTED_FLAG | DAT_CONNECT_MULTIPATH_REQUIRED_FLAG))
      return Status(Code::kInvalidParameter, Detail::kParamFlags);
    // One path only: a required multipath cannot be had, a requested one falls back to one.
    if (flags & DAT_CONNECT_MULTIPATH_REQUIRED_FLAG) return Status(Code::kModelNotSupported);
    (void)qos;  // best effort is all softdat offers; any QoS request gets it
    return ep.Connect(remote_ia_address, remote_conn_qual, timeout, private_data_size, private_data);
  });
}

DAT_RETURN EpDupConnect(DAT_EP_HANDLE ep_handle, DAT_EP_HANDLE ep_dup_handle, DAT_TIMEOUT timeout,
                        DAT_COUNT private_data_size, const DAT_PVOID private_data, DAT_QOS qos) noexcept {
  return GuardedOn<core::Ep>("dat_ep_dup_connect", ep_handle, Detail::kEp, [&](core::Ep& ep) -> Status {
    const core::Ep* dup = core::HandleAs<core::Ep>(ep_dup_handle);
    if (dup == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    (void)qos;
    return ep.DupConnect(*dup, timeout, private_data_size, private_data);
  });
}

DAT_RETURN EpDisconnect(DAT_EP_HANDLE ep_handle, DAT_CLOSE_FLAGS flags) noexcept {
  return GuardedOn<core::Ep>("dat_ep_disconnect", ep_handle, Detail::kEp, [&](core::Ep& ep) -> Status {
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    return ep.Disconnect(flags);
  });
}

DAT_RETURN PspCreate(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL conn_qual, DAT_EVD_HANDLE evd_handle,
                     DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* psp_handle) noexcept {
  return GuardedOn<core::Ia>("dat_psp_create", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return Status(Code::kInvalidHandle, Detail::kEvdCr);
    if (psp_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    core::Psp* psp = nullptr;
    return HandOut(core::Psp::Create(&ia, conn_qual, evd, flags, &psp), psp, psp_handle);
  });
}

DAT_RETURN PspCreateAny(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL* conn_qual, DAT_EVD_HANDLE evd_handle,
                        DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* psp_handle) noexcept {
  return GuardedOn<core::Ia>("dat_psp_create_any", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return Status(Code::kInvalidHandle, Detail::kEvdCr);
    if (psp_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    core::Psp* psp = nullptr;
    if (conn_qual == nullptr) return Status(Code::kInvalidParameter, Detail::kParamConnQual);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    return HandOut(core::Psp::CreateAny(&ia, *conn_qual, evd, flags, &psp), psp, psp_handle);
  });
}

DAT_RETURN PspQuery(DAT_PSP_HANDLE psp_handle, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM* param) noexcept {
  return QueryEntry<core::Psp>("dat_psp_query", psp_handle, Detail::kPsp, mask, param, DAT_PSP_FIELD_IA_HANDLE);
}

DAT_RETURN PspFree(DAT_PSP_HANDLE psp_handle) noexcept {
  return FreeEntry<core::Psp>("dat_psp_free", psp_handle, Detail::kPsp);
}

DAT_RETURN RspCreate(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL conn_qual, DAT_EP_HANDLE ep_handle,
                     DAT_EVD_HANDLE evd_handle, DAT_RSP_HANDLE* rsp_handle) noexcept {
  return GuardedOn<core::Ia>("dat_rsp_create", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    core::Ep* ep;
    if (!ResolveOptional(ep_handle, ep)) return Status(Code::kInvalidHandle, Detail::kEp);
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return Status(Code::kInvalidHandle, Detail::kEvdCr);
    if (rsp_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    core::Rsp* rsp = nullptr;
    return HandOut(core::Rsp::Create(&ia, conn_qual, ep, evd, &rsp), rsp, rsp_handle);
  });
}

DAT_RETURN RspQuery(DAT_RSP_HANDLE rsp_handle, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM* param) noexcept {
  return QueryEntry<core::Rsp>("dat_rsp_query", rsp_handle, Detail::kRsp, mask, param, DAT_RSP_FIELD_IA_HANDLE);
}

DAT_RETURN RspFree(DAT_RSP_HANDLE rsp_handle) noexcept {
  return FreeEntry<core::Rsp>("dat_rsp_free", rsp_handle, Detail::kRsp);
}

// A CR does not report its IA (DAT_CR_PARAM has no ia_handle).
DAT_RETURN CrQuery(DAT_CR_HANDLE cr_handle, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM* param) noexcept {
  return GuardedOn<core::Cr>("dat_cr_query", cr_handle, Detail::kCr, [&](const core::Cr& cr) -> Status {
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    cr.Query(KnownBits(mask), *param);
    return Status::Ok();
  });
}

DAT_RETURN CrAccept(DAT_CR_HANDLE cr_handle, DAT_EP_HANDLE ep_handle, DAT_COUNT private_data_size,
                    const DAT_PVOID private_data) noexcept {
  return GuardedOn<core::Cr>("dat_cr_accept", cr_handle, Detail::kCr, [&](core::Cr& cr) -> Status {
    core::Ep* ep;
    if (!ResolveOptional(ep_handle, ep)) return Status(Code::kInvalidHandle, Detail::kEp);
    return core::Cr::Accept(&cr, ep, private_data_size, private_data);
  });
}

DAT_RETURN CrReject(DAT_CR_HANDLE cr_handle, DAT_COUNT private_data_size, const DAT_PVOID private_data) noexcept {
  return GuardedOn<core::Cr>("dat_cr_reject", cr_handle, Detail::kCr, [&](core::Cr& cr) {
    return core::Cr::Reject(&cr, private_data_size, private_data);
  });
}

DAT_RETURN CrHandoff(DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL handoff) noexcept {
  return GuardedOn<core::Cr>("dat_cr_handoff", cr_handle, Detail::kCr, [&](core::Cr& cr) {
    return core::Cr::Handoff(&cr, handoff);
  });
}

}  // namespace softdat::dat
