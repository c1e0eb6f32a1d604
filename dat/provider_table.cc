// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT_PROVIDER table: every one of its 79 slots, in the header's order, so a missing slot is
// obvious. A slot is either an entry point (entry.h) or, for a feature softdat does not offer,
// the DAT_MODEL_NOT_SUPPORTED answer (unsupported.h).
#include "dat/provider_table.h"

#include <cstring>

#include "dat/entry.h"
#include "dat/unsupported.h"

static_assert(sizeof(DAT_PROVIDER) == 2 * sizeof(void*) + 79 * sizeof(void (*)()),
              "DAT_PROVIDER must have its 79 slots: build with DAT_EXTENSIONS as libdat2 is");

namespace softdat::dat {

void FillProviderTable(DAT_PROVIDER& table) {
  std::memset(&table, 0, sizeof table);
  table.ia_open_func = &IaOpen;
  table.ia_query_func = &IaQuery;
  table.ia_close_func = &IaClose;
  table.set_consumer_context_func = &SetConsumerContext;
  table.get_consumer_context_func = &GetConsumerContext;
  table.get_handle_type_func = &GetHandleType;
  table.cno_create_func = &CnoCreate;
  table.cno_modify_agent_func = &CnoModifyAgent;
  table.cno_query_func = &CnoQuery;
  table.cno_free_func = &CnoFree;
  table.cno_wait_func = &CnoWait;
  table.cr_query_func = &CrQuery;
  table.cr_accept_func = &CrAccept;
  table.cr_reject_func = &CrReject;
  table.cr_handoff_func = &CrHandoff;
  table.evd_create_func = &EvdCreate;
  table.evd_query_func = &EvdQuery;
  table.evd_modify_cno_func = &EvdModifyCno;
  table.evd_enable_func = &EvdEnable;
  table.evd_disable_func = &EvdDisable;
  table.evd_wait_func = &EvdWait;
  table.evd_resize_func = &EvdResize;
  table.evd_post_se_func = &EvdPostSe;
  table.evd_dequeue_func = &EvdDequeue;
  table.evd_free_func = &EvdFree;
  table.ep_create_func = &EpCreate;
  table.ep_query_func = &EpQuery;
  table.ep_modify_func = &EpModify;
  table.ep_connect_func = &EpConnect;
  table.ep_dup_connect_func = &EpDupConnect;
  table.ep_disconnect_func = &EpDisconnect;
  table.ep_post_send_func = &EpPostSend;
  table.ep_post_recv_func = &EpPostRecv;
  table.ep_post_rdma_read_func = &EpPostRdmaRead;
  table.ep_post_rdma_write_func = &EpPostRdmaWrite;
  table.ep_get_status_func = &EpGetStatus;
  table.ep_free_func = &EpFree;
  table.lmr_create_func = &LmrCreate;
  table.lmr_query_func = &LmrQuery;
  table.lmr_free_func = &LmrFree;
  table.rmr_create_func = &RmrCreate;
  table.rmr_query_func = &RmrQuery;
  table.rmr_bind_func = &RmrBind;
  table.rmr_free_func = &RmrFree;
  table.psp_create_func = &PspCreate;
  table.psp_query_func = &PspQuery;
  table.psp_free_func = &PspFree;
  table.rsp_create_func = &RspCreate;
  table.rsp_query_func = &RspQuery;
  table.rsp_free_func = &RspFree;
  table.pz_create_func = &PzCreate;
  table.pz_query_func = &PzQuery;
  table.pz_free_func = &PzFree;
  table.psp_create_any_func = &PspCreateAny;
  table.ep_reset_func = &EpReset;
  table.evd_set_unwaitable_func = &EvdSetUnwaitable;
  table.evd_clear_unwaitable_func = &EvdClearUnwaitable;
  table.lmr_sync_rdma_read_func = &LmrSyncRdma;
  table.lmr_sync_rdma_write_func = &LmrSyncRdma;
  table.ep_create_with_srq_func = &EpCreateWithSrq;
  table.ep_recv_query_func = &EpRecvQuery;
  table.ep_set_watermark_func = &EpSetWatermark;
  table.srq_create_func = &SrqCreate;
  table.srq_free_func = &SrqFree;
  table.srq_post_recv_func = &SrqPostRecv;
  table.srq_query_func = &SrqQuery;
  table.srq_resize_func = &SrqResize;
  table.srq_set_lw_func = &SrqSetLw;
  SOFTDAT_SLOT_UNSUPPORTED(table, csp_create_func, "dat_csp_create: common service points are not supported");
  SOFTDAT_SLOT_UNSUPPORTED(table, csp_query_func, "dat_csp_query: common service points are not supported");
  SOFTDAT_SLOT_UNSUPPORTED(table, csp_free_func, "dat_csp_free: common service points are not supported");
  SOFTDAT_SLOT_UNSUPPORTED(table, ep_common_connect_func,
                           "dat_ep_common_connect: common service points are not supported");
  table.rmr_create_for_ep_func = &RmrCreate;
  table.ep_post_send_with_invalidate_func = &EpPostSendWithInvalidate;
  table.ep_post_rdma_read_to_rmr_func = &EpPostRdmaReadToRmr;
  table.cno_fd_create_func = &CnoFdCreate;
  table.cno_trigger_func = &CnoTrigger;
  table.ia_ha_related_func = &IaHaRelated;
  table.handle_extendedop_func = &ExtendedOp;
}

}  // namespace softdat::dat
