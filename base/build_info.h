// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What a build says about itself: the version (base/version.h) and the git commit it was built
// from (generated from Bazel's workspace status by //base:build_info_cc), for datinfo -V,
// datperf -V and the library's log line at load.
#pragma once

#include "base/version.h"

namespace softdat {

// The abbreviated commit hash, or "unknown" when the tree was not a git checkout.
extern const char kBuildCommit[];

}  // namespace softdat
