// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The dat.conf a DAT consumer reads (DAT_OVERRIDE, else /etc/dat.conf), read the way libdat2 reads
// it: one IA a line, eight whitespace-separated fields, a double-quoted field may hold spaces, '#'
// starts a comment. For datinfo -l, which shows the library and params each IA name stands for.
#pragma once

#include <string>
#include <vector>

namespace softdat::tools {

struct DatConfEntry {
  int line = 0;                  // 1-based line number in the file
  std::string ia_name;
  std::string api_version;       // e.g. u2.0
  std::string thread_safety;     // threadsafe or nonthreadsafe
  std::string default_section;   // default or nondefault
  std::string library;           // a path or a soname
  std::string provider_version;  // e.g. softdat.2.0
  std::string ia_params;
  std::string platform_params;
};

// The file libdat2 reads: $DAT_OVERRIDE when set and not empty, else /etc/dat.conf.
std::string DatConfPath();

// Reads `path`. False (with `error` saying why) when the file cannot be read; lines that are not
// eight fields are skipped, as libdat2 skips them.
bool ReadDatConf(const std::string& path, std::vector<DatConfEntry>& entries, std::string& error);

// Splits one line into fields: whitespace separates, double quotes group (and are dropped), '#'
// outside quotes ends the line.
std::vector<std::string> SplitDatConfLine(const std::string& line);

}  // namespace softdat::tools
