// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The LMR (local memory region) handle object: a registered range of the consumer's virtual
// memory, its protection zone, privileges and the context (key) that names it in LMR triplets and,
// as rmr_context, to the remote side. All fields are fixed at creation. On a device transport the
// NIC registers the memory and issues both keys (lmr_context = its local key, rmr_context = its
// remote key); the registration lives as long as the LMR.
#pragma once

#include <cstdint>
#include <span>
#include <memory>

#include "base/status.h"
#include "core/handle.h"
#include "transport/device_resources.h"

namespace softdat::core {

class Ia;
class Pz;

class Lmr : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kLmr;

  // dat_lmr_create for DAT_MEM_TYPE_VIRTUAL with DAT_VA_TYPE_VA. Output pointers other than `out`
  // may be null; all are written only on success.
  static Status Create(Ia* ia, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                       DAT_VLEN length, Pz* pz, std::uint32_t privileges,
                       DAT_VA_TYPE va_type, Lmr** out, DAT_LMR_CONTEXT* lmr_context,
                       DAT_RMR_CONTEXT* rmr_context, DAT_VLEN* registered_length,
                       DAT_VADDR* registered_address);
  static Status Free(Lmr* lmr);
  // dat_lmr_sync_rdma_read / _write. Memory is coherent on the platforms softdat runs on, so
  // there is nothing to flush, but each segment must still name registered memory of `ia`
  // (kInvalidParameter otherwise).
  static Status SyncRdma(Ia& ia, std::span<const DAT_LMR_TRIPLET> segments);
  // Fills the fields `mask` asks for; ia_handle is the provider's IA (dat/ wraps it).
  void Query(DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM& param) const;

  Lmr(Ia* ia, Pz* pz, std::uint64_t address, std::uint64_t length, DAT_MEM_PRIV_FLAGS privileges,
      DAT_VA_TYPE va_type, std::uint32_t context, std::uint32_t remote_context,
      std::unique_ptr<transport::MemoryRegion> region)
      : ia_(ia), pz_(pz), address_(address), length_(length), privileges_(privileges),
        va_type_(va_type), context_(context), remote_context_(remote_context),
        region_(std::move(region)) {}

  Ia* ia() const { return ia_; }
  Pz* pz() const { return pz_; }
  std::uint64_t address() const { return address_; }
  std::uint64_t length() const { return length_; }
  DAT_MEM_PRIV_FLAGS privileges() const { return privileges_; }
  DAT_VA_TYPE va_type() const { return va_type_; }
  std::uint32_t context() const { return context_; }
  std::uint32_t remote_context() const { return remote_context_; }

 private:
  Ia* ia_;
  Pz* pz_;
  std::uint64_t address_;
  std::uint64_t length_;
  DAT_MEM_PRIV_FLAGS privileges_;
  DAT_VA_TYPE va_type_;
  std::uint32_t context_;         // lmr_context: the key of local triplets (a device's lkey)
  std::uint32_t remote_context_;  // rmr_context: what the peer names it by (a device's rkey)
  std::unique_ptr<transport::MemoryRegion> region_;  // device transports only
};

}  // namespace softdat::core
