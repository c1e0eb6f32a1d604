// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The rdma-core device an IA runs on: opened by name through librdmacm (so that the cm_ids of
// the IA and its PDs share one ibv_context), the IPv4 address rdma_cm binds to it, its
// capabilities as the device reports them, and the small translations every verbs file needs
// (completion status).
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "base/status.h"
#include "transport/transport.h"

namespace softdat::transport::verbs {

struct Device {
  ibv_context** list = nullptr;  // from rdma_get_devices; kept so the contexts stay open
  ibv_context* context = nullptr;
  ibv_device_attr attr{};
  ibv_port_attr port_attr{};
  std::uint8_t port = 0;
  sockaddr_in address{};
  std::string name;
};

// Opens `name` port `port`; kInvalidParameter with `why` when either is absent or no IPv4
// address of this machine belongs to the device.
Status OpenDevice(const std::string& name, std::uint8_t port, Device& out, std::string& why);
void CloseDevice(Device& device);

Capabilities CapabilitiesOf(const Device& device, bool busy_poll);

WorkStatus FromWcStatus(ibv_wc_status status);

}  // namespace softdat::transport::verbs
