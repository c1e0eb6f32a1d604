// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat.conf generation for tests.
#include "testing/dat_conf.h"

#include <climits>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace softdat::testing {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) throw std::runtime_error(std::string(name) + " is not set: run under bazel test");
  return value;
}

}  // namespace

std::string RunfilePath(const std::string& workspace_relative) {
  const std::string relative = Env("TEST_SRCDIR") + "/softdat/" + workspace_relative;
  char resolved[PATH_MAX];
  if (realpath(relative.c_str(), resolved) == nullptr)
    throw std::runtime_error("not in this test's runfiles: " + relative);
  return resolved;
}

std::string TestTmpPath(const std::string& file_name) { return Env("TEST_TMPDIR") + "/" + file_name; }

std::string ProviderLibraryPath() { return RunfilePath("dat/libsoftdat.so.2"); }

std::string DatConfText(const DatConfLine& line, const std::string& library_path) {
  return line.ia_name + " u2.0 nonthreadsafe default " + library_path + " softdat.2.0 \"" +
         line.ia_params + "\" \"\"\n";
}

std::string InstallDatConf(const std::vector<DatConfLine>& lines, const std::string& file_name) {
  const std::string path = TestTmpPath(file_name);
  const std::string library = ProviderLibraryPath();
  std::ofstream out(path, std::ios::trunc);
  for (const DatConfLine& line : lines) out << DatConfText(line, library);
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
  setenv("DAT_OVERRIDE", path.c_str(), 1);
  return path;
}

}  // namespace softdat::testing

namespace softdat::testing {

const std::vector<DatConfLine>& StandardDatConfLines() {
  static const std::vector<DatConfLine> lines = {
      {"softdat-tcp", "tcp 127.0.0.1"},
      {"softdat-lo", "tcp lo"},
      {"softdat-options", "tcp lo progress=poll crc=off rnr_timeout_ms=250 spin_us=7 timeout_ms=900 congestion=reno"},
      {"softdat-elsewhere", "tcp 203.0.113.254"},  // TEST-NET-3: not an address of this host
      {"softdat-noword", "tcp"},
      {"softdat-nosuchif", "tcp nosuchif0"},
      {"softdat-badkind", "udp 127.0.0.1"},
      {"softdat-badport", "verbs rxe0 zero"},
      {"softdat-verbs", "verbs rxe0 1"},
  };
  return lines;
}

}  // namespace softdat::testing
