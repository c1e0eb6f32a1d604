// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* See c_consumer_calls.h. */
#include "dat/c_consumer_calls.h"

#include <netinet/in.h> /* dat_ib_extensions.h uses struct sockaddr_in6 without it */
#include <stdarg.h>

#include <dat2/dat_ib_extensions.h>

DAT_RETURN c_ia_close(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, unsigned flags) {
  return p->ia_close_func(ia, (DAT_CLOSE_FLAGS)flags);
}

DAT_RETURN c_evd_create(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, unsigned flags, DAT_EVD_HANDLE* evd) {
  return p->evd_create_func(ia, 16, DAT_HANDLE_NULL, (DAT_EVD_FLAGS)flags, evd);
}

DAT_RETURN c_lmr_create(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, unsigned mem_type, void* address, DAT_VLEN length,
                        DAT_PZ_HANDLE pz, unsigned va_type, DAT_LMR_HANDLE* lmr) {
  DAT_REGION_DESCRIPTION region;
  DAT_LMR_CONTEXT lmr_context;
  DAT_RMR_CONTEXT rmr_context;
  region.for_va = address;
  return p->lmr_create_func(ia, (DAT_MEM_TYPE)mem_type, region, length, pz, DAT_MEM_PRIV_ALL_FLAG,
                            (DAT_VA_TYPE)va_type, lmr, &lmr_context, &rmr_context, 0, 0);
}

DAT_RETURN c_pz_query(const DAT_PROVIDER* p, DAT_PZ_HANDLE pz, unsigned mask, DAT_PZ_PARAM* param) {
  return p->pz_query_func(pz, (DAT_PZ_PARAM_MASK)mask, param);
}

DAT_RETURN c_lmr_query(const DAT_PROVIDER* p, DAT_LMR_HANDLE lmr, unsigned mask, DAT_LMR_PARAM* param) {
  return p->lmr_query_func(lmr, (DAT_LMR_PARAM_MASK)mask, param);
}

DAT_RETURN c_evd_query(const DAT_PROVIDER* p, DAT_EVD_HANDLE evd, unsigned mask, DAT_EVD_PARAM* param) {
  return p->evd_query_func(evd, (DAT_EVD_PARAM_MASK)mask, param);
}

DAT_RETURN c_ep_create(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE dto,
                       DAT_EVD_HANDLE connect, unsigned service_type, unsigned recv_flags, DAT_EP_HANDLE* ep) {
  DAT_EP_ATTR attr = {0};
  attr.service_type = (DAT_SERVICE_TYPE)service_type;
  attr.recv_completion_flags = (DAT_COMPLETION_FLAGS)recv_flags;
  attr.max_recv_dtos = 4;
  attr.max_request_dtos = 4;
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  return p->ep_create_func(ia, pz, dto, dto, connect, &attr, ep);
}

DAT_RETURN c_ep_post_send(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, DAT_LMR_TRIPLET* iov, unsigned flags) {
  DAT_DTO_COOKIE cookie;
  cookie.as_64 = 1;
  return p->ep_post_send_func(ep, 1, iov, cookie, (DAT_COMPLETION_FLAGS)flags);
}

DAT_RETURN c_ep_post_send_with_invalidate(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, DAT_LMR_TRIPLET* iov,
                                          unsigned invalidate) {
  DAT_DTO_COOKIE cookie;
  cookie.as_64 = 1;
  return p->ep_post_send_with_invalidate_func(ep, 1, iov, cookie, DAT_COMPLETION_DEFAULT_FLAG,
                                              (DAT_BOOLEAN)invalidate, 0);
}

DAT_RETURN c_ep_connect(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR address, DAT_CONN_QUAL port,
                        unsigned flags) {
  return p->ep_connect_func(ep, address, port, DAT_TIMEOUT_INFINITE, 0, 0, DAT_QOS_BEST_EFFORT,
                            (DAT_CONNECT_FLAGS)flags);
}

DAT_RETURN c_ep_disconnect(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, unsigned flags) {
  return p->ep_disconnect_func(ep, (DAT_CLOSE_FLAGS)flags);
}

DAT_RETURN c_psp_create_any(const DAT_PROVIDER* p, DAT_IA_HANDLE ia, DAT_EVD_HANDLE evd, unsigned flags,
                            DAT_CONN_QUAL* port, DAT_PSP_HANDLE* psp) {
  return p->psp_create_any_func(ia, port, evd, (DAT_PSP_FLAGS)flags, psp);
}

DAT_RETURN c_rmr_bind(const DAT_PROVIDER* p, DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr, const DAT_LMR_TRIPLET* triplet,
                      unsigned va_type, DAT_EP_HANDLE ep, unsigned flags, DAT_RMR_CONTEXT* context) {
  DAT_RMR_COOKIE cookie;
  cookie.as_64 = 1;
  return p->rmr_bind_func(rmr, lmr, triplet, DAT_MEM_PRIV_REMOTE_READ_FLAG, (DAT_VA_TYPE)va_type, ep, cookie,
                          (DAT_COMPLETION_FLAGS)flags, context);
}

/* dat_ib_post_rdma_write_immed as the macro of dat_ib_extensions.h calls it: through the
 * extension slot with a va_list, the flags an int-sized argument. */
static DAT_RETURN c_extension_op(const DAT_PROVIDER* p, DAT_HANDLE handle, int op, ...) {
  va_list args;
  va_start(args, op);
  const DAT_RETURN status = p->handle_extendedop_func(handle, op, args);
  va_end(args);
  return status;
}

DAT_RETURN c_ib_post_rdma_write_immed(const DAT_PROVIDER* p, DAT_EP_HANDLE ep, DAT_LMR_TRIPLET* iov,
                                      const DAT_RMR_TRIPLET* remote, unsigned flags) {
  DAT_DTO_COOKIE cookie = {0};
  return c_extension_op(p, ep, DAT_IB_RDMA_WRITE_IMMED_OP, (DAT_COUNT)1, iov, cookie, remote, (DAT_UINT32)7,
                        (DAT_COMPLETION_FLAGS)flags);
}
