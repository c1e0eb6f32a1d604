// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Connecting two endpoints through the public DAT API, the way every softdat tool and the
// conformance suite do it: a PSP on the server's IA (a free connection qualifier), dat_ep_connect,
// the connection request accepted, and both ESTABLISHED events. Under progress=poll an IA moves
// only inside waits on its own EVDs, so each wait can pump the other side's IA.
#pragma once

#include <dat2/udat.h>

#include <string>

namespace softdat::tools {

// "what failed: <DAT major> <DAT minor>" for a DAT_RETURN.
std::string DatError(const char* what, DAT_RETURN status);

// dat_evd_wait for one event, bounded by `timeout_us`; with a `pump` EVD, waits in 1 ms slices and
// moves pump's IA between them (a zero-timeout wait on an EVD whose events the caller does not
// need). Returns dat_evd_wait's DAT_RETURN.
DAT_RETURN WaitEvent(DAT_EVD_HANDLE evd, DAT_EVENT& event, DAT_TIMEOUT timeout_us,
                     DAT_EVD_HANDLE pump = DAT_HANDLE_NULL);

// Both ends of one connection to be made. The client EP may live on another IA than the server's.
struct ConnectEnds {
  DAT_IA_HANDLE server_ia = DAT_HANDLE_NULL;
  DAT_EP_HANDLE server_ep = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE server_connect_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE cr_evd = DAT_HANDLE_NULL;  // a CR EVD of the server's IA
  DAT_EP_HANDLE client_ep = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE client_connect_evd = DAT_HANDLE_NULL;
  // EVDs whose events the caller does not need, one per IA, pumped while the other side is
  // waited on (progress=poll with two IAs); null when both ends share one IA.
  DAT_EVD_HANDLE client_pump = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE server_pump = DAT_HANDLE_NULL;
  const void* private_data = nullptr;  // sent with the request
  DAT_COUNT private_data_size = 0;
};

// Connects the two ends, each wait bounded by `timeout_us`; `port`, if given, gets the connection
// qualifier used. On failure returns false with `error` saying which step failed and how; the
// PSP is freed either way.
bool ConnectPair(const ConnectEnds& ends, DAT_TIMEOUT timeout_us, std::string& error,
                 DAT_CONN_QUAL* port = nullptr);

}  // namespace softdat::tools
