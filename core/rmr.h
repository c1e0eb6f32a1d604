// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The RMR handle object: a remote memory window over part of an LMR, bound to one endpoint (DAT
// RMR scope EP). Each dat_rmr_bind takes a fresh key (rmr_context) from the IA's key table, so a
// peer holding an old context is refused; a peer's Send with Invalidate revokes the current one.
#pragma once

#include <cstdint>
#include <mutex>

#include "base/mutex.h"
#include "base/status.h"
#include "core/handle.h"

namespace softdat::core {

class Ia;
class Pz;
class Lmr;
class Ep;

class Rmr : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kRmr;

  // kModelNotSupported on a device transport (device_memory_keys): no memory windows there.
  static Status Create(Pz* pz, Rmr** out);
  static Status Free(Rmr* rmr);
  static void Destroy(Rmr* rmr);
  void Query(DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM& param) const;

  // dat_rmr_bind. A zero-length triplet unbinds. The completion arrives on the EP's request EVD
  // in posting order; a bind posted to a DISCONNECTED EP is flushed and changes nothing.
  Status Bind(Lmr* lmr, const DAT_LMR_TRIPLET& triplet, std::uint32_t privileges, DAT_VA_TYPE va_type,
              Ep* ep, DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT& context);

  // A peer's Send with Invalidate named `key`: revoke it if it is an RMR window of `pz`.
  static bool InvalidateByPeer(Ia& ia, const Pz* pz, std::uint32_t key);

  Rmr(Ia* ia, Pz* pz) : ia_(ia), pz_(pz) {}

  Ia* ia() const { return ia_; }
  Pz* pz() const { return pz_; }

 private:
  Ia* ia_;
  Pz* pz_;
  mutable softdat::Mutex mutex_;  // binds and queries of this RMR
  std::uint32_t key_ = 0;     // 0: unbound
  DAT_LMR_TRIPLET triplet_{};
  DAT_MEM_PRIV_FLAGS privileges_ = DAT_MEM_PRIV_NONE_FLAG;
};

}  // namespace softdat::core
