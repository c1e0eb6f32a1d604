#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Bazel's workspace status command (.bazelrc): the git commit the tree was built from, for
# base:build_info (datinfo -V, datperf -V, the library's log line at load). Prints "unknown"
# outside a git checkout (a source tarball) or without git; never fails, needs no network.
commit=$(git -C "$(dirname "${BASH_SOURCE[0]}")/.." rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
echo "STABLE_SOFTDAT_COMMIT ${commit:-unknown}"
