// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Building DAT DTO and connection events, and the one mapping from a transport's WorkStatus to a
// DAT_DTO_COMPLETION_STATUS.
#pragma once

#include <dat2/udat.h>

#include <cstring>

#include "transport/work.h"

namespace softdat::core {

inline DAT_DTO_COMPLETION_STATUS ToDtoStatus(transport::WorkStatus status) {
  using transport::WorkStatus;
  switch (status) {
    case WorkStatus::kSuccess: return DAT_DTO_SUCCESS;
    case WorkStatus::kFlushed: return DAT_DTO_ERR_FLUSHED;
    case WorkStatus::kLocalLength: return DAT_DTO_ERR_LOCAL_LENGTH;
    case WorkStatus::kLocalProtection: return DAT_DTO_ERR_LOCAL_PROTECTION;
    case WorkStatus::kRemoteAccess: return DAT_DTO_ERR_REMOTE_ACCESS;
    case WorkStatus::kRemoteResponder: return DAT_DTO_ERR_REMOTE_RESPONDER;
    case WorkStatus::kBadResponse: return DAT_DTO_ERR_BAD_RESPONSE;
    case WorkStatus::kTransport: return DAT_DTO_ERR_TRANSPORT;
    case WorkStatus::kReceiverNotReady: return DAT_DTO_ERR_RECEIVER_NOT_READY;
  }
  return DAT_DTO_ERR_TRANSPORT;
}

// Every byte of `event` zero, with vector stores. `DAT_EVENT{}` and memset are `rep stosq` under
// GCC's generic tuning (120 bytes), whose stores cannot be forwarded: the copy of the event into
// the EVD's ring right after waited for them to retire, with the instruction's own start-up most
// of DeliverRequests' samples in the busy same-host message rate (perf). A copy from a zero
// object of known size is inlined as plain stores.
inline void ZeroEvent(DAT_EVENT& event) {
  static constexpr DAT_EVENT kZero{};
  std::memcpy(&event, &kZero, sizeof event);
}

// A DTO completion event, built in place (no temporary copied out).
inline void FillDtoEvent(DAT_EVENT& event, DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, DAT_DTO_COOKIE cookie,
                         DAT_DTO_COMPLETION_STATUS status, DAT_SEG_LENGTH length, DAT_DTOS operation,
                         DAT_RMR_CONTEXT rmr_context = 0) {
  ZeroEvent(event);
  event.event_number = DAT_DTO_COMPLETION_EVENT;
  event.evd_handle = evd;
  DAT_DTO_COMPLETION_EVENT_DATA& data = event.event_data.dto_completion_event_data;
  data.ep_handle = ep;
  data.user_cookie = cookie;
  data.status = status;
  data.transfered_length = length;
  data.operation = operation;
  data.rmr_context = rmr_context;
}

inline DAT_EVENT ConnectionEvent(DAT_EVENT_NUMBER number, DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep,
                                 const void* private_data, DAT_COUNT private_data_size) {
  DAT_EVENT event{};
  event.event_number = number;
  event.evd_handle = evd;
  DAT_CONNECTION_EVENT_DATA& data = event.event_data.connect_event_data;
  data.ep_handle = ep;
  data.private_data_size = private_data_size;
  data.private_data = private_data_size > 0 ? const_cast<void*>(private_data) : nullptr;
  return event;
}

}  // namespace softdat::core
