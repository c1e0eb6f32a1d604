// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Connection requests: accept, reject, handoff, query.
#include "core/cr.h"

#include <vector>

#include "base/log.h"
#include "core/ep.h"
#include "core/ia.h"
#include "core/private_data.h"
#include "core/service_point.h"

namespace softdat::core {

Cr::Cr(Ia* ia, std::unique_ptr<transport::PendingConnection> pending, DAT_CONN_QUAL conn_qual, Ep* local_ep,
       Rsp* rsp)
    : ia_(ia),
      pending_(std::move(pending)),
      conn_qual_(conn_qual),
      local_ep_(local_ep),
      rsp_(rsp),
      remote_address_(pending_->remote_address()) {}

Cr* Cr::Make(Ia* ia, std::unique_ptr<transport::PendingConnection> pending, HandleHeader* /*sp*/,
             DAT_CONN_QUAL conn_qual, Ep* local_ep, Rsp* rsp) {
  Cr* cr = NewHandle<Cr>(ia->provider, ia, std::move(pending), conn_qual, local_ep, rsp);
  ia->Track(cr);
  return cr;
}

DAT_EVENT Cr::ArrivalEvent(DAT_EVD_HANDLE evd, DAT_HANDLE sp) const {
  DAT_EVENT event{};
  // A UD endpoint's request (dat_ep_connect on a DAT_IB_SERVICE_TYPE_UD EP) is the extension's.
  event.event_number = pending_->datagram() ? static_cast<DAT_EVENT_NUMBER>(DAT_IB_UD_CONNECTION_REQUEST_EVENT)
                                            : DAT_CONNECTION_REQUEST_EVENT;
  event.evd_handle = evd;
  DAT_CR_ARRIVAL_EVENT_DATA& data = event.event_data.cr_arrival_event_data;
  data.sp_handle.psp_handle = sp;
  data.local_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(const_cast<sockaddr_in*>(&ia_->address()));
  data.conn_qual = conn_qual_;
  data.cr_handle = const_cast<Cr*>(this);
  data.truncate_flag = DAT_FALSE;
  return event;
}

void Cr::Destroy(Cr* cr) {
  cr->pending_.reset();  // refuses the request if it was never answered
  DeleteHandle(cr);
}

Status Cr::Accept(Cr* cr, Ep* ep, DAT_COUNT private_data_size, const void* private_data) {
  if (ep == nullptr) ep = cr->local_ep_;
  if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
  if (ep->ia() != cr->ia_) return Status(Code::kInvalidHandle, Detail::kEp);
  if (cr->local_ep_ != nullptr && ep != cr->local_ep_) return Status(Code::kInvalidParameter, Detail::kParamEp);
  const Status status = ep->Accept(*cr->pending_, cr->rsp_, private_data_size, private_data);
  if (status.code() == Code::kInvalidParameter || status.code() == Code::kInvalidState) return status;
  // Accepted, or the transport failed the accept: the request is answered either way.
  if (status.ok()) cr->ia_->counters().AddShared(DCNT_IA_SP_CR_ACCEPTED);
  cr->ia_->Untrack(cr);
  Destroy(cr);
  return status;
}

Status Cr::Reject(Cr* cr, DAT_COUNT private_data_size, const void* private_data) {
  if (Status status = CheckPrivateData(private_data_size, private_data, cr->ia_->capabilities().max_private_data);
      !status.ok())
    return status;
  cr->pending_->Reject({static_cast<const std::uint8_t*>(private_data), static_cast<std::size_t>(private_data_size)});
  if (cr->rsp_ != nullptr) cr->local_ep_->ReservedRequestRejected(cr->rsp_);
  cr->ia_->counters().AddShared(DCNT_IA_SP_CR_REJECTED);
  cr->ia_->counters().AddShared(DCNT_IA_CM_USER_REJ_TX);
  cr->ia_->Untrack(cr);
  Destroy(cr);
  return Status::Ok();
}

Status Cr::Handoff(Cr* cr, DAT_CONN_QUAL conn_qual) {
  if (cr->rsp_ != nullptr) return Status(Code::kInvalidState);
  Psp* target = nullptr;
  cr->ia_->ForEachTracked([&](HandleHeader* object) {
    Psp* psp = HandleAs<Psp>(object);
    if (psp != nullptr && psp->conn_qual() == conn_qual) target = psp;
  });
  if (target == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandoff);
  cr->conn_qual_ = conn_qual;
  target->Report(cr);
  return Status::Ok();
}

void Cr::Query(DAT_CR_PARAM_MASK mask, DAT_CR_PARAM& param) const {
  const std::span<const std::uint8_t> data = pending_->private_data();
  if (mask & DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR)
    param.remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(const_cast<sockaddr_in*>(&remote_address_));
  if (mask & DAT_CR_FIELD_REMOTE_PORT_QUAL) param.remote_port_qual = ntohs(remote_address_.sin_port);
  if (mask & DAT_CR_FIELD_PRIVATE_DATA_SIZE) param.private_data_size = static_cast<DAT_COUNT>(data.size());
  if (mask & DAT_CR_FIELD_PRIVATE_DATA)
    param.private_data = data.empty() ? nullptr : const_cast<std::uint8_t*>(data.data());
  if (mask & DAT_CR_FIELD_LOCAL_EP_HANDLE) param.local_ep_handle = local_ep_;
}

}  // namespace softdat::core
