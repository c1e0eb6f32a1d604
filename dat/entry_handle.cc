// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points that apply to any handle: consumer context and handle type.
#include "core/handle.h"
#include "dat/entry.h"
#include "dat/status_map.h"

namespace softdat::dat {
namespace {

bool ToDatType(core::HandleKind kind, DAT_HANDLE_TYPE& type) {
  switch (kind) {
    case core::HandleKind::kIa: type = DAT_HANDLE_TYPE_IA; return true;
    case core::HandleKind::kEp: type = DAT_HANDLE_TYPE_EP; return true;
    case core::HandleKind::kLmr: type = DAT_HANDLE_TYPE_LMR; return true;
    case core::HandleKind::kRmr: type = DAT_HANDLE_TYPE_RMR; return true;
    case core::HandleKind::kPz: type = DAT_HANDLE_TYPE_PZ; return true;
    case core::HandleKind::kPsp: type = DAT_HANDLE_TYPE_PSP; return true;
    case core::HandleKind::kRsp: type = DAT_HANDLE_TYPE_RSP; return true;
    case core::HandleKind::kCr: type = DAT_HANDLE_TYPE_CR; return true;
    case core::HandleKind::kCno: type = DAT_HANDLE_TYPE_CNO; return true;
    case core::HandleKind::kEvd: type = DAT_HANDLE_TYPE_EVD; return true;
    case core::HandleKind::kSrq: type = DAT_HANDLE_TYPE_SRQ; return true;
    case core::HandleKind::kAddressHandle:  // the extension's own objects, not DAT handles
    case core::HandleKind::kDatagramCm:
    case core::HandleKind::kFreed: return false;
  }
  return false;
}

core::HandleHeader* LiveHeader(DAT_HANDLE handle) {
  DAT_HANDLE_TYPE ignored;
  if (!ToDatType(core::KindOf(handle), ignored)) return nullptr;
  return static_cast<core::HandleHeader*>(handle);
}

}  // namespace

DAT_RETURN SetConsumerContext(DAT_HANDLE handle, DAT_CONTEXT context) noexcept {
  return Guarded("dat_set_consumer_context", [&]() -> Status {
    core::HandleHeader* header = LiveHeader(handle);
    if (header == nullptr) return Status(Code::kInvalidHandle, Detail::kParamHandle);
    header->consumer_context.store(context, std::memory_order_relaxed);
    return Status::Ok();
  });
}

DAT_RETURN GetConsumerContext(DAT_HANDLE handle, DAT_CONTEXT* context) noexcept {
  return Guarded("dat_get_consumer_context", [&]() -> Status {
    core::HandleHeader* header = LiveHeader(handle);
    if (header == nullptr) return Status(Code::kInvalidHandle, Detail::kParamHandle);
    if (context == nullptr) return Status(Code::kInvalidParameter, Detail::kParamContext);
    *context = header->consumer_context.load(std::memory_order_relaxed);
    return Status::Ok();
  });
}

DAT_RETURN GetHandleType(DAT_HANDLE handle, DAT_HANDLE_TYPE* type) noexcept {
  return Guarded("dat_get_handle_type", [&]() -> Status {
    DAT_HANDLE_TYPE value;
    if (!ToDatType(core::KindOf(handle), value)) return Status(Code::kInvalidHandle, Detail::kParamHandle);
    if (type == nullptr) return Status(Code::kInvalidParameter, Detail::kParamHandleType);
    *type = value;
    return Status::Ok();
  });
}

}  // namespace softdat::dat
