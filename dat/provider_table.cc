// The DAT_PROVIDER table: every one of its 79 slots, in the header's order, so a missing slot is
// obvious. A slot is either a built entry point (entries.h) or the NOT_IMPLEMENTED default.
#include <cstring>

#include "dat/entries.h"
#include "dat/not_built.h"
#include "dat/provider_entry.h"

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
  SOFTDAT_SLOT_NOT_BUILT(table, cno_create_func, "dat_cno_create");
  SOFTDAT_SLOT_NOT_BUILT(table, cno_modify_agent_func, "dat_cno_modify_agent");
  SOFTDAT_SLOT_NOT_BUILT(table, cno_query_func, "dat_cno_query");
  SOFTDAT_SLOT_NOT_BUILT(table, cno_free_func, "dat_cno_free");
  SOFTDAT_SLOT_NOT_BUILT(table, cno_wait_func, "dat_cno_wait");
  SOFTDAT_SLOT_NOT_BUILT(table, cr_query_func, "dat_cr_query");
  SOFTDAT_SLOT_NOT_BUILT(table, cr_accept_func, "dat_cr_accept");
  SOFTDAT_SLOT_NOT_BUILT(table, cr_reject_func, "dat_cr_reject");
  SOFTDAT_SLOT_NOT_BUILT(table, cr_handoff_func, "dat_cr_handoff");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_create_func, "dat_evd_create");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_query_func, "dat_evd_query");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_modify_cno_func, "dat_evd_modify_cno");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_enable_func, "dat_evd_enable");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_disable_func, "dat_evd_disable");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_wait_func, "dat_evd_wait");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_resize_func, "dat_evd_resize");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_post_se_func, "dat_evd_post_se");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_dequeue_func, "dat_evd_dequeue");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_free_func, "dat_evd_free");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_create_func, "dat_ep_create");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_query_func, "dat_ep_query");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_modify_func, "dat_ep_modify");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_connect_func, "dat_ep_connect");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_dup_connect_func, "dat_ep_dup_connect");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_disconnect_func, "dat_ep_disconnect");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_post_send_func, "dat_ep_post_send");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_post_recv_func, "dat_ep_post_recv");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_post_rdma_read_func, "dat_ep_post_rdma_read");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_post_rdma_write_func, "dat_ep_post_rdma_write");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_get_status_func, "dat_ep_get_status");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_free_func, "dat_ep_free");
  table.lmr_create_func = &LmrCreate;
  table.lmr_query_func = &LmrQuery;
  table.lmr_free_func = &LmrFree;
  SOFTDAT_SLOT_NOT_BUILT(table, rmr_create_func, "dat_rmr_create");
  SOFTDAT_SLOT_NOT_BUILT(table, rmr_query_func, "dat_rmr_query");
  SOFTDAT_SLOT_NOT_BUILT(table, rmr_bind_func, "dat_rmr_bind");
  SOFTDAT_SLOT_NOT_BUILT(table, rmr_free_func, "dat_rmr_free");
  SOFTDAT_SLOT_NOT_BUILT(table, psp_create_func, "dat_psp_create");
  SOFTDAT_SLOT_NOT_BUILT(table, psp_query_func, "dat_psp_query");
  SOFTDAT_SLOT_NOT_BUILT(table, psp_free_func, "dat_psp_free");
  SOFTDAT_SLOT_NOT_BUILT(table, rsp_create_func, "dat_rsp_create");
  SOFTDAT_SLOT_NOT_BUILT(table, rsp_query_func, "dat_rsp_query");
  SOFTDAT_SLOT_NOT_BUILT(table, rsp_free_func, "dat_rsp_free");
  table.pz_create_func = &PzCreate;
  table.pz_query_func = &PzQuery;
  table.pz_free_func = &PzFree;
  SOFTDAT_SLOT_NOT_BUILT(table, psp_create_any_func, "dat_psp_create_any");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_reset_func, "dat_ep_reset");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_set_unwaitable_func, "dat_evd_set_unwaitable");
  SOFTDAT_SLOT_NOT_BUILT(table, evd_clear_unwaitable_func, "dat_evd_clear_unwaitable");
  table.lmr_sync_rdma_read_func = &LmrSyncRdma;
  table.lmr_sync_rdma_write_func = &LmrSyncRdma;
  SOFTDAT_SLOT_NOT_BUILT(table, ep_create_with_srq_func, "dat_ep_create_with_srq");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_recv_query_func, "dat_ep_recv_query");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_set_watermark_func, "dat_ep_set_watermark");
  SOFTDAT_SLOT_NOT_BUILT(table, srq_create_func, "dat_srq_create");
  SOFTDAT_SLOT_NOT_BUILT(table, srq_free_func, "dat_srq_free");
  SOFTDAT_SLOT_NOT_BUILT(table, srq_post_recv_func, "dat_srq_post_recv");
  SOFTDAT_SLOT_NOT_BUILT(table, srq_query_func, "dat_srq_query");
  SOFTDAT_SLOT_NOT_BUILT(table, srq_resize_func, "dat_srq_resize");
  SOFTDAT_SLOT_NOT_BUILT(table, srq_set_lw_func, "dat_srq_set_lw");
  SOFTDAT_SLOT_NOT_BUILT(table, csp_create_func, "dat_csp_create");
  SOFTDAT_SLOT_NOT_BUILT(table, csp_query_func, "dat_csp_query");
  SOFTDAT_SLOT_NOT_BUILT(table, csp_free_func, "dat_csp_free");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_common_connect_func, "dat_ep_common_connect");
  SOFTDAT_SLOT_NOT_BUILT(table, rmr_create_for_ep_func, "dat_rmr_create_for_ep");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_post_send_with_invalidate_func, "dat_ep_post_send_with_invalidate");
  SOFTDAT_SLOT_NOT_BUILT(table, ep_post_rdma_read_to_rmr_func, "dat_ep_post_rdma_read_to_rmr");
  SOFTDAT_SLOT_NOT_BUILT(table, cno_fd_create_func, "dat_cno_fd_create");
  SOFTDAT_SLOT_NOT_BUILT(table, cno_trigger_func, "dat_cno_trigger");
  SOFTDAT_SLOT_NOT_BUILT(table, ia_ha_related_func, "dat_ia_ha_related");
  SOFTDAT_SLOT_NOT_BUILT(table, handle_extendedop_func, "dat_extension_op");
}

}  // namespace softdat::dat
