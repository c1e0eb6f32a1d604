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

// entry_memory.cc
DAT_RETURN PzCreate(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE* pz_handle) noexcept;
DAT_RETURN PzQuery(DAT_PZ_HANDLE pz_handle, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM* param) noexcept;
DAT_RETURN PzFree(DAT_PZ_HANDLE pz_handle) noexcept;
DAT_RETURN LmrCreate(DAT_IA_HANDLE ia_handle, DAT_MEM_TYPE mem_type, DAT_REGION_DESCRIPTION region,
                     DAT_VLEN length, DAT_PZ_HANDLE pz_handle, DAT_MEM_PRIV_FLAGS privileges,
                     DAT_VA_TYPE va_type, DAT_LMR_HANDLE* lmr_handle, DAT_LMR_CONTEXT* lmr_context,
                     DAT_RMR_CONTEXT* rmr_context, DAT_VLEN* registered_length,
                     DAT_VADDR* registered_address) noexcept;
DAT_RETURN LmrQuery(DAT_LMR_HANDLE lmr_handle, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM* param) noexcept;
DAT_RETURN LmrFree(DAT_LMR_HANDLE lmr_handle) noexcept;
DAT_RETURN LmrSyncRdma(DAT_IA_HANDLE ia_handle, const DAT_LMR_TRIPLET* segments,
                       DAT_VLEN num_segments) noexcept;

}  // namespace softdat::dat
