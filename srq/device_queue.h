// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A device's SRQ as the SrqPool sees it (device receive model): the pool keeps every SRQ rule and
// the books, and asks the device to take a posted buffer, arm its limit event, or grow. core/
// adapts transport::DeviceSrq to this, so srq/ depends on nothing but base/.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "srq/recv_buffer.h"

namespace softdat::srq {

class DeviceQueue {
 public:
  // Posts buffer `slot` (its pool slot, what the device's completion will name).
  virtual Status PostRecv(std::uint32_t slot, std::span<const RecvSegment> segments) = 0;
  // Arms the device's one-shot limit event for fewer than `limit` buffers; 0 disarms.
  // kInvalidParameter when the device already holds fewer than `limit` (rxe refuses then).
  virtual Status ArmLimit(std::uint32_t limit) = 0;
  // Grows the device queue to hold `size` buffers (kModelNotSupported where the device cannot).
  virtual Status Grow(std::uint32_t size) = 0;
  // Whether the device raises a limit event at all (dat_srq_set_lw needs one).
  virtual bool has_limit_event() const = 0;
  // The largest queue the device makes, and the size it was made or grown to.
  virtual std::uint32_t max_size() const = 0;
  virtual std::uint32_t size() const = 0;

 protected:
  ~DeviceQueue() = default;
};

}  // namespace softdat::srq
