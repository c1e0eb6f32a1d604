// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Resources a device transport (verbs) keeps on its NIC: protection domains, registered memory
// and shared receive queues. Software transports return trivial objects (a PD that is only a
// name, no memory registration, no device SRQ): core/ keeps the keys and srq/ the buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "transport/work.h"

namespace softdat::transport {

class ProtectionDomain {
 public:
  virtual ~ProtectionDomain() = default;
};

// Memory registered with a device: the keys the NIC knows it by.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  virtual std::uint32_t local_key() const = 0;
  virtual std::uint32_t remote_key() const = 0;
};

struct MemoryAccess {
  bool local_write = false;
  bool remote_read = false;
  bool remote_write = false;
  bool remote_atomic = false;  // DAT_IB_MEM_PRIV_REMOTE_ATOMIC, where the device has atomics
};

// A device shared receive queue. The device takes its buffers; completions arrive as
// EndpointEvents::OnDeviceRecvDone on the endpoint that consumed them.
class DeviceSrqEvents {
 public:
  // The device's SRQ limit event fired (it disarms itself, one-shot like dat_srq_set_lw).
  virtual void OnLimitReached() = 0;

 protected:
  ~DeviceSrqEvents() = default;
};

class DeviceSrq {
 public:
  virtual ~DeviceSrq() = default;
  virtual Status PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) = 0;
  // Arms the limit event for when fewer than `limit` buffers are on the SRQ (0 disarms).
  virtual Status ArmLimit(std::uint32_t limit) = 0;
  // Grows the device queue to hold at least `max_work` buffers: kModelNotSupported when the
  // device cannot resize.
  virtual Status Resize(std::uint32_t max_work) = 0;
};

}  // namespace softdat::transport
