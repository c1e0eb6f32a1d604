// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The IAs the fault suites' peers open: faults_main.cc writes FaultIas() into the dat.conf every
// peer inherits (DAT_OVERRIDE); a test whose peers need their own address (a network namespace)
// writes a file of its own with SideDatConf and hands it to each peer.
#pragma once

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "testing/dat_conf.h"

namespace softdat::testing::faults {

// softdat-tcp: loopback, defaults. softdat-tcp-nocrc: loopback without the MPA CRC.
inline const std::vector<DatConfLine>& FaultIas() {
  static const std::vector<DatConfLine> lines = {
      {"softdat-tcp", "tcp 127.0.0.1"},
      {"softdat-tcp-nocrc", "tcp 127.0.0.1 crc=off"},
  };
  return lines;
}

// Writes $TEST_TMPDIR/<file> with one IA, "softdat-ns", of these params; returns its path.
inline std::string SideDatConf(const std::string& file, const std::string& ia_params) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + file;
  std::ofstream out(path, std::ios::trunc);
  out << DatConfText({"softdat-ns", ia_params}, ProviderLibraryPath());
  return path;
}

}  // namespace softdat::testing::faults
