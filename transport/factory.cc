// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The switch from IA params to transport backend.
#include "transport/factory.h"

#include "transport/tcp/tcp_transport.h"
#include "transport/verbs/verbs_transport.h"

namespace softdat::transport {

Status CreateTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out) {
  switch (params.kind) {
    case TransportKind::kTcp: return tcp::CreateTcpTransport(params, why, out);
    case TransportKind::kVerbs: return verbs::CreateVerbsTransport(params, why, out);
  }
  why = "unknown transport";
  return Status(Code::kInvalidParameter);
}

}  // namespace softdat::transport
