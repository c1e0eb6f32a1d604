// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ConnectPair and its bounded, pumping waits.
#include "tools/dat_connect.h"

namespace softdat::tools {
namespace {

bool WaitFor(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER expected, DAT_TIMEOUT timeout_us, DAT_EVD_HANDLE pump,
             DAT_EVENT& event, const char* what, std::string& error) {
  const DAT_RETURN status = WaitEvent(evd, event, timeout_us, pump);
  if (status != DAT_SUCCESS) {
    error = DatError(what, status);
    return false;
  }
  if (event.event_number != expected) {
    error = std::string(what) + ": unexpected event 0x" + std::to_string(event.event_number);
    return false;
  }
  return true;
}

}  // namespace

std::string DatError(const char* what, DAT_RETURN status) {
  const char* major = "?";
  const char* minor = "?";
  dat_strerror(status, &major, &minor);
  return std::string(what) + ": " + major + " " + minor;
}

DAT_RETURN WaitEvent(DAT_EVD_HANDLE evd, DAT_EVENT& event, DAT_TIMEOUT timeout_us, DAT_EVD_HANDLE pump) {
  DAT_COUNT more = 0;
  if (pump == DAT_HANDLE_NULL) return dat_evd_wait(evd, timeout_us, 1, &event, &more);
  constexpr DAT_TIMEOUT kSliceUs = 1000;
  for (DAT_TIMEOUT waited = 0;; waited += kSliceUs) {
    const DAT_RETURN result = dat_evd_wait(evd, kSliceUs, 1, &event, &more);
    if (DAT_GET_TYPE(result) != DAT_TIMEOUT_EXPIRED || waited >= timeout_us) return result;
    DAT_EVENT ignored{};
    DAT_COUNT ignored_more = 0;
    (void)dat_evd_wait(pump, 0, 1, &ignored, &ignored_more);
  }
}

bool ConnectPair(const ConnectEnds& ends, DAT_TIMEOUT timeout_us, std::string& error, DAT_CONN_QUAL* port_out) {
  DAT_IA_ATTR ia_attr;
  DAT_RETURN status = dat_ia_query(ends.server_ia, nullptr, DAT_IA_FIELD_IA_ADDRESS_PTR, &ia_attr, 0, nullptr);
  if (status != DAT_SUCCESS) {
    error = DatError("dat_ia_query", status);
    return false;
  }
  DAT_CONN_QUAL port = 0;
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  status = dat_psp_create_any(ends.server_ia, &port, ends.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp);
  if (status != DAT_SUCCESS) {
    error = DatError("dat_psp_create_any", status);
    return false;
  }
  if (port_out != nullptr) *port_out = port;
  bool ok = false;
  DAT_EVENT event{};
  status = dat_ep_connect(ends.client_ep, ia_attr.ia_address_ptr, port, timeout_us, ends.private_data_size,
                          const_cast<void*>(ends.private_data), DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
  if (status != DAT_SUCCESS) {
    error = DatError("dat_ep_connect", status);
  } else if (WaitFor(ends.cr_evd, DAT_CONNECTION_REQUEST_EVENT, timeout_us, ends.client_pump, event,
                     "waiting for the connection request", error)) {
    status = dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, ends.server_ep, 0, nullptr);
    if (status != DAT_SUCCESS) {
      error = DatError("dat_cr_accept", status);
    } else {
      ok = WaitFor(ends.server_connect_evd, DAT_CONNECTION_EVENT_ESTABLISHED, timeout_us, ends.client_pump, event,
                   "waiting for the server's ESTABLISHED", error) &&
           WaitFor(ends.client_connect_evd, DAT_CONNECTION_EVENT_ESTABLISHED, timeout_us, ends.server_pump, event,
                   "waiting for the client's ESTABLISHED", error);
    }
  }
  (void)dat_psp_free(psp);
  return ok;
}

}  // namespace softdat::tools
