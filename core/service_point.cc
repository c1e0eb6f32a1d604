// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// PSP and RSP: listening, connection request arrival, query and free.
#include "core/service_point.h"

#include "base/log.h"
#include "core/cr.h"
#include "core/ep.h"
#include "core/evd.h"
#include "core/ia.h"

namespace softdat::core {
namespace {

Status CheckCrEvd(const Ia* ia, const Evd* evd) {
  if (evd == nullptr || evd->ia() != ia || (evd->flags() & DAT_EVD_CR_FLAG) == 0)
    return Status(Code::kInvalidHandle, Detail::kEvdCr);
  return Status::Ok();
}

Status CheckConnQual(DAT_CONN_QUAL conn_qual, Detail argument) {
  if (conn_qual == 0 || conn_qual > 0xFFFF) {
    SOFTDAT_LOG(kWarn, "connection qualifier %llu is not a port (1..65535); softdat maps conn_qual to the "
                "transport's port number", static_cast<unsigned long long>(conn_qual));
    return Status(Code::kInvalidParameter, argument);
  }
  return Status::Ok();
}

}  // namespace

Status Psp::Listen(Ia* ia, std::uint16_t port, Evd* evd, DAT_PSP_FLAGS flags, Psp** out) {
  if (Status status = CheckCrEvd(ia, evd); !status.ok()) return status;
  if (flags != DAT_PSP_CONSUMER_FLAG) {
    if (flags == DAT_PSP_PROVIDER_FLAG) {
      SOFTDAT_LOG(kWarn, "dat_psp_create: provider-created EPs are not supported (DAT_PSP_CREATES_EP_NEVER)");
      return Status(Code::kModelNotSupported);
    }
    return Status(Code::kInvalidParameter, Detail::kParamFlags);
  }
  Psp* psp = NewHandle<Psp>(ia->provider, ia, evd, flags);
  psp->conn_qual_.store(port, std::memory_order_relaxed);
  if (Status status = ia->transport().Listen(port, &psp->events_, psp->listener_); !status.ok()) {
    DeleteHandle(psp);
    return status;
  }
  psp->conn_qual_.store(psp->listener_->port(), std::memory_order_relaxed);
  ia->counters().AddShared(DCNT_IA_CM_LISTEN);
  evd->AddUser();
  ia->Track(psp);
  if (ia->datagrams_wanted()) psp->ListenDatagrams();  // after Track: see Ia::WantDatagrams
  *out = psp;
  return Status::Ok();
}

void Psp::ListenDatagrams() {
  if (!ia_->capabilities().datagrams) return;
  std::lock_guard lock(datagram_mutex_);
  if (datagram_listener_ != nullptr || listener_ == nullptr) return;
  // UD endpoints resolve through the same qualifier (IB's SIDR): where its number is taken for
  // datagrams, the PSP still serves connections, and says that UD requests will not reach it.
  const std::uint16_t bound = listener_->port();
  if (Status status = ia_->transport().ListenDatagram(bound, &events_, datagram_listener_); !status.ok())
    SOFTDAT_LOG(kWarn, "dat_psp_create(%s): connection qualifier %u takes connections, but not UD endpoints' "
                "requests (%s)", ia_->name().c_str(), bound, CodeName(status.code()));
}

Status Psp::Create(Ia* ia, DAT_CONN_QUAL conn_qual, Evd* evd, DAT_PSP_FLAGS flags, Psp** out) {
  if (Status status = CheckConnQual(conn_qual, Detail::kParamConnQual); !status.ok()) return status;
  return Listen(ia, static_cast<std::uint16_t>(conn_qual), evd, flags, out);
}

Status Psp::CreateAny(Ia* ia, DAT_CONN_QUAL& conn_qual, Evd* evd, DAT_PSP_FLAGS flags, Psp** out) {
  Psp* psp = nullptr;
  if (Status status = Listen(ia, 0, evd, flags, &psp); !status.ok()) return status;
  conn_qual = psp->conn_qual();
  *out = psp;
  return Status::Ok();
}

Status Psp::Free(Psp* psp) {
  psp->ia_->Untrack(psp);
  Destroy(psp);
  return Status::Ok();
}

void Psp::Destroy(Psp* psp) {
  psp->listener_.reset();  // no request arrives after this
  // Destroyed outside datagram_mutex_: a listener's end waits out its calls in flight, which take
  // the IA's handle lock (Track), and Ia::WantDatagrams holds that lock while it takes this one.
  std::unique_ptr<transport::Listener> datagrams;
  {
    std::lock_guard lock(psp->datagram_mutex_);
    datagrams = std::move(psp->datagram_listener_);
  }
  datagrams.reset();
  psp->evd_->RemoveUser();
  DeleteHandle(psp);
}

void Psp::Query(DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM& param) const {
  if (mask & DAT_PSP_FIELD_IA_HANDLE) param.ia_handle = ia_;
  if (mask & DAT_PSP_FIELD_CONN_QUAL) param.conn_qual = conn_qual();
  if (mask & DAT_PSP_FIELD_EVD_HANDLE) param.evd_handle = evd_;
  if (mask & DAT_PSP_FIELD_PSP_FLAGS) param.psp_flags = flags_;
}

void Psp::Report(HandleHeader* cr) {
  evd_->Post(static_cast<Cr*>(cr)->ArrivalEvent(evd_, this));
}

void Psp::OnConnectRequest(std::unique_ptr<transport::PendingConnection> request) {
  ia_->counters().AddShared(request->datagram() ? DCNT_IA_CM_AH_REQ_RX : DCNT_IA_CM_REQ_RX);
  Cr* cr = Cr::Make(ia_, std::move(request), this, conn_qual(), nullptr, nullptr);
  Report(cr);
}

Status Rsp::Create(Ia* ia, DAT_CONN_QUAL conn_qual, Ep* ep, Evd* evd, Rsp** out) {
  if (Status status = CheckConnQual(conn_qual, Detail::kParamConnQual); !status.ok()) return status;
  if (ep == nullptr) {
    SOFTDAT_LOG(kWarn, "dat_rsp_create: provider-created EPs are not supported");
    return Status(Code::kModelNotSupported);
  }
  if (ep->ia() != ia) return Status(Code::kInvalidHandle, Detail::kEp);
  if (Status status = CheckCrEvd(ia, evd); !status.ok()) return status;
  Rsp* rsp = NewHandle<Rsp>(ia->provider, ia, ep, evd, conn_qual);
  if (Status status = ep->Reserve(rsp); !status.ok()) {
    DeleteHandle(rsp);
    return status;
  }
  if (Status status = ia->transport().Listen(static_cast<std::uint16_t>(conn_qual), &rsp->events_, rsp->listener_);
      !status.ok()) {
    ep->Unreserve(rsp);
    DeleteHandle(rsp);
    return status;
  }
  evd->AddUser();
  ia->Track(rsp);
  *out = rsp;
  return Status::Ok();
}

Status Rsp::Free(Rsp* rsp) {
  rsp->ia_->Untrack(rsp);
  Destroy(rsp);
  return Status::Ok();
}

void Rsp::Destroy(Rsp* rsp) {
  rsp->listener_.reset();
  // An EP still reserved (no request, or one not yet accepted) is the consumer's again. Its
  // pending request, if any, stays valid and can still be rejected.
  rsp->ep_->Unreserve(rsp);
  rsp->evd_->RemoveUser();
  DeleteHandle(rsp);
}

void Rsp::Query(DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM& param) const {
  if (mask & DAT_RSP_FIELD_IA_HANDLE) param.ia_handle = ia_;
  if (mask & DAT_RSP_FIELD_CONN_QUAL) param.conn_qual = conn_qual_;
  if (mask & DAT_RSP_FIELD_EVD_HANDLE) param.evd_handle = evd_;
  if (mask & DAT_RSP_FIELD_EP_HANDLE) param.ep_handle = ep_;
}

void Rsp::OnConnectRequest(std::unique_ptr<transport::PendingConnection> request) {
  if (used_.exchange(true)) {
    SOFTDAT_LOG(kInfo, "RSP on port %llu: a second connection request is refused (an RSP takes one)",
                static_cast<unsigned long long>(conn_qual_));
    return;  // destroying the request refuses it
  }
  ep_->ReservedRequestArrived(this);
  Cr* cr = Cr::Make(ia_, std::move(request), this, conn_qual_, ep_, this);
  // DAT 2.0: sp_handle is null for a reserved service point's request.
  evd_->Post(cr->ArrivalEvent(evd_, DAT_HANDLE_NULL));
}

}  // namespace softdat::core
