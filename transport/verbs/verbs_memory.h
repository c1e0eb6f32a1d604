// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Protection domains and registered memory on the device. Each PD also registers a few bytes of
// its own, the target of the one zero-length SGE a zero-segment receive becomes (libsiw refuses
// receives without SGEs).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "transport/device_resources.h"

namespace softdat::transport::verbs {

class VerbsPd final : public ProtectionDomain {
 public:
  VerbsPd(ibv_pd* pd, ibv_mr* empty) : pd_(pd), empty_(empty) {}
  ~VerbsPd() override;
  ibv_pd* pd() const { return pd_; }
  // The SGE a receive without segments is posted with.
  ibv_sge EmptySge() const { return ibv_sge{reinterpret_cast<std::uint64_t>(empty_buffer_), 0, empty_->lkey}; }
  static Status Create(ibv_context* context, std::unique_ptr<ProtectionDomain>& out);

 private:
  ibv_pd* pd_;
  ibv_mr* empty_;
  static inline std::uint8_t empty_buffer_[64] = {};
};

class VerbsMr final : public MemoryRegion {
 public:
  explicit VerbsMr(ibv_mr* mr) : mr_(mr) {}
  ~VerbsMr() override { ibv_dereg_mr(mr_); }
  std::uint32_t local_key() const override { return mr_->lkey; }
  std::uint32_t remote_key() const override { return mr_->rkey; }

 private:
  ibv_mr* mr_;
};

Status RegisterMemory(VerbsPd& pd, void* address, std::uint64_t length, MemoryAccess access,
                      std::unique_ptr<MemoryRegion>& out);

}  // namespace softdat::transport::verbs
