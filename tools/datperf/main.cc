// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datperf: a two-process DAT benchmark (server and client), perftest / ucx_perftest style.
#include <cstdio>
#include <string>
#include <vector>

#include "base/build_info.h"
#include "tools/datperf/client.h"
#include "tools/datperf/options.h"
#include "tools/datperf/report.h"
#include "tools/datperf/server.h"

int main(int argc, char** argv) {
  using namespace softdat::datperf;
  Options options;
  std::string error;
  switch (ParseOptions(argc, argv, options, error)) {
    case 0: break;
    case 3: std::fputs(Usage(), stdout); return 0;
    case 4: std::printf("datperf (softdat) %s, commit %s\n", softdat::kVersionText, softdat::kBuildCommit); return 0;
    default: std::fprintf(stderr, "datperf: %s; try --help\n", error.c_str()); return 2;
  }
  if (options.server) return RunServer(options);
  RunInfo info;
  std::vector<Row> rows;
  const int status = RunClient(options, info, rows);
  if (options.json) PrintJson(info, rows);
  else if (options.csv) PrintCsv(rows);
  else if (!rows.empty()) PrintTable(info, rows);
  if (!options.plot.empty() && !rows.empty() && !WritePlot(options.plot, info, rows, error)) {
    std::fprintf(stderr, "datperf: %s\n", error.c_str());
    return 1;
  }
  return status;
}
