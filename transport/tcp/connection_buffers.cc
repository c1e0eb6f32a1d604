// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ConnectionBuffers: each pool sized for what its users take.
#include "transport/tcp/connection_buffers.h"

#include "transport/tcp/inline_ring.h"
#include "transport/tcp/rx_stream.h"
#include "transport/tcp/tx_batch.h"

namespace softdat::transport::tcp {

ConnectionBuffers::ConnectionBuffers()
    : rx(RxStream::kBlockSize),
      rx_held(kHeldBlock),
      frames(TxBatch::kFrameBlock),
      staging(TxBatch::kStagingSize),
      inline_copy(InlineRing::kBlockSize) {}

}  // namespace softdat::transport::tcp
