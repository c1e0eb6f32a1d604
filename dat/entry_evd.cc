// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for event dispatchers and consumer notification objects.
#include "core/cno.h"
#include "core/evd.h"
#include "core/ia.h"
#include "dat/consumer_ia_handle.h"
#include "dat/entry.h"
#include "dat/raw_bits.h"
#include "dat/status_map.h"

namespace softdat::dat {
namespace {

// An EVD argument that is not a live EVD: DAT has no generic EVD subtype, so name the argument.
constexpr Status kBadEvd(Code::kInvalidHandle, Detail::kParamHandle);

}  // namespace

DAT_RETURN EvdCreate(DAT_IA_HANDLE ia_handle, DAT_COUNT min_qlen, DAT_CNO_HANDLE cno_handle,
                     DAT_EVD_FLAGS flags, DAT_EVD_HANDLE* evd_handle) noexcept {
  return Guarded("dat_evd_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Cno* cno = nullptr;
    if (cno_handle != DAT_HANDLE_NULL) {
      cno = core::HandleAs<core::Cno>(cno_handle);
      if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    }
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    core::Evd* evd = nullptr;
    Status status = core::Evd::Create(ia, min_qlen, cno, flags, &evd);
    if (status.ok()) *evd_handle = evd;
    return status;
  });
}

DAT_RETURN EvdQuery(DAT_EVD_HANDLE evd_handle, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM* param) noexcept {
  return Guarded("dat_evd_query", [&]() -> Status {
    const core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    evd->Query(known, *param);
    if (known & DAT_EVD_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(evd->ia());
    return Status::Ok();
  });
}

DAT_RETURN EvdModifyCno(DAT_EVD_HANDLE evd_handle, DAT_CNO_HANDLE cno_handle) noexcept {
  return Guarded("dat_evd_modify_cno", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    core::Cno* cno = nullptr;
    if (cno_handle != DAT_HANDLE_NULL) {
      cno = core::HandleAs<core::Cno>(cno_handle);
      if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    }
    return evd->ModifyCno(cno);
  });
}

DAT_RETURN EvdEnable(DAT_EVD_HANDLE evd_handle) noexcept {
  return Guarded("dat_evd_enable", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    evd->Enable();
    return Status::Ok();
  });
}

DAT_RETURN EvdDisable(DAT_EVD_HANDLE evd_handle) noexcept {
  return Guarded("dat_evd_disable", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    evd->Disable();
    return Status::Ok();
  });
}

DAT_RETURN EvdWait(DAT_EVD_HANDLE evd_handle, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                   DAT_EVENT* event, DAT_COUNT* nmore) noexcept {
  return Guarded("dat_evd_wait", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    if (event == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvent);
    return evd->Wait(timeout, threshold, *event, nmore);
  });
}

DAT_RETURN EvdResize(DAT_EVD_HANDLE evd_handle, DAT_COUNT qlen) noexcept {
  return Guarded("dat_evd_resize", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    return evd->Resize(qlen);
  });
}

DAT_RETURN EvdPostSe(DAT_EVD_HANDLE evd_handle, const DAT_EVENT* event) noexcept {
  return Guarded("dat_evd_post_se", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    if (event == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvent);
    // The event number as bits: a consumer's struct may hold any (the dat_api fuzzer's find).
    if (RawBits(event->event_number) != DAT_SOFTWARE_EVENT) return Status(Code::kInvalidParameter, Detail::kParamEvent);
    return evd->PostSoftware(*event);
  });
}

DAT_RETURN EvdDequeue(DAT_EVD_HANDLE evd_handle, DAT_EVENT* event) noexcept {
  return Guarded("dat_evd_dequeue", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    if (event == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvent);
    return evd->Dequeue(*event);
  });
}

DAT_RETURN EvdFree(DAT_EVD_HANDLE evd_handle) noexcept {
  return Guarded("dat_evd_free", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    return core::Evd::Free(evd);
  });
}

DAT_RETURN EvdSetUnwaitable(DAT_EVD_HANDLE evd_handle) noexcept {
  return Guarded("dat_evd_set_unwaitable", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    evd->SetUnwaitable();
    return Status::Ok();
  });
}

DAT_RETURN EvdClearUnwaitable(DAT_EVD_HANDLE evd_handle) noexcept {
  return Guarded("dat_evd_clear_unwaitable", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    evd->ClearUnwaitable();
    return Status::Ok();
  });
}

DAT_RETURN CnoCreate(DAT_IA_HANDLE ia_handle, DAT_OS_WAIT_PROXY_AGENT agent,
                     DAT_CNO_HANDLE* cno_handle) noexcept {
  return Guarded("dat_cno_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    if (cno_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    core::Cno* cno = nullptr;
    Status status = core::Cno::Create(ia, agent, &cno);
    if (status.ok()) *cno_handle = cno;
    return status;
  });
}

DAT_RETURN CnoModifyAgent(DAT_CNO_HANDLE cno_handle, DAT_OS_WAIT_PROXY_AGENT agent) noexcept {
  return Guarded("dat_cno_modify_agent", [&]() -> Status {
    core::Cno* cno = core::HandleAs<core::Cno>(cno_handle);
    if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    cno->ModifyAgent(agent);
    return Status::Ok();
  });
}

DAT_RETURN CnoQuery(DAT_CNO_HANDLE cno_handle, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM* param) noexcept {
  return Guarded("dat_cno_query", [&]() -> Status {
    const core::Cno* cno = core::HandleAs<core::Cno>(cno_handle);
    if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    cno->Query(known, *param);
    if (known & DAT_CNO_FIELD_IA_HANDLE) param->ia_handle = ConsumerIaHandle(cno->ia());
    return Status::Ok();
  });
}

DAT_RETURN CnoFree(DAT_CNO_HANDLE cno_handle) noexcept {
  return Guarded("dat_cno_free", [&]() -> Status {
    core::Cno* cno = core::HandleAs<core::Cno>(cno_handle);
    if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    return core::Cno::Free(cno);
  });
}

DAT_RETURN CnoWait(DAT_CNO_HANDLE cno_handle, DAT_TIMEOUT timeout, DAT_EVD_HANDLE* evd_handle) noexcept {
  return Guarded("dat_cno_wait", [&]() -> Status {
    core::Cno* cno = core::HandleAs<core::Cno>(cno_handle);
    if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvd);
    return cno->Wait(timeout, *evd_handle);
  });
}

DAT_RETURN CnoFdCreate(DAT_IA_HANDLE ia_handle, DAT_FD* fd, DAT_CNO_HANDLE* cno_handle) noexcept {
  return Guarded("dat_cno_fd_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Cno* cno = nullptr;
    if (fd == nullptr) return Status(Code::kInvalidParameter, Detail::kParamFd);
    if (cno_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    Status status = core::Cno::CreateWithFd(ia, *fd, &cno);
    if (status.ok()) *cno_handle = cno;
    return status;
  });
}

DAT_RETURN CnoTrigger(DAT_CNO_HANDLE cno_handle, DAT_EVD_HANDLE* evd_handle) noexcept {
  return Guarded("dat_cno_trigger", [&]() -> Status {
    core::Cno* cno = core::HandleAs<core::Cno>(cno_handle);
    if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvd);
    *evd_handle = cno->Trigger();
    return Status::Ok();
  });
}

}  // namespace softdat::dat
