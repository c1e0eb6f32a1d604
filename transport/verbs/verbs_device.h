// The rdma-core device an IA runs on: opened by name through librdmacm (so that the cm_ids of
// the IA and its PDs share one ibv_context), the IPv4 address rdma_cm binds to it, its
// capabilities as the device reports them, and the small translations every verbs file needs
// (completion status, private data framing).
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <cstdint>
#include <span>
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

// Private data on the wire carries a 2-byte header (a tag and the exact length), because IB
// pads connect, accept and reject data to the full CM message size and because an empty
// rdma_reject cannot be told from a consumer's reject with empty data.
inline constexpr std::uint8_t kTagConnect = 0xd5;      // Connect and Accept data
inline constexpr std::uint8_t kTagPeerReject = 0xd6;   // the consumer rejected
inline constexpr std::uint8_t kTagNoAnswer = 0xd7;     // nobody answered the request
inline constexpr std::uint32_t kPrivateHeader = 2;
inline constexpr std::uint32_t kMaxPrivateData = 56 - kPrivateHeader;  // IB REQ limit via rdma_cm

struct PrivateData {
  std::uint8_t bytes[kMaxPrivateData + kPrivateHeader] = {};
  std::uint8_t length = 0;  // of the framed bytes
};
// Frames `data` (cut to kMaxPrivateData) with `tag`.
void Frame(std::uint8_t tag, std::span<const std::uint8_t> data, PrivateData& out);
// The sender's exact bytes when framed, else everything rdma_cm gave; `tag` 0 when unframed.
std::span<const std::uint8_t> Unframe(const void* data, std::uint8_t length, std::uint8_t& tag);

}  // namespace softdat::transport::verbs
