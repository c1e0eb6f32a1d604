// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datperf's server: accepts clients on one PSP and does its side of each test for every
// connection at once (echo for lat, receive and count for bw/rate, a target or source region for
// write/read), reaping the way each client asks. Runs until killed, or with --once until the
// first client session is over.
#pragma once

#include "tools/datperf/options.h"

namespace softdat::datperf {

// Returns the exit status (0, or 1 with a line on stderr when a DAT call failed).
int RunServer(const Options& options);

}  // namespace softdat::datperf
