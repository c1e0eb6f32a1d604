// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// RMR create, bind, query, free, and invalidation by a peer.
#include "core/rmr.h"

#include "base/log.h"
#include "core/dat_ib.h"
#include "core/ep.h"
#include "core/ia.h"
#include "core/lmr.h"
#include "core/memory_table.h"
#include "core/pz.h"

namespace softdat::core {

Status Rmr::Create(Pz* pz, Rmr** out) {
  Ia* ia = pz->ia();
  if (ia->capabilities().device_memory_keys) {
    // A window's key would have to come from the device (ibv_alloc_mw / bind_mw), which the
    // transport interface does not offer, and rxe/siw have no type-2 windows to bind anyway.
    SOFTDAT_LOG(kWarn, "dat_rmr_create(%s): memory windows are not supported on a device transport; "
                "expose memory with an LMR's rmr_context instead", ia->name().c_str());
    return Status(Code::kModelNotSupported);
  }
  Rmr* rmr = NewHandle<Rmr>(ia->provider, ia, pz);
  pz->AddUser();
  ia->Track(rmr);
  *out = rmr;
  return Status::Ok();
}

Status Rmr::Free(Rmr* rmr) {
  rmr->ia_->Untrack(rmr);
  Destroy(rmr);
  return Status::Ok();
}

void Rmr::Destroy(Rmr* rmr) {
  {
    std::lock_guard lock(rmr->mutex_);
    if (rmr->key_ != 0) rmr->ia_->memory().Release(rmr->key_);
  }
  rmr->pz_->RemoveUser();
  DeleteHandle(rmr);
}

void Rmr::Query(DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM& param) const {
  std::lock_guard lock(mutex_);
  // A key a peer invalidated no longer names the window: report it unbound.
  const bool bound = key_ != 0 && ia_->memory().Find(key_).key == key_;
  if (mask & DAT_RMR_FIELD_IA_HANDLE) param.ia_handle = ia_;
  if (mask & DAT_RMR_FIELD_PZ_HANDLE) param.pz_handle = pz_;
  if (mask & DAT_RMR_FIELD_LMR_TRIPLET) param.lmr_triplet = bound ? triplet_ : DAT_LMR_TRIPLET{};
  if (mask & DAT_RMR_FIELD_MEM_PRIV) param.mem_priv = bound ? privileges_ : DAT_MEM_PRIV_NONE_FLAG;
  if (mask & DAT_RMR_FIELD_RMR_CONTEXT) param.rmr_context = bound ? key_ : 0;
  if (mask & DAT_RMR_FIELD_RMR_SCOPE) param.rmr_scope = DAT_RMR_SCOPE_EP;
  if (mask & DAT_RMR_FIELD_VA_TYPE) param.va_type = DAT_VA_TYPE_VA;
}

Status Rmr::Bind(Lmr* lmr, const DAT_LMR_TRIPLET& triplet, std::uint32_t privileges, DAT_VA_TYPE va_type,
                 Ep* ep, DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT& context) {
  if (va_type != DAT_VA_TYPE_VA) return Status(Code::kInvalidParameter, Detail::kParamVaType);
  if ((privileges & ~(DAT_MEM_PRIV_ALL_FLAG | kPrivRemoteAtomic)) != 0)
    return Status(Code::kInvalidParameter, Detail::kParamPrivileges);
  if (ep->ia() != ia_) return Status(Code::kInvalidHandle, Detail::kEp);
  const bool unbind = triplet.segment_length == 0;
  if (!unbind) {
    if (lmr == nullptr || lmr->ia() != ia_) return Status(Code::kInvalidHandle, Detail::kLmr);
    if (triplet.lmr_context != lmr->context()) return Status(Code::kInvalidParameter, Detail::kParamLmrTriplet);
    const WindowView region = ia_->memory().Find(lmr->context());
    if (!region.Contains(triplet.virtual_address, triplet.segment_length))
      return Status(Code::kInvalidParameter, Detail::kParamLmrTriplet);
    if (lmr->pz() != pz_ || ep->pz() != pz_) return Status(Code::kProtectionViolation);
    // The window may not grant the peer what the region does not grant locally.
    // (Local read is always granted, as on an RNIC: see core/local_iov.cc.)
    if ((privileges & (DAT_MEM_PRIV_REMOTE_WRITE_FLAG | kPrivRemoteAtomic)) &&
        !region.Allows(DAT_MEM_PRIV_LOCAL_WRITE_FLAG))
      return Status(Code::kPrivilegesViolation);
  }

  // The bind's completion goes to the EP's EVD after this RMR's lock is released (declared first,
  // destroyed last): an EVD post runs with no lock held.
  struct DeliverAfterUnlock {
    Ep* ep;
    ~DeliverAfterUnlock() { ep->DeliverPending(); }
  } deliver{ep};
  std::lock_guard lock(mutex_);
  std::uint32_t key = 0;
  if (!unbind) {
    if (Status status = ia_->memory().Reserve(key); !status.ok()) return status;
  }
  std::uint64_t request = 0;
  bool connected = false;
  if (Status status = ep->PostBind(this, cookie, flags, request, connected); !status.ok()) {
    if (key != 0) ia_->memory().Release(key);
    return status;
  }
  if (!connected) {
    // Flushed: nothing changes.
    if (key != 0) ia_->memory().Release(key);
    ep->FinishBind(request, false);
    context = key_;
    return Status::Ok();
  }
  if (key_ != 0) ia_->memory().Release(key_);  // the previous context stops working now
  key_ = key;
  if (!unbind) {
    WindowView window;
    window.key = key;
    window.address = triplet.virtual_address;
    window.length = triplet.segment_length;
    window.privileges = static_cast<DAT_MEM_PRIV_FLAGS>(privileges);
    window.pz = pz_;
    window.endpoint = ep;
    window.is_lmr = false;
    ia_->memory().Publish(window);
    triplet_ = triplet;
    privileges_ = static_cast<DAT_MEM_PRIV_FLAGS>(privileges);
  } else {
    triplet_ = DAT_LMR_TRIPLET{};
    privileges_ = DAT_MEM_PRIV_NONE_FLAG;
  }
  // The window is in place before its completion can be seen.
  ep->FinishBind(request, true);
  context = key;
  return Status::Ok();
}

bool Rmr::InvalidateByPeer(Ia& ia, const Pz* pz, std::uint32_t key) {
  return ia.memory().Invalidate(key, [pz](const WindowView& view) { return !view.is_lmr && view.pz == pz; });
}

}  // namespace softdat::core
