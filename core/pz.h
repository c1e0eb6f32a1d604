// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The PZ (protection zone) handle object: the transport's protection domain (an ibv_pd for verbs,
// a name for software transports) and a count of the objects that use it (LMRs, RMRs, EPs, SRQs)
// so that dat_pz_free can refuse while any of them exists.
#pragma once

#include <atomic>
#include <memory>

#include "base/status.h"
#include "core/handle.h"
#include "transport/device_resources.h"

namespace softdat::core {

class Ia;

class Pz : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kPz;

  // dat_pz_create / dat_pz_free / dat_pz_query. Free refuses (kInvalidState, kPzInUse) while any
  // LMR, RMR, EP or SRQ uses the PZ.
  static Status Create(Ia* ia, Pz** out);
  static Status Free(Pz* pz);
  // Abrupt IA close, after every user is gone.
  static void Destroy(Pz* pz);
  void Query(DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM& param) const;

  Pz(Ia* ia, std::unique_ptr<transport::ProtectionDomain> domain) : ia_(ia), domain_(std::move(domain)) {}

  Ia* ia() const { return ia_; }
  transport::ProtectionDomain* domain() const { return domain_.get(); }

  void AddUser() { users_.fetch_add(1, std::memory_order_relaxed); }
  void RemoveUser() { users_.fetch_sub(1, std::memory_order_release); }
  int users() const { return users_.load(std::memory_order_acquire); }

 private:
  Ia* ia_;
  std::unique_ptr<transport::ProtectionDomain> domain_;
  std::atomic<int> users_{0};
};

}  // namespace softdat::core
