// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The asynchronous events core raises on an IA's async EVD, built in one place.
//
// DAT defines reasons for SRQ- and EP-affiliated watermark notifications
// (DAT_SRQ_LOW_WATERMARK_EVENT, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT) but no event number for them.
// softdat delivers both as kWatermarkEventNumber with the reason in asynch_error_event_data and
// the SRQ or EP in dat_handle. Not DAT_ASYNC_ERROR_EP_BROKEN: stock consumers (dtestsrq) take that
// as "this EP is finished", and a watermark crossing is not.
#pragma once

#include <dat2/udat.h>

namespace softdat::core {

inline constexpr DAT_EVENT_NUMBER kWatermarkEventNumber = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;

inline DAT_EVENT AsyncEvent(DAT_EVENT_NUMBER number, DAT_EVD_HANDLE async_evd, DAT_HANDLE object,
                            DAT_COUNT reason) {
  DAT_EVENT event{};
  event.event_number = number;
  event.evd_handle = async_evd;
  event.event_data.asynch_error_event_data.dat_handle = object;
  event.event_data.asynch_error_event_data.reason = reason;
  return event;
}

}  // namespace softdat::core
