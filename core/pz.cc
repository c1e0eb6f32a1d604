// PZ create, free and query.
#include "core/pz.h"

#include "core/ia.h"

namespace softdat::core {

Status Pz::Create(Ia* ia, Pz** out) {
  if (out == nullptr) return Status(Code::kInvalidParameter, Detail::kArg2);
  Pz* pz = NewHandle<Pz>(ia->provider, ia);
  ia->Track(pz);
  *out = pz;
  return Status::Ok();
}

Status Pz::Free(Pz* pz) {
  if (pz->users() > 0) return Status(Code::kInvalidState, Detail::kPzInUse);
  pz->ia_->Untrack(pz);
  DeleteHandle(pz);
  return Status::Ok();
}

Status Pz::Query(DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM* param) const {
  if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
  if (mask & DAT_PZ_FIELD_IA_HANDLE) param->ia_handle = ia_;
  return Status::Ok();
}

}  // namespace softdat::core
