// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// main() of the fault suites: writes the dat.conf the peer processes load (they inherit
// DAT_OVERRIDE), then runs the tests. The test processes themselves never open an IA.
#include <gtest/gtest.h>

#include "testing/dat_conf.h"
#include "testing/faults/fault_ias.h"

int main(int argc, char** argv) {
  softdat::testing::InstallDatConf(softdat::testing::faults::FaultIas());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
