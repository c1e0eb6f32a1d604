// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Private-data limits and the reading of rdma_cm rejects (see private_data.h).
#include "transport/verbs/private_data.h"

#include <algorithm>
#include <cstring>

namespace softdat::transport::verbs {

std::uint32_t MaxPrivateData(ibv_transport_type transport) {
  return transport == IBV_TRANSPORT_IWARP ? kMaxPrivateDataIwarp : kMaxPrivateDataIb;
}

RejectedBy ClassifyReject(ibv_transport_type transport, int status, std::size_t private_data_length) {
  if (transport == IBV_TRANSPORT_IWARP)
    return private_data_length > 0 ? RejectedBy::kPeerConsumer : RejectedBy::kNonPeer;
  return status == kRejectConsumer ? RejectedBy::kPeerConsumer : RejectedBy::kNonPeer;
}

void PrivateData::Assign(std::span<const std::uint8_t> data) {
  length = static_cast<std::uint8_t>(std::min(data.size(), sizeof bytes));
  if (length > 0) std::memcpy(bytes, data.data(), length);
}

}  // namespace softdat::transport::verbs
