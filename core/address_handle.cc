// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// UD address handles and connection records.
#include "core/address_handle.h"

#include <algorithm>

#include "core/ib_event.h"

namespace softdat::core {

DAT_IB_ADDR_HANDLE AddressHandle::Describe() {
  return MakeAddressHandle(this, peer_->qpn(), peer_->address(), peer_->port());
}

DatagramCm::DatagramCm(Ep* ep, std::span<const std::uint8_t> private_data)
    : ep_(ep), size_(std::min(private_data.size(), kMaxPrivateData)) {
  std::copy_n(private_data.data(), size_, data_.data());
}

}  // namespace softdat::core
