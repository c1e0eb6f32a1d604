// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_extension_op: the DAT IB extension calls of dat_ib_extensions.h (2.0.9), through the
// provider table's handle_extendedop_func slot, and dapl_extensions, which libdat2 calls for
// dat_ib_open_query (the one extension call made before any IA exists). Each operation takes its
// arguments from the va_list in the order the header's macro passes them, checks the handle,
// calls one core method and maps the status.
#include <cstdarg>
#include <cstdint>

#include "core/address_handle.h"
#include "core/dat_ib.h"
#include "core/ep.h"
#include "core/evd.h"
#include "core/ia.h"
#include "dat/entry.h"
#include "dat/provider_entry.h"
#include "dat/raw_bits.h"
#include "dat/status_map.h"
#include "transport/factory.h"

namespace softdat::dat {
namespace {

// The DAT call an operation stands for: what log lines and argument positions name.
const char* CallName(int op) {
  switch (op) {
    case DAT_IB_FETCH_AND_ADD_OP: return "dat_ib_post_fetch_and_add";
    case DAT_IB_CMP_AND_SWAP_OP: return "dat_ib_post_cmp_and_swap";
    case DAT_IB_RDMA_WRITE_IMMED_OP: return "dat_ib_post_rdma_write_immed";
    case DAT_IB_UD_SEND_OP: return "dat_ib_post_send_ud";
    case DAT_IB_QUERY_COUNTERS_OP: return "dat_ib_query_counters";
    case DAT_IB_PRINT_COUNTERS_OP: return "dat_ib_print_counters";
    case DAT_IB_START_COUNTERS_OP: return "dat_ib_start_counter";
    case DAT_IB_STOP_COUNTERS_OP: return "dat_ib_stop_counter";
    case DAT_IB_UD_CM_FREE_OP: return "dat_ib_ud_cm_free";
    case DAT_IB_UD_AH_FREE_OP: return "dat_ib_ud_ah_free";
    case DAT_IB_OPEN_QUERY_OP: return "dat_ib_open_query";
    case DAT_IB_CLOSE_QUERY_OP: return "dat_ib_close_query";
    default: return "dat_extension_op";
  }
}

// dat_ib_query_counters and dat_ib_print_counters on an IA, EP or EVD handle.
Status Counters(DAT_HANDLE handle, int op, va_list args) {
  const int which = va_arg(args, int);
  DAT_UINT64* out = op == DAT_IB_QUERY_COUNTERS_OP ? va_arg(args, DAT_UINT64*) : nullptr;
  const bool reset = va_arg(args, int) != 0;
  const bool print = op == DAT_IB_PRINT_COUNTERS_OP;
  if (!print && out == nullptr) return Status(Code::kInvalidParameter, Detail::kParamCounterOut);
  if (core::Ia* ia = core::HandleAs<core::Ia>(handle))
    return print ? ia->PrintCounters(which, reset) : ia->QueryCounters(which, out, reset);
  if (core::Ep* ep = core::HandleAs<core::Ep>(handle))
    return print ? ep->PrintCounters(which, reset) : ep->QueryCounters(which, out, reset);
  if (core::Evd* evd = core::HandleAs<core::Evd>(handle))
    return print ? evd->PrintCounters(which, reset) : evd->QueryCounters(which, out, reset);
  SOFTDAT_LOG(kWarn, "%s: counters are kept for IA, EP and EVD handles only", CallName(op));
  return Status(Code::kInvalidHandle, Detail::kParamHandle);
}

// dat_ib_start_counter / dat_ib_stop_counter: softdat's counters always run (they cost a load and
// a store where they count), so starting and stopping a sample type changes nothing.
Status StartStop(DAT_HANDLE handle, int op, va_list args) {
  const int type = va_arg(args, int);
  if (core::HandleAs<core::Ia>(handle) == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
  if (type != DCNT_IA_CM && type != DCNT_IA_LNK && type != DCNT_IA_DIAG)
    return Status(Code::kInvalidParameter, Detail::kParamCounterType);
  SOFTDAT_LOG(kDebug, "%s: softdat's counters are always on", CallName(op));
  return Status::Ok();
}

// dat_ib_open_query: opens `name` for its attributes; dat_ib_close_query closes what it gave.
Status OpenQuery(const char* name, va_list args) {
  DAT_HANDLE* ia_handle = va_arg(args, DAT_HANDLE*);
  const DAT_IA_ATTR_MASK ia_mask = va_arg(args, DAT_IA_ATTR_MASK);
  DAT_IA_ATTR* ia_attr = va_arg(args, DAT_IA_ATTR*);
  const DAT_PROVIDER_ATTR_MASK provider_mask = va_arg(args, DAT_PROVIDER_ATTR_MASK);
  DAT_PROVIDER_ATTR* provider_attr = va_arg(args, DAT_PROVIDER_ATTR*);
  if (name == nullptr) return Status(Code::kInvalidParameter, Detail::kParamIaName);
  if (ia_handle == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleOut);
  if (ia_mask != 0 && ia_attr == nullptr) return Status(Code::kInvalidParameter, Detail::kParamAttributes);
  if (provider_mask != 0 && provider_attr == nullptr)
    return Status(Code::kInvalidParameter, Detail::kParamProviderAttributes);
  ProviderEntry* entry = FindProvider(name);
  if (entry == nullptr) {
    SOFTDAT_LOG(kError, "dat_ib_open_query(%s): no such IA registered with softdat", name);
    return Status(Code::kProviderNotFound);
  }
  core::Ia* ia = nullptr;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  if (Status status = core::Ia::Open(&entry->table, name, entry->params, transport::CreateTransport, 1, async_evd, &ia);
      !status.ok())
    return status;
  if (Status status = ia->Query(nullptr, ia_mask, ia_attr, provider_mask, provider_attr); !status.ok()) {
    (void)core::Ia::Close(ia, DAT_CLOSE_ABRUPT_FLAG);
    return status;
  }
  *ia_handle = ia;
  return Status::Ok();
}

Status Dispatch(DAT_HANDLE handle, int op, va_list args) {
  switch (op) {
    case DAT_IB_QUERY_COUNTERS_OP:
    case DAT_IB_PRINT_COUNTERS_OP: return Counters(handle, op, args);
    case DAT_IB_START_COUNTERS_OP:
    case DAT_IB_STOP_COUNTERS_OP: return StartStop(handle, op, args);
    case DAT_IB_CLOSE_QUERY_OP: {
      core::Ia* ia = core::HandleAs<core::Ia>(handle);
      if (ia == nullptr) return Status(Code::kInvalidHandle, Detail::kIa);
      return core::Ia::Close(ia, DAT_CLOSE_ABRUPT_FLAG);
    }
    default: break;
  }
  // The rest act on an EP.
  core::Ep* ep = core::HandleAs<core::Ep>(handle);
  switch (op) {
    case DAT_IB_RDMA_WRITE_IMMED_OP: {
      const DAT_COUNT segments = va_arg(args, DAT_COUNT);
      DAT_LMR_TRIPLET* local_iov = va_arg(args, DAT_LMR_TRIPLET*);
      const DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
      const DAT_RMR_TRIPLET* remote_iov = va_arg(args, const DAT_RMR_TRIPLET*);
      const DAT_UINT32 immediate = va_arg(args, DAT_UINT32);
      const auto flag_bits = static_cast<std::uint32_t>(va_arg(args, int));
      if (!FitsBits<DAT_COMPLETION_FLAGS>(flag_bits))
        return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(flag_bits);
      if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
      return ep->PostWriteImmediate(segments, local_iov, cookie, remote_iov, immediate, flags);
    }
    case DAT_IB_FETCH_AND_ADD_OP:
    case DAT_IB_CMP_AND_SWAP_OP: {
      const DAT_UINT64 compare_add = va_arg(args, DAT_UINT64);
      const DAT_UINT64 swap = op == DAT_IB_CMP_AND_SWAP_OP ? va_arg(args, DAT_UINT64) : 0;
      DAT_LMR_TRIPLET* local_iov = va_arg(args, DAT_LMR_TRIPLET*);
      const DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
      const DAT_RMR_TRIPLET* remote_iov = va_arg(args, const DAT_RMR_TRIPLET*);
      const auto flag_bits = static_cast<std::uint32_t>(va_arg(args, int));
      if (!FitsBits<DAT_COMPLETION_FLAGS>(flag_bits))
        return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(flag_bits);
      if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
      return ep->PostAtomic(op == DAT_IB_FETCH_AND_ADD_OP ? transport::WorkKind::kFetchAdd
                                                          : transport::WorkKind::kCompareSwap,
                            compare_add, swap, local_iov, cookie, remote_iov, flags);
    }
    case DAT_IB_UD_SEND_OP: {
      const DAT_COUNT segments = va_arg(args, DAT_COUNT);
      DAT_LMR_TRIPLET* local_iov = va_arg(args, DAT_LMR_TRIPLET*);
      const DAT_IB_ADDR_HANDLE* ah = va_arg(args, const DAT_IB_ADDR_HANDLE*);
      const DAT_DTO_COOKIE cookie = va_arg(args, DAT_DTO_COOKIE);
      const auto flag_bits = static_cast<std::uint32_t>(va_arg(args, int));
      if (!FitsBits<DAT_COMPLETION_FLAGS>(flag_bits))
        return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(flag_bits);
      if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
      return ep->PostSendDatagram(segments, local_iov, ah, cookie, flags);
    }
    case DAT_IB_UD_AH_FREE_OP: {
      const DAT_IB_ADDR_HANDLE* ah = va_arg(args, const DAT_IB_ADDR_HANDLE*);
      if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
      return ep->FreeAddressHandle(ah);
    }
    case DAT_IB_UD_CM_FREE_OP: {
      // DAT_CONTEXT, a union of pointer and 64-bit value, passed as one word.
      const DAT_CONTEXT cm = va_arg(args, DAT_CONTEXT);
      if (ep == nullptr) return Status(Code::kInvalidHandle, Detail::kEp);
      return ep->FreeDatagramCm(cm.as_ptr);
    }
    default:
      break;
  }
  if (op >= DAT_IB_COLLECTIVE_CREATE_MEMBER_OP && op <= DAT_IB_COLLECTIVE_BARRIER_OP) {
    SOFTDAT_LOG(kWarn, "dat_extension_op: the IB collective operations (op %d) are not supported: softdat "
                "offers none of DAT_IB_COLL_* (see its provider attributes)", op);
    return Status(Code::kModelNotSupported);
  }
  SOFTDAT_LOG(kWarn, "dat_extension_op: operation %d is not one of the IB extension's (dat_ib_extensions.h 2.0.9)",
              op);
  return Status(Code::kInvalidParameter, Detail::kParamOperation);
}

}  // namespace

DAT_RETURN ExtendedOp(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args) noexcept {
  return Guarded(CallName(op), [&]() -> Status { return Dispatch(handle, op, args); });
}

}  // namespace softdat::dat

extern "C" {

// libdat2 looks this symbol up in a provider library for the extension calls it makes by IA name
// (dat_ib_open_query: DAT_OPEN_EXTENSION_BASE operations), with the name as the handle.
__attribute__((visibility("default"))) DAT_RETURN dapl_extensions(DAT_HANDLE name, DAT_EXTENDED_OP op,
                                                                  va_list args) {
  using namespace softdat;
  return dat::Guarded(dat::CallName(op), [&]() -> Status {
    if (op != DAT_IB_OPEN_QUERY_OP) {
      SOFTDAT_LOG(kWarn, "dapl_extensions: operation %d made by IA name is not one softdat knows", op);
      return Status(Code::kInvalidParameter, Detail::kParamOperation);
    }
    return dat::OpenQuery(static_cast<const char*>(name), args);
  });
}

}  // extern "C"
