// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What datperf measured, one row per (test, size), and the ways it is shown: a table, one JSON
// document, CSV, and an SVG plot of latency and bandwidth against size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/datperf/options.h"

namespace softdat::datperf {

struct Row {
  std::string test;
  std::uint64_t size = 0;
  double lat_us_p50 = 0;  // half round trip (lat only)
  double lat_us_p99 = 0;
  double lat_us_avg = 0;
  double bw_MBps = 0;     // 10^6 bytes per second of payload
  double msg_rate_Mps = 0;
  std::uint64_t iters = 0;
  std::uint32_t clients = 1;
  std::uint32_t window = 1;
  double seconds = 0;
  std::uint64_t bad_bytes = 0;
};

struct RunInfo {
  std::string ia_name;
  std::string provider;
  std::string reap;
  bool srq = false;
  bool one_buffer = false;
};

void PrintTable(const RunInfo& info, const std::vector<Row>& rows);
void PrintJson(const RunInfo& info, const std::vector<Row>& rows);
void PrintCsv(const std::vector<Row>& rows);
// Writes the SVG; false with `error` when the file cannot be written.
bool WritePlot(const std::string& path, const RunInfo& info, const std::vector<Row>& rows, std::string& error);

// "8 B", "4 KiB", "1 MiB".
std::string SizeText(std::uint64_t size);

}  // namespace softdat::datperf
