// The IAs the fault suites' peers open (faults_main.cc writes them into the dat.conf).
#pragma once

#include <vector>

#include "testing/dat_conf.h"

namespace softdat::testing::faults {

// softdat-tcp: loopback, defaults. softdat-tcp-nocrc: loopback without the MPA CRC.
// softdat-tcp-timeout: loopback, timeout_ms=2000.
// softdat-ns-a / softdat-ns-b: the two ends of the link flap test (10.77.0.1 and 10.77.0.2),
// timeout_ms=3000.
inline const std::vector<DatConfLine>& FaultIas() {
  static const std::vector<DatConfLine> lines = {
      {"softdat-tcp", "tcp 127.0.0.1"},
      {"softdat-tcp-nocrc", "tcp 127.0.0.1 crc=off"},
      {"softdat-tcp-timeout", "tcp 127.0.0.1 timeout_ms=2000"},
      {"softdat-ns-a", "tcp 10.77.0.1 timeout_ms=3000"},
      {"softdat-ns-b", "tcp 10.77.0.2 timeout_ms=3000"},
  };
  return lines;
}

}  // namespace softdat::testing::faults
