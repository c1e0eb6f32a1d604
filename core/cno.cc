// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// CNO create (with a proxy agent or an fd), free, query, wait and trigger.
#include "core/cno.h"

#include "core/ia.h"
#include "evd/event_queue.h"

namespace softdat::core {

Status Cno::Create(Ia* ia, const DAT_OS_WAIT_PROXY_AGENT& agent, Cno** out) {
  Cno* cno = NewHandle<Cno>(ia->provider, ia, agent);
  ia->Track(cno);
  // Its agent is told of events with no call of the consumer's (Transport::ReportWaits).
  ia->transport().ConsumerWatches(1);
  *out = cno;
  return Status::Ok();
}

Status Cno::CreateWithFd(Ia* ia, DAT_FD& fd, Cno** out) {
  Cno* cno = NewHandle<Cno>(ia->provider, ia, DAT_OS_WAIT_PROXY_AGENT{});
  if (Status status = cno->cno_.EnableFd(cno->fd_); !status.ok()) {
    DeleteHandle(cno);
    return status;
  }
  ia->Track(cno);
  ia->transport().ConsumerWatches(1);  // a consumer may wait on its fd, not in a DAT call
  fd = cno->fd_;
  *out = cno;
  return Status::Ok();
}

Status Cno::Free(Cno* cno) {
  if (Status status = cno->cno_.CheckFree(); !status.ok()) return status;
  cno->ia_->Untrack(cno);
  cno->ia_->transport().ConsumerWatches(-1);
  DeleteHandle(cno);
  return Status::Ok();
}

void Cno::Query(DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM& param) const {
  const evd::CnoInfo info = cno_.Query();
  if (mask & DAT_CNO_FIELD_IA_HANDLE) param.ia_handle = ia_;
  if (mask & DAT_CNO_FIELD_PROXY_TYPE) param.proxy_type = fd_ >= 0 ? DAT_PROXY_TYPE_FD : DAT_PROXY_TYPE_AGENT;
  if (mask & DAT_CNO_FIELD_PROXY) {
    if (fd_ >= 0)
      param.proxy.fd = fd_;
    else
      param.proxy.agent = info.agent;
  }
}

Status Cno::Wait(DAT_TIMEOUT timeout, DAT_EVD_HANDLE& evd) {
  evd::EventQueue* triggered = nullptr;
  // The IA's progress hook: in busy-poll nothing else moves the events that would trigger it.
  const Status status = cno_.Wait(timeout, &triggered, ia_->progress_hook());
  // "On a timeout, evd_handle is explicitly set to a null handle."
  evd = status.ok() && triggered != nullptr ? triggered->Query().owner : DAT_HANDLE_NULL;
  return status;
}

DAT_EVD_HANDLE Cno::Trigger() {
  evd::EventQueue* triggered = cno_.Take();
  return triggered != nullptr ? triggered->Query().owner : DAT_HANDLE_NULL;
}

}  // namespace softdat::core
