// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT 2.0 signatures softdat implements, by parameter (udat.h / dat.h and the man pages).
#include "dat/argument_positions.h"

#include <cstring>
#include <initializer_list>

namespace softdat::dat {
namespace {

using enum Detail;

struct Signature {
  const char* call;
  std::initializer_list<Detail> params;
};

// Sorted by call name for reading; looked up linearly (error paths only). A call may have more
// than one row when one argument carries what several names say.
const Signature kSignatures[] = {
    {"dat_cno_create", {kParamHandle, kParamAgent, kParamHandleOut}},
    {"dat_cno_fd_create", {kParamHandle, kParamFd, kParamHandleOut}},
    {"dat_cno_free", {kParamHandle}},
    {"dat_cno_modify_agent", {kParamHandle, kParamAgent}},
    {"dat_cno_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_cno_trigger", {kParamHandle, kParamEvd}},
    {"dat_cno_wait", {kParamHandle, kParamTimeout, kParamEvd}},
    {"dat_cr_accept", {kParamHandle, kParamEp, kParamPrivateDataSize, kParamPrivateData}},
    {"dat_cr_handoff", {kParamHandle, kParamHandoff}},
    {"dat_cr_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_cr_reject", {kParamHandle, kParamPrivateDataSize, kParamPrivateData}},
    {"dat_ep_connect",
     {kParamHandle, kParamRemoteAddress, kParamConnQual, kParamTimeout, kParamPrivateDataSize,
      kParamPrivateData, kParamQos, kParamFlags}},
    {"dat_ep_create",
     {kParamHandle, kParamPz, kParamRecvEvd, kParamRequestEvd, kParamConnectEvd, kParamAttributes,
      kParamHandleOut}},
    {"dat_ep_create_with_srq",
     {kParamHandle, kParamPz, kParamRecvEvd, kParamRequestEvd, kParamConnectEvd, kParamSrq,
      kParamAttributes, kParamHandleOut}},
    {"dat_ep_disconnect", {kParamHandle, kParamFlags}},
    {"dat_ep_dup_connect",
     {kParamHandle, kParamDupEp, kParamTimeout, kParamPrivateDataSize, kParamPrivateData, kParamQos}},
    {"dat_ep_free", {kParamHandle}},
    {"dat_ep_get_status", {kParamHandle, kParamEpState, kParamRecvIdle, kParamRequestIdle}},
    {"dat_ep_modify", {kParamHandle, kParamMask, kParamParam}},
    // ... whose param carries the EP attributes: an attribute refused is the param argument.
    {"dat_ep_modify", {kParamHandle, kParamMask, kParamAttributes}},
    {"dat_ep_post_rdma_read",
     {kParamHandle, kParamNumSegments, kParamLocalIov, kParamCookie, kParamRemoteBuffer,
      kParamCompletionFlags}},
    {"dat_ep_post_rdma_read_to_rmr",
     {kParamHandle, kParamLocalIov, kParamCookie, kParamRemoteBuffer, kParamCompletionFlags}},
    {"dat_ep_post_rdma_write",
     {kParamHandle, kParamNumSegments, kParamLocalIov, kParamCookie, kParamRemoteBuffer,
      kParamCompletionFlags}},
    {"dat_ep_post_recv",
     {kParamHandle, kParamNumSegments, kParamLocalIov, kParamCookie, kParamCompletionFlags}},
    {"dat_ep_post_send",
     {kParamHandle, kParamNumSegments, kParamLocalIov, kParamCookie, kParamCompletionFlags}},
    {"dat_ep_post_send_with_invalidate",
     {kParamHandle, kParamNumSegments, kParamLocalIov, kParamCookie, kParamCompletionFlags,
      kParamInvalidateFlag, kParamRmrContext}},
    {"dat_ep_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_ep_recv_query", {kParamHandle, kParamNbufsAllocated, kParamBufsAllocSpan}},
    {"dat_ep_reset", {kParamHandle}},
    {"dat_ep_set_watermark", {kParamHandle, kParamSoftWatermark, kParamHardWatermark}},
    {"dat_evd_clear_unwaitable", {kParamHandle}},
    {"dat_evd_create", {kParamHandle, kParamQlen, kParamCno, kParamFlags, kParamHandleOut}},
    {"dat_evd_dequeue", {kParamHandle, kParamEvent}},
    {"dat_evd_disable", {kParamHandle}},
    {"dat_evd_enable", {kParamHandle}},
    {"dat_evd_free", {kParamHandle}},
    {"dat_evd_modify_cno", {kParamHandle, kParamCno}},
    {"dat_evd_post_se", {kParamHandle, kParamEvent}},
    {"dat_evd_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_evd_resize", {kParamHandle, kParamQlen}},
    {"dat_evd_set_unwaitable", {kParamHandle}},
    {"dat_evd_wait", {kParamHandle, kParamTimeout, kParamThreshold, kParamEvent, kParamNmore}},
    {"dat_get_consumer_context", {kParamHandle, kParamContext}},
    // The DAT IB extension calls (dat_ib_extensions.h): dat_extension_op(handle, operation, ...).
    {"dat_extension_op", {kParamHandle, kParamOperation}},
    {"dat_ib_close_query", {kParamHandle, kParamOperation}},
    {"dat_ib_open_query",
     {kParamIaName, kParamOperation, kParamHandleOut, kParamMask, kParamAttributes, kParamProviderMask,
      kParamProviderAttributes}},
    {"dat_ib_post_cmp_and_swap",
     {kParamHandle, kParamOperation, kParamCompareValue, kParamSwapValue, kParamLocalIov, kParamCookie,
      kParamRemoteBuffer, kParamCompletionFlags}},
    {"dat_ib_post_fetch_and_add",
     {kParamHandle, kParamOperation, kParamAddValue, kParamLocalIov, kParamCookie, kParamRemoteBuffer,
      kParamCompletionFlags}},
    {"dat_ib_post_rdma_write_immed",
     {kParamHandle, kParamOperation, kParamNumSegments, kParamLocalIov, kParamCookie, kParamRemoteBuffer,
      kParamImmediate, kParamCompletionFlags}},
    {"dat_ib_post_send_ud",
     {kParamHandle, kParamOperation, kParamNumSegments, kParamLocalIov, kParamAddressHandle, kParamCookie,
      kParamCompletionFlags}},
    {"dat_ib_print_counters", {kParamHandle, kParamOperation, kParamCounter, kParamReset}},
    {"dat_ib_query_counters", {kParamHandle, kParamOperation, kParamCounter, kParamCounterOut, kParamReset}},
    {"dat_ib_start_counter", {kParamHandle, kParamOperation, kParamCounterType}},
    {"dat_ib_stop_counter", {kParamHandle, kParamOperation, kParamCounterType}},
    {"dat_ib_ud_ah_free", {kParamHandle, kParamOperation, kParamAddressHandle}},
    {"dat_ib_ud_cm_free", {kParamHandle, kParamOperation, kParamCm}},
    {"dat_get_handle_type", {kParamHandle, kParamHandleType}},
    {"dat_ia_close", {kParamHandle, kParamFlags}},
    // dat_ia_ha_related(ia, provider name, answer)
    {"dat_ia_ha_related", {kParamHandle, kParamIaName, kParamParam}},
    // dat_ia_open(ia_name, async_evd_min_qlen, async_evd_handle, ia_handle)
    {"dat_ia_open", {kParamIaName, kParamQlen, kParamAsyncEvd, kParamHandleOut}},
    {"dat_ia_query",
     {kParamHandle, kParamAsyncEvd, kParamMask, kParamAttributes, kParamProviderMask,
      kParamProviderAttributes}},
    {"dat_lmr_create",
     {kParamHandle, kParamMemType, kParamRegion, kParamLength, kParamPz, kParamPrivileges,
      kParamVaType, kParamHandleOut, kParamLmrContext, kParamRmrContext, kParamRegisteredLength,
      kParamRegisteredAddress}},
    {"dat_lmr_free", {kParamHandle}},
    {"dat_lmr_query", {kParamHandle, kParamMask, kParamParam}},
    // dat_lmr_sync_rdma_read and _write share one entry.
    {"dat_lmr_sync_rdma", {kParamHandle, kParamSegments, kParamNumSegments}},
    {"dat_psp_create", {kParamHandle, kParamConnQual, kParamEvd, kParamFlags, kParamHandleOut}},
    {"dat_psp_create_any", {kParamHandle, kParamConnQual, kParamEvd, kParamFlags, kParamHandleOut}},
    {"dat_psp_free", {kParamHandle}},
    {"dat_psp_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_pz_create", {kParamHandle, kParamHandleOut}},
    {"dat_pz_free", {kParamHandle}},
    {"dat_pz_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_rmr_bind",
     {kParamHandle, kParamLmr, kParamLmrTriplet, kParamPrivileges, kParamVaType, kParamEp,
      kParamCookie, kParamCompletionFlags, kParamRmrContext}},
    {"dat_rmr_create", {kParamHandle, kParamHandleOut}},
    {"dat_rmr_free", {kParamHandle}},
    {"dat_rmr_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_rsp_create", {kParamHandle, kParamConnQual, kParamEp, kParamEvd, kParamHandleOut}},
    {"dat_rsp_free", {kParamHandle}},
    {"dat_rsp_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_set_consumer_context", {kParamHandle, kParamContext}},
    {"dat_srq_create", {kParamHandle, kParamPz, kParamAttributes, kParamHandleOut}},
    {"dat_srq_free", {kParamHandle}},
    {"dat_srq_post_recv", {kParamHandle, kParamNumSegments, kParamLocalIov, kParamCookie}},
    {"dat_srq_query", {kParamHandle, kParamMask, kParamParam}},
    {"dat_srq_resize", {kParamHandle, kParamSrqMaxRecvDto}},
    {"dat_srq_set_lw", {kParamHandle, kParamLowWatermark}},
};

}  // namespace

int ArgumentPosition(const char* call, Detail param) {
  for (const Signature& signature : kSignatures) {
    if (std::strcmp(signature.call, call) != 0) continue;
    int position = 1;
    for (Detail named : signature.params) {
      if (named == param) return position;
      ++position;
    }
  }
  return 0;
}

std::vector<const char*> KnownCalls() {
  std::vector<const char*> calls;
  for (const Signature& signature : kSignatures) calls.push_back(signature.call);
  return calls;
}

}  // namespace softdat::dat
