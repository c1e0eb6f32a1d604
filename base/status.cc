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

}  // namespace softdat
