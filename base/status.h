// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// softdat's one internal status type. Every layer below dat/ returns Status; dat/status_map.cc is
// the single place where it becomes a DAT_RETURN (major type plus subtype).
#pragma once

#include <cstdint>

namespace softdat {

// The failure classes the DAT spec distinguishes (the DAT_RETURN major types we use).
enum class Code : std::uint8_t {
  kOk = 0,
  kInvalidParameter,
  kInvalidHandle,
  kInvalidState,
  kInsufficientResources,
  kProtectionViolation,
  kPrivilegesViolation,
  kQueueEmpty,
  kQueueFull,
  kTimeout,
  kConnQualInUse,
  kConnQualUnavailable,
  kProviderNotFound,
  kModelNotSupported,
  kNotImplemented,
  kInterrupted,
  kInternal,
  kInvalidAddress,
  kLengthError,
  kAbort,
};

// Which argument, handle type, state or resource a failure is about (the DAT subtype). Named
// here so that srq/, evd/ and the transports never include the DAT error header.
enum class Detail : std::uint8_t {
  kNone = 0,
  // Parameters, named as the DAT man pages name them. Code says which parameter was wrong; dat/
  // turns the name into the DAT_INVALID_ARGn (or, for an invalid handle argument that has no
  // handle-type subtype, DAT_INVALID_HANDLEn) of its position in the call being served
  // (dat/argument_positions.cc: the one place DAT argument positions are written down).
  kParamHandle,  // the object the call acts on: its first argument
  kParamIaName, kParamQlen, kParamAsyncEvd, kParamHandleOut, kParamMask, kParamParam,
  kParamAttributes, kParamProviderMask, kParamProviderAttributes, kParamFlags, kParamContext,
  kParamHandleType, kParamEp, kParamPz, kParamSrq, kParamLmr, kParamCno, kParamEvd,
  kParamRecvEvd, kParamRequestEvd, kParamConnectEvd, kParamDupEp, kParamPrivateDataSize,
  kParamPrivateData, kParamHandoff, kParamTimeout, kParamThreshold, kParamEvent, kParamNmore,
  kParamAgent, kParamFd, kParamRemoteAddress, kParamConnQual, kParamQos, kParamNumSegments,
  kParamLocalIov, kParamCookie, kParamCompletionFlags, kParamInvalidateFlag, kParamRmrContext,
  kParamRemoteBuffer, kParamEpState, kParamRecvIdle, kParamRequestIdle, kParamNbufsAllocated,
  kParamBufsAllocSpan, kParamSoftWatermark, kParamHardWatermark, kParamMemType, kParamRegion,
  kParamLength, kParamPrivileges, kParamVaType, kParamLmrContext, kParamRegisteredLength,
  kParamRegisteredAddress, kParamLmrTriplet, kParamSrqMaxRecvDto, kParamLowWatermark,
  kParamSegments,
  // ... and of the DAT IB extension calls (dat_ib_extensions.h), made through dat_extension_op.
  kParamOperation, kParamAddValue, kParamCompareValue, kParamSwapValue, kParamImmediate,
  kParamAddressHandle, kParamCm, kParamCounter, kParamCounterOut, kParamReset, kParamCounterType,
  // Handle types (DAT_INVALID_HANDLE_*).
  kIa, kEp, kLmr, kRmr, kPz, kPsp, kRsp, kCr, kCno, kEvdCr, kEvdRequest, kEvdRecv, kEvdConnect,
  kEvdAsync, kSrq, kCsp,
  // States (DAT_INVALID_STATE_*).
  kEpUnconnected, kEpActConnPending, kEpPassConnPending, kEpTentConnPending, kEpConnected,
  kEpDisconnected, kEpReserved, kEpCompletionPending, kEpDisconnPending, kEpProviderControl,
  kEpNotReady, kEpRecvWatermark, kEpPz, kEpEvdRequest, kEpEvdRecv, kEpEvdConnect,
  kCnoInUse, kCnoDead, kEvdOpen, kEvdEnabled, kEvdDisabled, kEvdWaitable, kEvdUnwaitable,
  kEvdInUse, kEvdConfigNotify, kEvdConfigSolicited, kEvdConfigThreshold, kEvdWaiter, kEvdAsyncState,
  kIaInUse, kLmrInUse, kLmrFree, kPzInUse, kPzFree, kSrqOperational, kSrqError, kSrqInUse,
  kSrqShutdown,
  // Resources (DAT_RESOURCE_*).
  kMemory, kDevice, kTep, kTevd, kProtectionDomain, kMemoryRegion, kCredits, kResourceSrq,
  // Privileges and protection (DAT_PRIVILEGES_*, DAT_PROTECTION_*).
  kPrivilegesRead, kPrivilegesWrite, kPrivilegesRdmaRead, kPrivilegesRdmaWrite,
  kProtectionRead, kProtectionWrite, kProtectionRdmaRead, kProtectionRdmaWrite,
  // Addresses (DAT_INVALID_ADDRESS_*).
  kAddressUnsupported, kAddressUnreachable, kAddressMalformed,
};

class [[nodiscard]] Status {
 public:
  constexpr Status() = default;
  constexpr Status(Code code, Detail detail = Detail::kNone) : code_(code), detail_(detail) {}

  static constexpr Status Ok() { return Status(); }

  constexpr bool ok() const { return code_ == Code::kOk; }
  constexpr Code code() const { return code_; }
  constexpr Detail detail() const { return detail_; }

  friend constexpr bool operator==(Status, Status) = default;

 private:
  Code code_ = Code::kOk;
  Detail detail_ = Detail::kNone;
};

// A short stable name of a code, for log lines and test failure messages.
const char* CodeName(Code code);
// The man-page name of a parameter detail ("num_segments"), or null for other details.
const char* ParamName(Detail detail);

}  // namespace softdat
