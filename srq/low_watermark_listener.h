// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// How the SRQ pool reports its low-watermark event without knowing about EVDs: core/ implements
// this to queue DAT_ASYNC_ERROR-style SRQ_LOW_WATERMARK events on the IA's async EVD.
#pragma once

namespace softdat::srq {

class LowWatermarkListener {
 public:
  // Called at most once per arming (dat_srq_set_lw), never with the pool's lock held, so the
  // listener may call back into the pool (for example to Query it).
  virtual void OnLowWatermark() = 0;

 protected:
  // Not owned through this interface: the pool never deletes its listener.
  ~LowWatermarkListener() = default;
};

}  // namespace softdat::srq
