// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// main() of the conformance tests: installs a dat.conf with softdat-tcp, a variant whose
// connections break when a message waits too long for a receive buffer (rnr_timeout_ms), and the
// VM's verbs devices (the suite runs over $SOFTDAT_CONFORMANCE_IA, default softdat-tcp), then
// re-executes itself so libdat2 reads it at load time (see testing/registry_main.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "testing/dat_conf.h"

int main(int argc, char** argv) {
  constexpr const char* kMarker = "SOFTDAT_CONFORMANCE_DAT_CONF_INSTALLED";
  if (std::getenv(kMarker) == nullptr) {
    softdat::testing::InstallDatConf({
        {"softdat-tcp", "tcp 127.0.0.1"},
        {"softdat-tcp-rnr", "tcp 127.0.0.1 rnr_timeout_ms=100"},
        // Always over TCP, whatever SOFTDAT_SHM says: beside the suite's IA in the _shm variants,
        // one connection over each path.
        {"softdat-tcp-noshm", "tcp 127.0.0.1 shm=off"},
        // The VM's devices (testing/vm): chosen with SOFTDAT_CONFORMANCE_IA.
        {"softdat-verbs-rxe0", "verbs rxe0 1"},
        {"softdat-verbs-siw0", "verbs siw0 1"},
    });
    setenv(kMarker, "1", 1);
    execv("/proc/self/exe", argv);
    std::perror("conformance main: re-exec failed");
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
