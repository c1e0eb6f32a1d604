// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// LMR create, free and query: registration of consumer virtual memory.
#include "core/lmr.h"

#include "base/log.h"
#include "core/dat_ib.h"
#include "core/ia.h"
#include "core/pz.h"

namespace softdat::core {
namespace {

// Registers [address, address + length) with the device: the access its NIC needs for what the
// DAT privileges allow (local read is always granted, as everywhere in softdat).
Status Register(Ia* ia, Pz* pz, void* address, std::uint64_t length, std::uint32_t privileges,
                std::unique_ptr<transport::MemoryRegion>& out) {
  transport::MemoryAccess access;
  access.local_write = (privileges & DAT_MEM_PRIV_LOCAL_WRITE_FLAG) != 0;
  access.remote_read = (privileges & DAT_MEM_PRIV_REMOTE_READ_FLAG) != 0;
  access.remote_write = (privileges & DAT_MEM_PRIV_REMOTE_WRITE_FLAG) != 0;
  // Without atomics on the device the privilege grants nothing: no atomic ever reaches it.
  access.remote_atomic = (privileges & kPrivRemoteAtomic) != 0 && ia->capabilities().atomics;
  std::unique_ptr<transport::MemoryRegion> region;
  if (Status status = ia->transport().RegisterMemory(*pz->domain(), address, length, access, region);
      !status.ok()) {
    SOFTDAT_LOG(kWarn, "dat_lmr_create: the %s device refused to register %llu bytes at %p (%s)",
                ia->name().c_str(), static_cast<unsigned long long>(length), address, CodeName(status.code()));
    return status;
  }
  if (region == nullptr) {
    SOFTDAT_LOG(kError, "dat_lmr_create: the %s transport says it issues memory keys but registered nothing",
                ia->name().c_str());
    return Status(Code::kInternal);
  }
  out = std::move(region);
  return Status::Ok();
}

}  // namespace

Status Lmr::Create(Ia* ia, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region, DAT_VLEN length,
                   Pz* pz, std::uint32_t privileges, DAT_VA_TYPE va_type, Lmr** out,
                   DAT_LMR_CONTEXT* lmr_context, DAT_RMR_CONTEXT* rmr_context,
                   DAT_VLEN* registered_length, DAT_VADDR* registered_address) {
  if (mem_type != DAT_MEM_TYPE_VIRTUAL) {
    SOFTDAT_LOG(kWarn, "dat_lmr_create: memory type 0x%x is not supported, only DAT_MEM_TYPE_VIRTUAL",
                static_cast<unsigned>(mem_type));
    return Status(Code::kInvalidParameter, Detail::kParamMemType);
  }
  const auto address = reinterpret_cast<std::uint64_t>(region.for_va);
  if (address == 0) return Status(Code::kInvalidParameter, Detail::kParamRegion);
  if (length == 0 || address + length < address) return Status(Code::kInvalidParameter, Detail::kParamLength);
  if ((privileges & ~(DAT_MEM_PRIV_ALL_FLAG | kPrivRemoteAtomic)) != 0)
    return Status(Code::kInvalidParameter, Detail::kParamPrivileges);
  if (va_type != DAT_VA_TYPE_VA) {
    SOFTDAT_LOG(kWarn, "dat_lmr_create: zero-based virtual addresses are not supported");
    return Status(Code::kInvalidParameter, Detail::kParamVaType);
  }
  if (pz->ia() != ia) return Status(Code::kInvalidHandle, Detail::kPz);

  std::uint32_t key = 0;
  std::uint32_t remote_key = 0;
  std::unique_ptr<transport::MemoryRegion> registration;
  if (ia->capabilities().device_memory_keys) {
    if (Status status = Register(ia, pz, region.for_va, length, privileges, registration); !status.ok())
      return status;
    key = registration->local_key();
    remote_key = registration->remote_key();
    if (Status status = ia->memory().ReserveDeviceKey(key); !status.ok()) {
      SOFTDAT_LOG(kError, "dat_lmr_create: the device's local key %#x is unusable here (%s)", key,
                  CodeName(status.code()));
      return status.code() == Code::kInsufficientResources ? status : Status(Code::kInternal);
    }
  } else {
    if (Status status = ia->memory().Reserve(key); !status.ok()) return status;
    remote_key = key;
  }
  Lmr* lmr = NewHandle<Lmr>(ia->provider, ia, pz, address, length, static_cast<DAT_MEM_PRIV_FLAGS>(privileges),
                            va_type, key, remote_key, std::move(registration));
  pz->AddUser();
  WindowView window;
  window.key = key;
  window.address = address;
  window.length = length;
  window.privileges = static_cast<DAT_MEM_PRIV_FLAGS>(privileges);
  window.pz = pz;
  window.is_lmr = true;
  ia->memory().Publish(window);
  ia->Track(lmr);
  *out = lmr;
  if (lmr_context != nullptr) *lmr_context = key;
  if (rmr_context != nullptr) *rmr_context = remote_key;
  if (registered_length != nullptr) *registered_length = length;
  if (registered_address != nullptr) *registered_address = address;
  return Status::Ok();
}

Status Lmr::Free(Lmr* lmr) {
  Ia* ia = lmr->ia_;
  // No post may name the key any more before the device forgets the memory (the region is
  // deregistered by DeleteHandle, with the LMR).
  ia->memory().Release(lmr->context_);
  lmr->pz_->RemoveUser();
  ia->Untrack(lmr);
  DeleteHandle(lmr);
  return Status::Ok();
}

void Lmr::Query(DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM& param) const {
  if (mask & DAT_LMR_FIELD_IA_HANDLE) param.ia_handle = ia_;
  if (mask & DAT_LMR_FIELD_MEM_TYPE) param.mem_type = DAT_MEM_TYPE_VIRTUAL;
  if (mask & DAT_LMR_FIELD_REGION_DESC) param.region_desc.for_va = reinterpret_cast<DAT_PVOID>(address_);
  if (mask & DAT_LMR_FIELD_LENGTH) param.length = length_;
  if (mask & DAT_LMR_FIELD_PZ_HANDLE) param.pz_handle = pz_;
  if (mask & DAT_LMR_FIELD_MEM_PRIV) param.mem_priv = privileges_;
  if (mask & DAT_LMR_FIELD_VA_TYPE) param.va_type = va_type_;
  if (mask & DAT_LMR_FIELD_LMR_CONTEXT) param.lmr_context = context_;
  if (mask & DAT_LMR_FIELD_RMR_CONTEXT) param.rmr_context = remote_context_;
  if (mask & DAT_LMR_FIELD_REGISTERED_SIZE) param.registered_size = length_;
  if (mask & DAT_LMR_FIELD_REGISTERED_ADDRESS) param.registered_address = address_;
}

Status Lmr::SyncRdma(Ia& ia, std::span<const DAT_LMR_TRIPLET> segments) {
  for (const DAT_LMR_TRIPLET& segment : segments) {
    if (segment.segment_length == 0) continue;
    const WindowView lmr = ia.memory().Find(segment.lmr_context);
    if (!lmr.is_lmr || !lmr.Contains(segment.virtual_address, segment.segment_length))
      return Status(Code::kInvalidParameter, Detail::kParamSegments);
  }
  return Status::Ok();
}

}  // namespace softdat::core
