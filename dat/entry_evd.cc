// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points for event dispatchers and consumer notification objects.
#include "core/cno.h"
#include "core/evd.h"
#include "core/ia.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"
#include "dat/raw_bits.h"

namespace softdat::dat {
namespace {

// An EVD argument that is not a live EVD: DAT has no generic EVD subtype, so name the argument.
constexpr Detail kBadEvd = Detail::kParamHandle;

// dat_evd_enable/disable/set_unwaitable/clear_unwaitable: the handle, then a switch that cannot fail.
DAT_RETURN SwitchEntry(const char* call, DAT_EVD_HANDLE evd_handle, void (core::Evd::*flip)()) noexcept {
  return GuardedOn<core::Evd>(call, evd_handle, kBadEvd, [&](core::Evd& evd) {
    (evd.*flip)();
    return Status::Ok();
  });
}

}  // namespace

DAT_RETURN EvdCreate(DAT_IA_HANDLE ia_handle, DAT_COUNT min_qlen, DAT_CNO_HANDLE cno_handle,
                     DAT_EVD_FLAGS flags, DAT_EVD_HANDLE* evd_handle) noexcept {
  return GuardedOn<core::Ia>("dat_evd_create", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    core::Cno* cno;
    if (!ResolveOptional(cno_handle, cno)) return Status(Code::kInvalidHandle, Detail::kCno);
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamFlags);
    core::Evd* evd = nullptr;
    return HandOut(core::Evd::Create(&ia, min_qlen, cno, flags, &evd), evd, evd_handle);
  });
}

DAT_RETURN EvdQuery(DAT_EVD_HANDLE evd_handle, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM* param) noexcept {
  return QueryEntry<core::Evd>("dat_evd_query", evd_handle, kBadEvd, mask, param, DAT_EVD_FIELD_IA_HANDLE);
}

DAT_RETURN EvdModifyCno(DAT_EVD_HANDLE evd_handle, DAT_CNO_HANDLE cno_handle) noexcept {
  return GuardedOn<core::Evd>("dat_evd_modify_cno", evd_handle, kBadEvd, [&](core::Evd& evd) -> Status {
    core::Cno* cno;
    if (!ResolveOptional(cno_handle, cno)) return Status(Code::kInvalidHandle, Detail::kCno);
    return evd.ModifyCno(cno);
  });
}

DAT_RETURN EvdEnable(DAT_EVD_HANDLE evd_handle) noexcept {
  return SwitchEntry("dat_evd_enable", evd_handle, &core::Evd::Enable);
}

DAT_RETURN EvdDisable(DAT_EVD_HANDLE evd_handle) noexcept {
  return SwitchEntry("dat_evd_disable", evd_handle, &core::Evd::Disable);
}

DAT_RETURN EvdWait(DAT_EVD_HANDLE evd_handle, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                   DAT_EVENT* event, DAT_COUNT* nmore) noexcept {
  return GuardedOn<core::Evd>("dat_evd_wait", evd_handle, kBadEvd, [&](core::Evd& evd) -> Status {
    if (event == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvent);
    return evd.Wait(timeout, threshold, *event, nmore);
  });
}

DAT_RETURN EvdResize(DAT_EVD_HANDLE evd_handle, DAT_COUNT qlen) noexcept {
  return GuardedOn<core::Evd>("dat_evd_resize", evd_handle, kBadEvd, [&](core::Evd& evd) { return evd.Resize(qlen); });
}

DAT_RETURN EvdPostSe(DAT_EVD_HANDLE evd_handle, const DAT_EVENT* event) noexcept {
  return GuardedOn<core::Evd>("dat_evd_post_se", evd_handle, kBadEvd, [&](core::Evd& evd) -> Status {
    if (event == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvent);
    // The event number as bits: a consumer's struct may hold any (the dat_api fuzzer's find).
    if (RawBits(event->event_number) != DAT_SOFTWARE_EVENT) return Status(Code::kInvalidParameter, Detail::kParamEvent);
    return evd.PostSoftware(*event);
  });
}

DAT_RETURN EvdDequeue(DAT_EVD_HANDLE evd_handle, DAT_EVENT* event) noexcept {
  return GuardedOn<core::Evd>("dat_evd_dequeue", evd_handle, kBadEvd, [&](core::Evd& evd) -> Status {
    if (event == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvent);
    return evd.Dequeue(*event);
  });
}

DAT_RETURN EvdFree(DAT_EVD_HANDLE evd_handle) noexcept {
  return FreeEntry<core::Evd>("dat_evd_free", evd_handle, kBadEvd);
}

DAT_RETURN EvdSetUnwaitable(DAT_EVD_HANDLE evd_handle) noexcept {
  return SwitchEntry("dat_evd_set_unwaitable", evd_handle, &core::Evd::SetUnwaitable);
}

DAT_RETURN EvdClearUnwaitable(DAT_EVD_HANDLE evd_handle) noexcept {
  return SwitchEntry("dat_evd_clear_unwaitable", evd_handle, &core::Evd::ClearUnwaitable);
}

DAT_RETURN CnoCreate(DAT_IA_HANDLE ia_handle, DAT_OS_WAIT_PROXY_AGENT agent,
                     DAT_CNO_HANDLE* cno_handle) noexcept {
  return GuardedOn<core::Ia>("dat_cno_create", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    if (cno_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    core::Cno* cno = nullptr;
    return HandOut(core::Cno::Create(&ia, agent, &cno), cno, cno_handle);
  });
}

DAT_RETURN CnoModifyAgent(DAT_CNO_HANDLE cno_handle, DAT_OS_WAIT_PROXY_AGENT agent) noexcept {
  return GuardedOn<core::Cno>("dat_cno_modify_agent", cno_handle, Detail::kCno, [&](core::Cno& cno) {
    cno.ModifyAgent(agent);
    return Status::Ok();
  });
}

DAT_RETURN CnoQuery(DAT_CNO_HANDLE cno_handle, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM* param) noexcept {
  return QueryEntry<core::Cno>("dat_cno_query", cno_handle, Detail::kCno, mask, param, DAT_CNO_FIELD_IA_HANDLE);
}

DAT_RETURN CnoFree(DAT_CNO_HANDLE cno_handle) noexcept {
  return FreeEntry<core::Cno>("dat_cno_free", cno_handle, Detail::kCno);
}

DAT_RETURN CnoWait(DAT_CNO_HANDLE cno_handle, DAT_TIMEOUT timeout, DAT_EVD_HANDLE* evd_handle) noexcept {
  return GuardedOn<core::Cno>("dat_cno_wait", cno_handle, Detail::kCno, [&](core::Cno& cno) -> Status {
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvd);
    return cno.Wait(timeout, *evd_handle);
  });
}

DAT_RETURN CnoFdCreate(DAT_IA_HANDLE ia_handle, DAT_FD* fd, DAT_CNO_HANDLE* cno_handle) noexcept {
  return GuardedOn<core::Ia>("dat_cno_fd_create", ia_handle, Detail::kIa, [&](core::Ia& ia) -> Status {
    core::Cno* cno = nullptr;
    if (fd == nullptr) return Status(Code::kInvalidParameter, Detail::kParamFd);
    if (cno_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
    return HandOut(core::Cno::CreateWithFd(&ia, *fd, &cno), cno, cno_handle);
  });
}

DAT_RETURN CnoTrigger(DAT_CNO_HANDLE cno_handle, DAT_EVD_HANDLE* evd_handle) noexcept {
  return GuardedOn<core::Cno>("dat_cno_trigger", cno_handle, Detail::kCno, [&](core::Cno& cno) -> Status {
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEvd);
    *evd_handle = cno.Trigger();
    return Status::Ok();
  });
}

}  // namespace softdat::dat
