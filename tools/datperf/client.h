// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datperf's client: for each size, opens --clients connections to the server (the test's
// parameters in the connection's private data), runs the test and measures it, then disconnects.
#pragma once

#include <vector>

#include "tools/datperf/options.h"
#include "tools/datperf/report.h"

namespace softdat::datperf {

// Runs every size; fills `rows` and `info`. Returns the exit status (1 with a line on stderr when
// a DAT call failed or data did not verify).
int RunClient(const Options& options, RunInfo& info, std::vector<Row>& rows);

}  // namespace softdat::datperf
