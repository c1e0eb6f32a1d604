// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Status -> DAT_RETURN: major type from the code, subtype from the detail.
//
// Every value made here is one libdat2's dat_strerror can name (dat/status_map_test.cc checks each
// code with each detail): consumers print our failures with it. Where DAT defines a code that
// libdat2 cannot name, the nearest one it can takes its place, and the log line says why.
#include "dat/status_map.h"

#include "dat/argument_positions.h"

namespace softdat::dat {
namespace {

DAT_RETURN TypeOf(Code code) {
  switch (code) {
    case Code::kOk: return DAT_SUCCESS;
    case Code::kInvalidParameter: return DAT_INVALID_PARAMETER;
    case Code::kInvalidHandle: return DAT_INVALID_HANDLE;
    case Code::kInvalidState: return DAT_INVALID_STATE;
    case Code::kInsufficientResources: return DAT_INSUFFICIENT_RESOURCES;
    case Code::kProtectionViolation: return DAT_PROTECTION_VIOLATION;
    case Code::kPrivilegesViolation: return DAT_PRIVILEGES_VIOLATION;
    case Code::kQueueEmpty: return DAT_QUEUE_EMPTY;
    case Code::kQueueFull: return DAT_QUEUE_FULL;
    case Code::kTimeout: return DAT_TIMEOUT_EXPIRED;
    case Code::kConnQualInUse: return DAT_CONN_QUAL_IN_USE;
    // DAT_CONN_QUAL_UNAVAILABLE is unknown to libdat2 ("unknown error"): a qualifier that cannot
    // be listened on is reported as one in use, which consumers already handle (they try another).
    case Code::kConnQualUnavailable: return DAT_CONN_QUAL_IN_USE;
    case Code::kProviderNotFound: return DAT_PROVIDER_NOT_FOUND;
    case Code::kModelNotSupported: return DAT_MODEL_NOT_SUPPORTED;
    case Code::kNotImplemented: return DAT_NOT_IMPLEMENTED;
    case Code::kInterrupted: return DAT_INTERRUPTED_CALL;
    case Code::kInternal: return DAT_INTERNAL_ERROR;
    case Code::kInvalidAddress: return DAT_INVALID_ADDRESS;
    case Code::kLengthError: return DAT_LENGTH_ERROR;
    case Code::kAbort: return DAT_ABORT;
  }
  return DAT_INTERNAL_ERROR;
}

DAT_RETURN SubtypeOf(Detail detail) {
  switch (detail) {
    case Detail::kNone: return DAT_NO_SUBTYPE;
    case Detail::kIa: return DAT_INVALID_HANDLE_IA;
    case Detail::kEp: return DAT_INVALID_HANDLE_EP;
    case Detail::kLmr: return DAT_INVALID_HANDLE_LMR;
    case Detail::kRmr: return DAT_INVALID_HANDLE_RMR;
    case Detail::kPz: return DAT_INVALID_HANDLE_PZ;
    case Detail::kPsp: return DAT_INVALID_HANDLE_PSP;
    case Detail::kRsp: return DAT_INVALID_HANDLE_RSP;
    case Detail::kCr: return DAT_INVALID_HANDLE_CR;
    case Detail::kCno: return DAT_INVALID_HANDLE_CNO;
    case Detail::kEvdCr: return DAT_INVALID_HANDLE_EVD_CR;
    case Detail::kEvdRequest: return DAT_INVALID_HANDLE_EVD_REQUEST;
    case Detail::kEvdRecv: return DAT_INVALID_HANDLE_EVD_RECV;
    case Detail::kEvdConnect: return DAT_INVALID_HANDLE_EVD_CONN;
    case Detail::kEvdAsync: return DAT_INVALID_HANDLE_EVD_ASYNC;
    case Detail::kSrq: return DAT_INVALID_HANDLE_SRQ;
    case Detail::kCsp: return DAT_INVALID_HANDLE_CSP;
    case Detail::kEpUnconnected: return DAT_INVALID_STATE_EP_UNCONNECTED;
    case Detail::kEpActConnPending: return DAT_INVALID_STATE_EP_ACTCONNPENDING;
    case Detail::kEpPassConnPending: return DAT_INVALID_STATE_EP_PASSCONNPENDING;
    case Detail::kEpTentConnPending: return DAT_INVALID_STATE_EP_TENTCONNPENDING;
    case Detail::kEpConnected: return DAT_INVALID_STATE_EP_CONNECTED;
    case Detail::kEpDisconnected: return DAT_INVALID_STATE_EP_DISCONNECTED;
    case Detail::kEpReserved: return DAT_INVALID_STATE_EP_RESERVED;
    case Detail::kEpCompletionPending: return DAT_INVALID_STATE_EP_COMPLPENDING;
    case Detail::kEpDisconnPending: return DAT_INVALID_STATE_EP_DISCPENDING;
    case Detail::kEpProviderControl: return DAT_INVALID_STATE_EP_PROVIDERCONTROL;
    case Detail::kEpNotReady: return DAT_INVALID_STATE_EP_NOTREADY;
    case Detail::kEpRecvWatermark: return DAT_INVALID_STATE_EP_RECV_WATERMARK;
    case Detail::kEpPz: return DAT_INVALID_STATE_EP_PZ;
    case Detail::kEpEvdRequest: return DAT_INVALID_STATE_EP_EVD_REQUEST;
    case Detail::kEpEvdRecv: return DAT_INVALID_STATE_EP_EVD_RECV;
    case Detail::kEpEvdConnect: return DAT_INVALID_STATE_EP_EVD_CONNECT;
    case Detail::kCnoInUse: return DAT_INVALID_STATE_CNO_IN_USE;
    case Detail::kCnoDead: return DAT_INVALID_STATE_CNO_DEAD;
    case Detail::kEvdOpen: return DAT_INVALID_STATE_EVD_OPEN;
    case Detail::kEvdEnabled: return DAT_INVALID_STATE_EVD_ENABLED;
    case Detail::kEvdDisabled: return DAT_INVALID_STATE_EVD_DISABLED;
    case Detail::kEvdWaitable: return DAT_INVALID_STATE_EVD_WAITABLE;
    case Detail::kEvdUnwaitable: return DAT_INVALID_STATE_EVD_UNWAITABLE;
    case Detail::kEvdInUse: return DAT_INVALID_STATE_EVD_IN_USE;
    case Detail::kEvdConfigNotify: return DAT_INVALID_STATE_EVD_CONFIG_NOTIFY;
    case Detail::kEvdConfigSolicited: return DAT_INVALID_STATE_EVD_CONFIG_SOLICITED;
    case Detail::kEvdConfigThreshold: return DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD;
    case Detail::kEvdWaiter: return DAT_INVALID_STATE_EVD_WAITER;
    case Detail::kEvdAsyncState: return DAT_INVALID_STATE_EVD_ASYNC;
    case Detail::kIaInUse: return DAT_INVALID_STATE_IA_IN_USE;
    case Detail::kLmrInUse: return DAT_INVALID_STATE_LMR_IN_USE;
    case Detail::kLmrFree: return DAT_INVALID_STATE_LMR_FREE;
    case Detail::kPzInUse: return DAT_INVALID_STATE_PZ_IN_USE;
    case Detail::kPzFree: return DAT_INVALID_STATE_PZ_FREE;
    // libdat2 names none of the DAT_INVALID_STATE_SRQ_* subtypes ("unknown minor error"); the SRQ
    // man pages ask for DAT_INVALID_STATE only, and the log line says which state.
    case Detail::kSrqOperational:
    case Detail::kSrqError:
    case Detail::kSrqInUse:
    case Detail::kSrqShutdown: return DAT_NO_SUBTYPE;
    case Detail::kMemory: return DAT_RESOURCE_MEMORY;
    case Detail::kDevice: return DAT_RESOURCE_DEVICE;
    case Detail::kTep: return DAT_RESOURCE_TEP;
    case Detail::kTevd: return DAT_RESOURCE_TEVD;
    case Detail::kProtectionDomain: return DAT_RESOURCE_PROTECTION_DOMAIN;
    case Detail::kMemoryRegion: return DAT_RESOURCE_MEMORY_REGION;
    case Detail::kCredits: return DAT_RESOURCE_CREDITS;
    case Detail::kResourceSrq: return DAT_RESOURCE_SRQ;
    case Detail::kPrivilegesRead: return DAT_PRIVILEGES_READ;
    case Detail::kPrivilegesWrite: return DAT_PRIVILEGES_WRITE;
    case Detail::kPrivilegesRdmaRead: return DAT_PRIVILEGES_RDMA_READ;
    case Detail::kPrivilegesRdmaWrite: return DAT_PRIVILEGES_RDMA_WRITE;
    case Detail::kProtectionRead: return DAT_PROTECTION_READ;
    case Detail::kProtectionWrite: return DAT_PROTECTION_WRITE;
    case Detail::kProtectionRdmaRead: return DAT_PROTECTION_RDMA_READ;
    case Detail::kProtectionRdmaWrite: return DAT_PROTECTION_RDMA_WRITE;
    case Detail::kAddressUnsupported: return DAT_INVALID_ADDRESS_UNSUPPORTED;
    case Detail::kAddressUnreachable: return DAT_INVALID_ADDRESS_UNREACHABLE;
    case Detail::kAddressMalformed: return DAT_INVALID_ADDRESS_MALFORMED;
    default: break;  // parameters: ParameterSubtype, with the call
  }
  return DAT_NO_SUBTYPE;
}

// A named parameter of `call`: its position's DAT_INVALID_ARGn, or for an invalid handle argument
// (where DAT has no handle-type subtype, such as the EVD of dat_evd_* calls) DAT_INVALID_HANDLEn.
DAT_RETURN ParameterSubtype(Code code, Detail param, const char* call) {
  constexpr DAT_RETURN kArgument[] = {DAT_INVALID_ARG1, DAT_INVALID_ARG2, DAT_INVALID_ARG3, DAT_INVALID_ARG4,
                                      DAT_INVALID_ARG5, DAT_INVALID_ARG6, DAT_INVALID_ARG7, DAT_INVALID_ARG8,
                                      DAT_INVALID_ARG9, DAT_INVALID_ARG10};
  constexpr DAT_RETURN kHandle[] = {DAT_INVALID_HANDLE1, DAT_INVALID_HANDLE2, DAT_INVALID_HANDLE3,
                                    DAT_INVALID_HANDLE4, DAT_INVALID_HANDLE5, DAT_INVALID_HANDLE6,
                                    DAT_INVALID_HANDLE7, DAT_INVALID_HANDLE8, DAT_INVALID_HANDLE9,
                                    DAT_INVALID_HANDLE10};
  const int position = ArgumentPosition(call, param);
  if (position < 1 || position > 10) {
    SOFTDAT_LOG(kError, "%s: internal: no parameter %s in its signature (dat/argument_positions.cc)", call,
                ParamName(param));
    return DAT_NO_SUBTYPE;
  }
  return code == Code::kInvalidHandle ? kHandle[position - 1] : kArgument[position - 1];
}

}  // namespace

DAT_RETURN MapStatus(Status status, const char* call) {
  if (status.ok()) return DAT_SUCCESS;
  const Detail detail = status.detail();
  if (ParamName(detail) != nullptr) return TypeOf(status.code()) | ParameterSubtype(status.code(), detail, call);
  return TypeOf(status.code()) | SubtypeOf(detail);
}

}  // namespace softdat::dat
