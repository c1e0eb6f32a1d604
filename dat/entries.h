// Declarations of the built DAT entry points that provider_table.cc puts into the table. Each is a
// thin noexcept wrapper: check handles, call one core method, map the status.
#pragma once

#include <dat2/udat.h>

namespace softdat::dat {

// entry_ia.cc
DAT_RETURN IaOpen(const DAT_NAME_PTR name, DAT_COUNT async_evd_qlen, DAT_EVD_HANDLE* async_evd,
                  DAT_IA_HANDLE* ia_handle) noexcept;
DAT_RETURN IaClose(DAT_IA_HANDLE ia_handle, DAT_CLOSE_FLAGS flags) noexcept;
DAT_RETURN IaQuery(DAT_IA_HANDLE ia_handle, DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask,
                   DAT_IA_ATTR* ia_attr, DAT_PROVIDER_ATTR_MASK provider_mask,
                   DAT_PROVIDER_ATTR* provider_attr) noexcept;

// entry_handle.cc
DAT_RETURN SetConsumerContext(DAT_HANDLE handle, DAT_CONTEXT context) noexcept;
DAT_RETURN GetConsumerContext(DAT_HANDLE handle, DAT_CONTEXT* context) noexcept;
DAT_RETURN GetHandleType(DAT_HANDLE handle, DAT_HANDLE_TYPE* type) noexcept;

}  // namespace softdat::dat
