// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Reading dat.conf for datinfo (see dat_conf_file.h).
#include "tools/dat_conf_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace softdat::tools {

std::string DatConfPath() {
  const char* override_path = std::getenv("DAT_OVERRIDE");
  return override_path != nullptr && *override_path != '\0' ? override_path : "/etc/dat.conf";
}

std::vector<std::string> SplitDatConfLine(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool in_field = false, quoted = false;
  for (const char c : line) {
    if (quoted) {
      if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = in_field = true;
    } else if (c == '#') {
      break;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (in_field) fields.push_back(field), field.clear(), in_field = false;
    } else {
      field += c;
      in_field = true;
    }
  }
  if (in_field) fields.push_back(field);
  return fields;
}

bool ReadDatConf(const std::string& path, std::vector<DatConfEntry>& entries, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::vector<std::string> f = SplitDatConfLine(line);
    if (f.size() != 8) continue;
    entries.push_back({number, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]});
  }
  return true;
}

}  // namespace softdat::tools
