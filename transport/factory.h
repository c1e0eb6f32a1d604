// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The one place a transport backend is chosen: the IA params' first word ("tcp", "verbs") picks
// the backend's factory. The provider library hands this to core (core::Ia::Open) and so links
// every backend; core itself never names one.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "transport/ia_params.h"
#include "transport/transport.h"

namespace softdat::transport {

// A transport::TransportFactory: the backend `params.kind` names, opened on its address or device.
Status CreateTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out);

}  // namespace softdat::transport
