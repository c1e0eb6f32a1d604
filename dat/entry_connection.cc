// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for connection management: active connect and disconnect, public and reserved
// service points, connection requests.
#include "core/cr.h"
#include "core/ep.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/service_point.h"
#include "dat/consumer_ia_handle.h"
#include "dat/entry.h"
#include "dat/raw_bits.h"
#include "dat/status_map.h"

namespace softdat::dat {

DAT_RETURN EpConnect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote_ia_address, DAT_CONN_QUAL remote_conn_qual,
                     DAT_TIMEOUT timeout, DAT_COUNT private_data_size, const DAT_PVOID private_data,
                     DAT_QOS qos, DAT_CONNECT_FLAGS flags) noexcept {
  return Guarded("dat_ep_connect", [&]() -> Status {
    core::Ep* ep = core::HandleAs<core::Ep>(ep_handle);
    if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    if (!Fits(flags) || flags & ~(DAT_CONNECT_MULTIPATH_REQUESTED_FLAG | DAT_CONNECT_MULTIPATH_REQUIRED_FLAG))
      return Status(Code::kInvalidParameter, Detail::kParamFlags);
    // One path only: a required multipath cannot be had, a requested one falls back to one.
    if (flags & DAT_CONNECT_MULTIPATH_REQUIRED_FLAG) return Status(Code::kModelNotSupported);
    (void)qos;  // best effort is all softdat offers; any QoS request gets it
    return ep->Connect(remote_ia_address, remote_conn_qual, timeout, private_data_size, private_data);
  });
}

DAT_RETURN EpDupConnect(DAT_EP_HANDLE ep_handle, DAT_EP_HANDLE ep_dup_handle, DAT_TIMEOUT timeout,
                        DAT_COUNT private_data_size, const DAT_PVOID private_data, DAT_QOS qos) noexcept {
  return Guarded("dat_ep_dup_connect", [&]() -> Status {
    core::Ep* ep = core::HandleAs<core::Ep>(ep_handle);
    if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    const core::Ep* dup = core::HandleAs<core::Ep>(ep_dup_handle);
    if (dup == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    (void)qos;
    return ep->DupConnect(*dup, timeout, private_data_size, private_data);
  });
}

DAT_RETURN EpDisconnect(DAT_EP_HANDLE ep_handle, DAT_CLOSE_FLAGS flags) noexcept {
  return Guarded("dat_ep_disconnect", [&]() -> Status {
    core::Ep* ep = core::HandleAs<core::Ep>(ep_handle);
    if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    return ep->Disconnect(flags);
  });
}

DAT_RETURN PspCreate(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL conn_qual, DAT_EVD_HANDLE evd_handle,
                     DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* psp_handle) noexcept {
  return Guarded("dat_psp_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return Status(Code::kInvalidHandle, Detail::kEvdCr);
    if (psp_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    core::Psp* psp = nullptr;
    Status status = core::Psp::Create(ia, conn_qual, evd, flags, &psp);
    if (status.ok()) *psp_handle = psp;
    return status;
  });
}

DAT_RETURN PspCreateAny(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL* conn_qual, DAT_EVD_HANDLE evd_handle,
                        DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* psp_handle) noexcept {
  return Guarded("dat_psp_create_any", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return Status(Code::kInvalidHandle, Detail::kEvdCr);
    if (psp_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    core::Psp* psp = nullptr;
    if (conn_qual == nullptr) return Status(Code::kInvalidParameter, Detail::kParamConnQual);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    Status status = core::Psp::CreateAny(ia, *conn_qual, evd, flags, &psp);
    if (status.ok()) *psp_handle = psp;
    return status;
  });
}

DAT_RETURN PspQuery(DAT_PSP_HANDLE psp_handle, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM* param) noexcept {
  return Guarded("dat_psp_query", [&]() -> Status {
    const core::Psp* psp = core::HandleAs<core::Psp>(psp_handle);
    if (psp == nullptr) return Status(Code::kInvalidHandle, Detail::kPsp);
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    psp->Query(known, *param);
    if (known & DAT_PSP_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(psp->ia());
    return Status::Ok();
  });
}

DAT_RETURN PspFree(DAT_PSP_HANDLE psp_handle) noexcept {
  return Guarded("dat_psp_free", [&]() -> Status {
    core::Psp* psp = core::HandleAs<core::Psp>(psp_handle);
    if (psp == nullptr) return Status(Code::kInvalidHandle, Detail::kPsp);
    return core::Psp::Free(psp);
  });
}

DAT_RETURN RspCreate(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL conn_qual, DAT_EP_HANDLE ep_handle,
                     DAT_EVD_HANDLE evd_handle, DAT_RSP_HANDLE* rsp_handle) noexcept {
  return Guarded("dat_rsp_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Ep* ep = nullptr;
    if (ep_handle != DAT_HANDLE_NULL) {
      ep = core::HandleAs<core::Ep>(ep_handle);
      if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    }
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return Status(Code::kInvalidHandle, Detail::kEvdCr);
    if (rsp_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    core::Rsp* rsp = nullptr;
    Status status = core::Rsp::Create(ia, conn_qual, ep, evd, &rsp);
    if (status.ok()) *rsp_handle = rsp;
    return status;
  });
}

DAT_RETURN RspQuery(DAT_RSP_HANDLE rsp_handle, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM* param) noexcept {
  return Guarded("dat_rsp_query", [&]() -> Status {
    const core::Rsp* rsp = core::HandleAs<core::Rsp>(rsp_handle);
    if (rsp == nullptr) return Status(Code::kInvalidHandle, Detail::kRsp);
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    rsp->Query(known, *param);
    if (known & DAT_RSP_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(rsp->ia());
    return Status::Ok();
  });
}

DAT_RETURN RspFree(DAT_RSP_HANDLE rsp_handle) noexcept {
  return Guarded("dat_rsp_free", [&]() -> Status {
    core::Rsp* rsp = core::HandleAs<core::Rsp>(rsp_handle);
    if (rsp == nullptr) return Status(Code::kInvalidHandle, Detail::kRsp);
    return core::Rsp::Free(rsp);
  });
}

DAT_RETURN CrQuery(DAT_CR_HANDLE cr_handle, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM* param) noexcept {
  return Guarded("dat_cr_query", [&]() -> Status {
    const core::Cr* cr = core::HandleAs<core::Cr>(cr_handle);
    if (cr == nullptr) return Status(Code::kInvalidHandle, Detail::kCr);
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    cr->Query(known, *param);
    return Status::Ok();
  });
}

DAT_RETURN CrAccept(DAT_CR_HANDLE cr_handle, DAT_EP_HANDLE ep_handle, DAT_COUNT private_data_size,
                    const DAT_PVOID private_data) noexcept {
  return Guarded("dat_cr_accept", [&]() -> Status {
    core::Cr* cr = core::HandleAs<core::Cr>(cr_handle);
    if (cr == nullptr) return Status(Code::kInvalidHandle, Detail::kCr);
    core::Ep* ep = nullptr;
    if (ep_handle != DAT_HANDLE_NULL) {
      ep = core::HandleAs<core::Ep>(ep_handle);
      if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
    }
    return core::Cr::Accept(cr, ep, private_data_size, private_data);
  });
}

DAT_RETURN CrReject(DAT_CR_HANDLE cr_handle, DAT_COUNT private_data_size, const DAT_PVOID private_data) noexcept {
  return Guarded("dat_cr_reject", [&]() -> Status {
    core::Cr* cr = core::HandleAs<core::Cr>(cr_handle);
    if (cr == nullptr) return Status(Code::kInvalidHandle, Detail::kCr);
    return core::Cr::Reject(cr, private_data_size, private_data);
  });
}

DAT_RETURN CrHandoff(DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL handoff) noexcept {
  return Guarded("dat_cr_handoff", [&]() -> Status {
    core::Cr* cr = core::HandleAs<core::Cr>(cr_handle);
    if (cr == nullptr) return Status(Code::kInvalidHandle, Detail::kCr);
    return core::Cr::Handoff(cr, handoff);
  });
}

}  // namespace softdat::dat
