// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Per-Work-kind facts an EP's posting path looks up rather than branches on: which use a
// request makes of its local memory, and which DAT IB counters (DCNT_EP_POST_*) it bumps. A kind
// without a data counter (the atomics: OFED counts only the operation) bumps the sink slot past
// the reported ones.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/counters.h"
#include "core/local_iov.h"
#include "transport/work.h"

namespace softdat::core {

// The EP's counters: the DCNT_EP_* ones and one sink (never reported).
inline constexpr std::size_t kEpCounterSink = DCNT_EP_ALL_COUNTERS;

inline constexpr std::size_t kWorkKinds = static_cast<std::size_t>(transport::WorkKind::kSendDatagram) + 1;

// By transport::WorkKind.
inline constexpr std::array<LocalUse, kWorkKinds> kLocalUseOf = {
    LocalUse::kTransmit,  // kSend
    LocalUse::kTransmit,  // kRdmaWrite
    LocalUse::kReceive,   // kRdmaRead
    LocalUse::kTransmit,  // kRdmaWriteImmediate
    LocalUse::kReceive,   // kFetchAdd: the original value lands here
    LocalUse::kReceive,   // kCompareSwap
    LocalUse::kTransmit,  // kSendDatagram
};

struct PostCounters {
  std::size_t operations;
  std::size_t bytes;
};
inline constexpr std::array<PostCounters, kWorkKinds> kPostCountersOf = {{
    {DCNT_EP_POST_SEND, DCNT_EP_POST_SEND_DATA},
    {DCNT_EP_POST_WRITE, DCNT_EP_POST_WRITE_DATA},
    {DCNT_EP_POST_READ, DCNT_EP_POST_READ_DATA},
    {DCNT_EP_POST_WRITE_IMM, DCNT_EP_POST_WRITE_IMM_DATA},
    {DCNT_EP_POST_FETCH_ADD, kEpCounterSink},
    {DCNT_EP_POST_CMP_SWAP, kEpCounterSink},
    {DCNT_EP_POST_SEND_UD, DCNT_EP_POST_SEND_UD_DATA},
}};

template <class Counters>
void CountPost(Counters& counters, transport::WorkKind kind, std::uint64_t length) {
  const PostCounters& which = kPostCountersOf[static_cast<std::size_t>(kind)];
  counters.Add(which.operations);
  counters.Add(which.bytes, length);
}

template <class Counters>
void CountPostRecv(Counters& counters, std::uint64_t length) {
  counters.Add(DCNT_EP_POST_RECV);
  counters.Add(DCNT_EP_POST_RECV_DATA, length);
}

// A successful receive completion, by the operation it reports.
template <class Counters>
void CountReceive(Counters& counters, const DAT_DTO_COMPLETION_EVENT_DATA& dto) {
  std::size_t operations = DCNT_EP_RECV;
  std::size_t bytes = DCNT_EP_RECV_DATA;
  switch (static_cast<int>(dto.operation)) {
    case DAT_IB_DTO_RECV_IMMED: operations = DCNT_EP_RECV_RDMA_IMM, bytes = DCNT_EP_RECV_RDMA_IMM_DATA; break;
    case DAT_IB_DTO_RECV_UD: operations = DCNT_EP_RECV_UD, bytes = DCNT_EP_RECV_UD_DATA; break;
    default: break;
  }
  counters.Add(operations);
  counters.Add(bytes, dto.transfered_length);
}

// A request that failed, as the IA's diagnostic counters see it (rare: a shared add).
template <class Counters>
void CountRequestError(Counters& counters, DAT_DTO_COMPLETION_STATUS status) {
  switch (status) {
    case DAT_DTO_ERR_REMOTE_ACCESS: counters.AddShared(DCNT_IA_DIAG_ERR_SQ_RAE); break;
    case DAT_DTO_ERR_RECEIVER_NOT_READY: counters.AddShared(DCNT_IA_DIAG_ERR_SQ_RREE); break;
    case DAT_DTO_ERR_REMOTE_RESPONDER: counters.AddShared(DCNT_IA_DIAG_ERR_SQ_RIRE); break;
    case DAT_DTO_ERR_TRANSPORT: counters.AddShared(DCNT_IA_DIAG_ERR_SQ_TREE); break;
    default: break;  // flushed, local errors
  }
}

}  // namespace softdat::core
