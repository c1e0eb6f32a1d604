// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test helper: a dat.conf naming the softdat library built by this workspace, written into the
// test's temporary directory, with DAT_OVERRIDE pointed at it, so that tests reach softdat through
// the stock libdat2 registry exactly as any consumer does.
#pragma once

#include <string>
#include <vector>

namespace softdat::testing {

struct DatConfLine {
  std::string ia_name;    // e.g. "softdat-tcp"
  std::string ia_params;  // e.g. "tcp 127.0.0.1"
};

// Absolute path of a file of this workspace in this test's runfiles (a `data` dependency), e.g.
// "testing/consumers/handoff_relay"; throws when it is not there.
std::string RunfilePath(const std::string& workspace_relative);

// $TEST_TMPDIR/<file_name>: a file of this test's own temporary directory; throws outside bazel test.
std::string TestTmpPath(const std::string& file_name);

// Absolute path of //dat:libsoftdat.so.2 in this test's runfiles.
std::string ProviderLibraryPath();

// The dat.conf line for one IA, as tools/dev conf prints it.
std::string DatConfText(const DatConfLine& line, const std::string& library_path);

// Writes the lines to $TEST_TMPDIR/<file_name>, sets DAT_OVERRIDE to it, and returns the path.
// Call before the first dat_ia_open of the process.
std::string InstallDatConf(const std::vector<DatConfLine>& lines,
                           const std::string& file_name = "dat.conf");

}  // namespace softdat::testing

namespace softdat::testing {

// The IA names every registry-based test may open: one per transport and a few deliberately
// malformed entries. testing/registry_main.cc installs them.
const std::vector<DatConfLine>& StandardDatConfLines();

}  // namespace softdat::testing
