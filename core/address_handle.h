// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What the IB extension's UD connection events hand a consumer (dat_ib_extensions.h): the peer's
// address handle (DAT_IB_ADDR_HANDLE::ah, which dat_ib_post_send_ud names and dat_ib_ud_ah_free
// frees) and the connection record (the event's context, with the private data the event points
// at, freed by dat_ib_ud_cm_free). Both live in handle storage, so a stale pointer that comes back
// reads kFreed and is refused; both belong to the EP that received the event, which frees what
// the consumer did not when it goes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "core/dat_ib.h"
#include "core/handle.h"
#include "transport/datagram.h"

namespace softdat::core {

class Ep;

class AddressHandle : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kAddressHandle;

  AddressHandle(Ep* ep, std::unique_ptr<transport::AddressHandle> peer) : ep_(ep), peer_(std::move(peer)) {}

  Ep* ep() const { return ep_; }
  const transport::AddressHandle& peer() const { return *peer_; }
  // As DAT reports it (ah is this object).
  DAT_IB_ADDR_HANDLE Describe();

 private:
  Ep* ep_;
  std::unique_ptr<transport::AddressHandle> peer_;
};

class DatagramCm : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kDatagramCm;
  static constexpr std::size_t kMaxPrivateData = 512;

  DatagramCm(Ep* ep, std::span<const std::uint8_t> private_data);

  Ep* ep() const { return ep_; }
  // What the connection event's private_data points at (null when empty).
  void* private_data() { return size_ == 0 ? nullptr : data_.data(); }
  DAT_COUNT private_data_size() const { return static_cast<DAT_COUNT>(size_); }

 private:
  Ep* ep_;
  std::size_t size_ = 0;
  std::array<std::uint8_t, kMaxPrivateData> data_{};
};

}  // namespace softdat::core
