// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// PZ create, free and query.
#include "core/pz.h"

#include "core/ia.h"

namespace softdat::core {

Status Pz::Create(Ia* ia, Pz** out) {
  std::unique_ptr<transport::ProtectionDomain> domain;
  if (Status status = ia->transport().CreateProtectionDomain(domain); !status.ok()) return status;
  Pz* pz = NewHandle<Pz>(ia->provider, ia, std::move(domain));
  ia->Track(pz);
  *out = pz;
  return Status::Ok();
}

Status Pz::Free(Pz* pz) {
  if (pz->users() > 0) return Status(Code::kInvalidState, Detail::kPzInUse);
  pz->ia_->Untrack(pz);
  Destroy(pz);
  return Status::Ok();
}

void Pz::Destroy(Pz* pz) { DeleteHandle(pz); }

void Pz::Query(DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM& param) const {
  if (mask & DAT_PZ_FIELD_IA_HANDLE) param.ia_handle = ia_;
}

}  // namespace softdat::core
