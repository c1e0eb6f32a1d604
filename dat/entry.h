// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Declarations of the built DAT entry points that provider_table.cc puts into the table. Each is a
// thin noexcept wrapper: check handles, call one core method, map the status.
#pragma once

#include <dat2/udat.h>

#include <cstdarg>

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

// entry_evd.cc
DAT_RETURN EvdCreate(DAT_IA_HANDLE ia_handle, DAT_COUNT min_qlen, DAT_CNO_HANDLE cno_handle,
                     DAT_EVD_FLAGS flags, DAT_EVD_HANDLE* evd_handle) noexcept;
DAT_RETURN EvdQuery(DAT_EVD_HANDLE evd_handle, DAT_EVD_PARAM_MASK mask, DAT_EVD_PARAM* param) noexcept;
DAT_RETURN EvdModifyCno(DAT_EVD_HANDLE evd_handle, DAT_CNO_HANDLE cno_handle) noexcept;
DAT_RETURN EvdEnable(DAT_EVD_HANDLE evd_handle) noexcept;
DAT_RETURN EvdDisable(DAT_EVD_HANDLE evd_handle) noexcept;
DAT_RETURN EvdWait(DAT_EVD_HANDLE evd_handle, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                   DAT_EVENT* event, DAT_COUNT* nmore) noexcept;
DAT_RETURN EvdResize(DAT_EVD_HANDLE evd_handle, DAT_COUNT qlen) noexcept;
DAT_RETURN EvdPostSe(DAT_EVD_HANDLE evd_handle, const DAT_EVENT* event) noexcept;
DAT_RETURN EvdDequeue(DAT_EVD_HANDLE evd_handle, DAT_EVENT* event) noexcept;
DAT_RETURN EvdFree(DAT_EVD_HANDLE evd_handle) noexcept;
DAT_RETURN EvdSetUnwaitable(DAT_EVD_HANDLE evd_handle) noexcept;
DAT_RETURN EvdClearUnwaitable(DAT_EVD_HANDLE evd_handle) noexcept;
DAT_RETURN CnoCreate(DAT_IA_HANDLE ia_handle, DAT_OS_WAIT_PROXY_AGENT agent,
                     DAT_CNO_HANDLE* cno_handle) noexcept;
DAT_RETURN CnoModifyAgent(DAT_CNO_HANDLE cno_handle, DAT_OS_WAIT_PROXY_AGENT agent) noexcept;
DAT_RETURN CnoQuery(DAT_CNO_HANDLE cno_handle, DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM* param) noexcept;
DAT_RETURN CnoFree(DAT_CNO_HANDLE cno_handle) noexcept;
DAT_RETURN CnoWait(DAT_CNO_HANDLE cno_handle, DAT_TIMEOUT timeout, DAT_EVD_HANDLE* evd_handle) noexcept;
DAT_RETURN CnoFdCreate(DAT_IA_HANDLE ia_handle, DAT_FD* fd, DAT_CNO_HANDLE* cno_handle) noexcept;
DAT_RETURN CnoTrigger(DAT_CNO_HANDLE cno_handle, DAT_EVD_HANDLE* evd_handle) noexcept;

}  // namespace softdat::dat

namespace softdat::dat {

// entry_srq.cc
DAT_RETURN SrqCreate(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_SRQ_ATTR* srq_attr,
                     DAT_SRQ_HANDLE* srq_handle) noexcept;
DAT_RETURN SrqFree(DAT_SRQ_HANDLE srq_handle) noexcept;
DAT_RETURN SrqPostRecv(DAT_SRQ_HANDLE srq_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                       DAT_DTO_COOKIE user_cookie) noexcept;
DAT_RETURN SrqQuery(DAT_SRQ_HANDLE srq_handle, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM* param) noexcept;
DAT_RETURN SrqResize(DAT_SRQ_HANDLE srq_handle, DAT_COUNT srq_max_recv_dto) noexcept;
DAT_RETURN SrqSetLw(DAT_SRQ_HANDLE srq_handle, DAT_COUNT low_watermark) noexcept;

// entry_ep.cc
DAT_RETURN EpCreate(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
                    DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd, const DAT_EP_ATTR* attr,
                    DAT_EP_HANDLE* ep_handle) noexcept;
DAT_RETURN EpCreateWithSrq(DAT_IA_HANDLE ia_handle, DAT_PZ_HANDLE pz_handle, DAT_EVD_HANDLE recv_evd,
                           DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd, DAT_SRQ_HANDLE srq_handle,
                           const DAT_EP_ATTR* attr, DAT_EP_HANDLE* ep_handle) noexcept;
DAT_RETURN EpQuery(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM* param) noexcept;
DAT_RETURN EpModify(DAT_EP_HANDLE ep_handle, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM* param) noexcept;
DAT_RETURN EpGetStatus(DAT_EP_HANDLE ep_handle, DAT_EP_STATE* state, DAT_BOOLEAN* recv_idle,
                       DAT_BOOLEAN* request_idle) noexcept;
DAT_RETURN EpFree(DAT_EP_HANDLE ep_handle) noexcept;
DAT_RETURN EpReset(DAT_EP_HANDLE ep_handle) noexcept;
DAT_RETURN EpRecvQuery(DAT_EP_HANDLE ep_handle, DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) noexcept;
DAT_RETURN EpSetWatermark(DAT_EP_HANDLE ep_handle, DAT_COUNT soft_high_watermark,
                          DAT_COUNT hard_high_watermark) noexcept;

// entry_dto.cc
DAT_RETURN EpPostRecv(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                      DAT_DTO_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags) noexcept;
DAT_RETURN EpPostSend(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                      DAT_DTO_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags) noexcept;
DAT_RETURN EpPostSendWithInvalidate(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                                    DAT_DTO_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags,
                                    DAT_BOOLEAN invalidate_flag, DAT_RMR_CONTEXT rmr_context) noexcept;
DAT_RETURN EpPostRdmaRead(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                          DAT_DTO_COOKIE user_cookie, const DAT_RMR_TRIPLET* remote_iov,
                          DAT_COMPLETION_FLAGS flags) noexcept;
DAT_RETURN EpPostRdmaWrite(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                           DAT_DTO_COOKIE user_cookie, const DAT_RMR_TRIPLET* remote_iov,
                           DAT_COMPLETION_FLAGS flags) noexcept;
DAT_RETURN EpPostRdmaReadToRmr(DAT_EP_HANDLE ep_handle, const DAT_RMR_TRIPLET* local_iov,
                               DAT_DTO_COOKIE user_cookie, const DAT_RMR_TRIPLET* remote_iov,
                               DAT_COMPLETION_FLAGS flags) noexcept;

// entry_connection.cc
DAT_RETURN EpConnect(DAT_EP_HANDLE ep_handle, DAT_IA_ADDRESS_PTR remote_ia_address, DAT_CONN_QUAL remote_conn_qual,
                     DAT_TIMEOUT timeout, DAT_COUNT private_data_size, const DAT_PVOID private_data,
                     DAT_QOS qos, DAT_CONNECT_FLAGS flags) noexcept;
DAT_RETURN EpDupConnect(DAT_EP_HANDLE ep_handle, DAT_EP_HANDLE ep_dup_handle, DAT_TIMEOUT timeout,
                        DAT_COUNT private_data_size, const DAT_PVOID private_data, DAT_QOS qos) noexcept;
DAT_RETURN EpDisconnect(DAT_EP_HANDLE ep_handle, DAT_CLOSE_FLAGS flags) noexcept;
DAT_RETURN PspCreate(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL conn_qual, DAT_EVD_HANDLE evd_handle,
                     DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* psp_handle) noexcept;
DAT_RETURN PspCreateAny(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL* conn_qual, DAT_EVD_HANDLE evd_handle,
                        DAT_PSP_FLAGS flags, DAT_PSP_HANDLE* psp_handle) noexcept;
DAT_RETURN PspQuery(DAT_PSP_HANDLE psp_handle, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM* param) noexcept;
DAT_RETURN PspFree(DAT_PSP_HANDLE psp_handle) noexcept;
DAT_RETURN RspCreate(DAT_IA_HANDLE ia_handle, DAT_CONN_QUAL conn_qual, DAT_EP_HANDLE ep_handle,
                     DAT_EVD_HANDLE evd_handle, DAT_RSP_HANDLE* rsp_handle) noexcept;
DAT_RETURN RspQuery(DAT_RSP_HANDLE rsp_handle, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM* param) noexcept;
DAT_RETURN RspFree(DAT_RSP_HANDLE rsp_handle) noexcept;
DAT_RETURN CrQuery(DAT_CR_HANDLE cr_handle, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM* param) noexcept;
DAT_RETURN CrAccept(DAT_CR_HANDLE cr_handle, DAT_EP_HANDLE ep_handle, DAT_COUNT private_data_size,
                    const DAT_PVOID private_data) noexcept;
DAT_RETURN CrReject(DAT_CR_HANDLE cr_handle, DAT_COUNT private_data_size, const DAT_PVOID private_data) noexcept;
DAT_RETURN CrHandoff(DAT_CR_HANDLE cr_handle, DAT_CONN_QUAL handoff) noexcept;

// entry_misc.cc
DAT_RETURN IaHaRelated(DAT_IA_HANDLE ia_handle, const DAT_NAME_PTR provider, DAT_BOOLEAN* answer) noexcept;

// entry_extension.cc: dat_extension_op, the DAT IB extension calls (dat_ib_extensions.h).
DAT_RETURN ExtendedOp(DAT_HANDLE handle, DAT_EXTENDED_OP op, va_list args) noexcept;

// entry_rmr.cc
DAT_RETURN RmrCreate(DAT_PZ_HANDLE pz_handle, DAT_RMR_HANDLE* rmr_handle) noexcept;
DAT_RETURN RmrQuery(DAT_RMR_HANDLE rmr_handle, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM* param) noexcept;
DAT_RETURN RmrBind(DAT_RMR_HANDLE rmr_handle, DAT_LMR_HANDLE lmr_handle, const DAT_LMR_TRIPLET* lmr_triplet,
                   DAT_MEM_PRIV_FLAGS mem_priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE ep_handle,
                   DAT_RMR_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT* context) noexcept;
DAT_RETURN RmrFree(DAT_RMR_HANDLE rmr_handle) noexcept;

}  // namespace softdat::dat
