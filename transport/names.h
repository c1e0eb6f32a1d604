// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Names of the transport interface's enumerations, for log lines: why a connection ended
// (ConnectionEnd). The DAT event and DAT_RETURN names are base/dat_names.h's.
#pragma once

#include "transport/endpoint.h"

namespace softdat::transport {

// "disconnected", "broken", "timed out", "unreachable", "rejected by the peer", "refused by the
// peer's provider", "accept failed".
constexpr const char* ConnectionEndName(ConnectionEnd why) {
  switch (why) {
    case ConnectionEnd::kDisconnected: return "disconnected";
    case ConnectionEnd::kBroken: return "broken";
    case ConnectionEnd::kTimedOut: return "timed out";
    case ConnectionEnd::kUnreachable: return "unreachable";
    case ConnectionEnd::kPeerRejected: return "rejected by the peer";
    case ConnectionEnd::kNonPeerRejected: return "refused by the peer's provider";
    case ConnectionEnd::kAcceptFailed: return "accept failed";
  }
  return "unknown end";
}

}  // namespace softdat::transport
