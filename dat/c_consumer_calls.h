// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* Calls into a DAT_PROVIDER table made from C, as a consumer makes them: enum-typed arguments
 * take whatever bits the caller has (C lets an enum hold any int; C++ does not, so the tests
 * that pass bits no DAT value has go through these). */
#ifndef SOFTDAT_DAT_C_CONSUMER_CALLS_H_
#define SOFTDAT_DAT_C_CONSUMER_CALLS_H_

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#ifdef __cplusplus
extern "C" {
#endif

DAT_RETURN c_ia_close(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, unsigned flags);
DAT_RETURN c_evd_create(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, unsigned flags, DAT_EVD_HANDLE* evd);
DAT_RETURN c_lmr_create(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, unsigned mem_type, void* address, DAT_VLEN length,
                        DAT_PZ_HANDLE pz, unsigned va_type, DAT_LMR_HANDLE* lmr);
DAT_RETURN c_pz_query(const DAT_PROVIDER* p, DAT_PZ_HANDLE pz, unsigned mask, DAT_PZ_PARAM* param);
DAT_RETURN c_lmr_query(const DAT_PROVIDER* p, DAT_LMR_HANDLE lmr, unsigned mask, DAT_LMR_PARAM* param);
DAT_RETURN c_evd_query(const DAT_PROVIDER* p, DAT_EVD_HANDLE evd, unsigned mask, DAT_EVD_PARAM* param);
DAT_RETURN c_ep_create(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE dto,
                       DAT_EVD_HANDLE connect, unsigned service_type, unsigned recv_flags, DAT_EP_HANDLE* ep);
DAT_RETURN c_ep_post_send(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, DAT_LMR_TRIPLET* iov, unsigned flags);
DAT_RETURN c_ep_post_send_with_invalidate(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, DAT_LMR_TRIPLET* iov,
                                          unsigned invalidate);
DAT_RETURN c_ep_connect(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR address, DAT_CONN_QUAL port,
                        unsigned flags);
DAT_RETURN c_ib_post_rdma_write_immed(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, DAT_LMR_TRIPLET* iov,
                                      const DAT_RMR_TRIPLET* remote, unsigned flags);
DAT_RETURN c_ep_disconnect(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, unsigned flags);
DAT_RETURN c_psp_create_any(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, DAT_EVD_HANDLE evd, unsigned flags,
                            DAT_CONN_QUAL* port, DAT_PSP_HANDLE* psp);
DAT_RETURN c_rmr_bind(const DAT_PROVIDER* p, DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr, const DAT_LMR_TRIPLET* triplet,
                      unsigned va_type, DAT_EP_HANDLE ep, unsigned flags, DAT_RMR_CONTEXT* context);

#ifdef __cplusplus
}
#endif

#endif
