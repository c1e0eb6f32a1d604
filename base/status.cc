// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Names of the internal status codes, for log lines and test messages.
#include "base/status.h"

namespace softdat {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidParameter: return "invalid parameter";
    case Code::kInvalidHandle: return "invalid handle";
    case Code::kInvalidState: return "invalid state";
    case Code::kInsufficientResources: return "insufficient resources";
    case Code::kProtectionViolation: return "protection violation";
    case Code::kPrivilegesViolation: return "privileges violation";
    case Code::kQueueEmpty: return "queue empty";
    case Code::kQueueFull: return "queue full";
    case Code::kTimeout: return "timeout";
    case Code::kConnQualInUse: return "connection qualifier in use";
    case Code::kConnQualUnavailable: return "connection qualifier unavailable";
    case Code::kProviderNotFound: return "provider not found";
    case Code::kModelNotSupported: return "model not supported";
    case Code::kNotImplemented: return "not implemented";
    case Code::kInterrupted: return "interrupted";
    case Code::kInternal: return "internal error";
    case Code::kInvalidAddress: return "invalid address";
    case Code::kLengthError: return "length error";
    case Code::kAbort: return "aborted";
  }
  return "unknown";
}

const char* ParamName(Detail detail) {
  switch (detail) {
    case Detail::kParamHandle: return "handle";
    case Detail::kParamIaName: return "ia_name";
    case Detail::kParamQlen: return "qlen";
    case Detail::kParamAsyncEvd: return "async_evd_handle";
    case Detail::kParamHandleOut: return "handle (output)";
    case Detail::kParamMask: return "param_mask";
    case Detail::kParamParam: return "param";
    case Detail::kParamAttributes: return "attributes";
    case Detail::kParamProviderMask: return "provider_attr_mask";
    case Detail::kParamProviderAttributes: return "provider_attributes";
    case Detail::kParamFlags: return "flags";
    case Detail::kParamContext: return "context";
    case Detail::kParamHandleType: return "handle_type";
    case Detail::kParamEp: return "ep_handle";
    case Detail::kParamPz: return "pz_handle";
    case Detail::kParamSrq: return "srq_handle";
    case Detail::kParamLmr: return "lmr_handle";
    case Detail::kParamCno: return "cno_handle";
    case Detail::kParamEvd: return "evd_handle";
    case Detail::kParamRecvEvd: return "recv_evd_handle";
    case Detail::kParamRequestEvd: return "request_evd_handle";
    case Detail::kParamConnectEvd: return "connect_evd_handle";
    case Detail::kParamDupEp: return "ep_dup_handle";
    case Detail::kParamPrivateDataSize: return "private_data_size";
    case Detail::kParamPrivateData: return "private_data";
    case Detail::kParamHandoff: return "handoff";
    case Detail::kParamTimeout: return "timeout";
    case Detail::kParamThreshold: return "threshold";
    case Detail::kParamEvent: return "event";
    case Detail::kParamNmore: return "nmore";
    case Detail::kParamAgent: return "agent";
    case Detail::kParamFd: return "fd";
    case Detail::kParamRemoteAddress: return "remote_ia_address";
    case Detail::kParamConnQual: return "conn_qual";
    case Detail::kParamQos: return "qos";
    case Detail::kParamNumSegments: return "num_segments";
    case Detail::kParamLocalIov: return "local_iov";
    case Detail::kParamCookie: return "user_cookie";
    case Detail::kParamCompletionFlags: return "completion_flags";
    case Detail::kParamInvalidateFlag: return "invalidate_flag";
    case Detail::kParamRmrContext: return "rmr_context";
    case Detail::kParamRemoteBuffer: return "remote_buffer";
    case Detail::kParamEpState: return "ep_state";
    case Detail::kParamRecvIdle: return "recv_idle";
    case Detail::kParamRequestIdle: return "request_idle";
    case Detail::kParamNbufsAllocated: return "nbufs_allocated";
    case Detail::kParamBufsAllocSpan: return "bufs_alloc_span";
    case Detail::kParamSoftWatermark: return "soft_high_watermark";
    case Detail::kParamHardWatermark: return "hard_high_watermark";
    case Detail::kParamMemType: return "mem_type";
    case Detail::kParamRegion: return "region_description";
    case Detail::kParamLength: return "length";
    case Detail::kParamPrivileges: return "privileges";
    case Detail::kParamVaType: return "va_type";
    case Detail::kParamLmrContext: return "lmr_context";
    case Detail::kParamRegisteredLength: return "registered_length";
    case Detail::kParamRegisteredAddress: return "registered_address";
    case Detail::kParamLmrTriplet: return "lmr_triplet";
    case Detail::kParamSrqMaxRecvDto: return "srq_max_recv_dto";
    case Detail::kParamLowWatermark: return "low_watermark";
    case Detail::kParamSegments: return "local_segments";
    case Detail::kParamOperation: return "operation";
    case Detail::kParamAddValue: return "add_value";
    case Detail::kParamCompareValue: return "cmp_value";
    case Detail::kParamSwapValue: return "swap_value";
    case Detail::kParamImmediate: return "immed_data";
    case Detail::kParamAddressHandle: return "remote_ah";
    case Detail::kParamCm: return "cm";
    case Detail::kParamCounter: return "counter";
    case Detail::kParamCounterOut: return "p_cntrs_out";
    case Detail::kParamReset: return "reset";
    case Detail::kParamCounterType: return "type";
    default: return nullptr;
  }
}

}  // namespace softdat
