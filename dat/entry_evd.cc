// DAT entry points for event dispatchers and consumer notification objects.
#include "core/cno.h"
#include "core/evd.h"
#include "core/ia.h"
#include "dat/consumer_ia_handle.h"
#include "dat/entries.h"
#include "dat/status_map.h"

namespace softdat::dat {
namespace {

// An EVD argument that is not a live EVD: DAT has no generic EVD subtype, so name the argument.
constexpr Status kBadEvd(Code::kInvalidHandle, Detail::kArg1);

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
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kArg5);
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
    Status status = evd->Query(mask, param);
    if (status.ok() && (mask & DAT_EVD_FIELD_IA_HANDLE)) param->ia_handle = ConsumerIaHandle(evd->ia());
    return status;
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
    evd->queue().Enable();
    return Status::Ok();
  });
}

DAT_RETURN EvdDisable(DAT_EVD_HANDLE evd_handle) noexcept {
  return Guarded("dat_evd_disable", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    evd->queue().Disable();
    return Status::Ok();
  });
}

DAT_RETURN EvdWait(DAT_EVD_HANDLE evd_handle, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                   DAT_EVENT* event, DAT_COUNT* nmore) noexcept {
  return Guarded("dat_evd_wait", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    return evd->Wait(timeout, threshold, event, nmore);
  });
}

DAT_RETURN EvdResize(DAT_EVD_HANDLE evd_handle, DAT_COUNT qlen) noexcept {
  return Guarded("dat_evd_resize", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    return evd->queue().Resize(qlen);
  });
}

DAT_RETURN EvdPostSe(DAT_EVD_HANDLE evd_handle, const DAT_EVENT* event) noexcept {
  return Guarded("dat_evd_post_se", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    return evd->PostSoftware(event);
  });
}

DAT_RETURN EvdDequeue(DAT_EVD_HANDLE evd_handle, DAT_EVENT* event) noexcept {
  return Guarded("dat_evd_dequeue", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    return evd->Dequeue(event);
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
    evd->queue().SetUnwaitable();
    return Status::Ok();
  });
}

DAT_RETURN EvdClearUnwaitable(DAT_EVD_HANDLE evd_handle) noexcept {
  return Guarded("dat_evd_clear_unwaitable", [&]() -> Status {
    core::Evd* evd = core::HandleAs<core::Evd>(evd_handle);
    if (evd == nullptr) return kBadEvd;
    evd->queue().ClearUnwaitable();
    return Status::Ok();
  });
}

DAT_RETURN CnoCreate(DAT_IA_HANDLE ia_handle, DAT_OS_WAIT_PROXY_AGENT agent,
                     DAT_CNO_HANDLE* cno_handle) noexcept {
  return Guarded("dat_cno_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    if (cno_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
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
    cno->cno().ModifyAgent(agent);
    return Status::Ok();
  });
}

DAT_RETURN CnoQuery(DAT_CNO_HANDLE cno_handle, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM* param) noexcept {
  return Guarded("dat_cno_query", [&]() -> Status {
    const core::Cno* cno = core::HandleAs<core::Cno>(cno_handle);
    if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    Status status = cno->Query(mask, param);
    if (status.ok() && (mask & DAT_CNO_FIELD_IA_HANDLE)) param->ia_handle = ConsumerIaHandle(cno->ia());
    return status;
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
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
    evd::EventQueue* triggered = nullptr;
    Status status = cno->cno().Wait(timeout, &triggered);
    // "On a timeout, evd_handle is explicitly set to a null handle."
    *evd_handle = status.ok() && triggered != nullptr ? triggered->Query().owner : DAT_HANDLE_NULL;
    return status;
  });
}

DAT_RETURN CnoFdCreate(DAT_IA_HANDLE ia_handle, DAT_FD* fd, DAT_CNO_HANDLE* cno_handle) noexcept {
  return Guarded("dat_cno_fd_create", [&]() -> Status {
    core::Ia* ia = core::HandleAs<core::Ia>(ia_handle);
    if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
    core::Cno* cno = nullptr;
    Status status = core::Cno::CreateWithFd(ia, fd, cno_handle != nullptr ? &cno : nullptr);
    if (status.ok()) *cno_handle = cno;
    return status;
  });
}

DAT_RETURN CnoTrigger(DAT_CNO_HANDLE cno_handle, DAT_EVD_HANDLE* evd_handle) noexcept {
  return Guarded("dat_cno_trigger", [&]() -> Status {
    core::Cno* cno = core::HandleAs<core::Cno>(cno_handle);
    if (cno == nullptr) return Status(Code::kInvalidHandle, Detail::kCno);
    if (evd_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kArg2);
    evd::EventQueue* triggered = cno->cno().Take();
    *evd_handle = triggered != nullptr ? triggered->Query().owner : DAT_HANDLE_NULL;
    return Status::Ok();
  });
}

}  // namespace softdat::dat
