// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// main() for tests that reach softdat through the stock libdat2 registry. libdat2 reads
// DAT_OVERRIDE when it is loaded, before any test code runs, so this main writes the dat.conf,
// points DAT_OVERRIDE at it and re-executes the test binary once; the second run finds the
// variable set and runs the tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "testing/dat_conf.h"

int main(int argc, char** argv) {
  constexpr const char* kMarker = "SOFTDAT_TEST_DAT_CONF_INSTALLED";
  if (std::getenv(kMarker) == nullptr) {
    softdat::testing::InstallDatConf(softdat::testing::StandardDatConfLines());
    setenv(kMarker, "1", 1);
    execv("/proc/self/exe", argv);
    std::perror("registry_main: re-exec failed");
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
