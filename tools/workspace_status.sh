#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Bazel's workspace status command (.bazelrc): the git commit the tree was built from, for
# base:build_info (datinfo -V, datperf -V, the library's log line at load). Prints "unknown" when
# the tree is no git checkout of its own (a source tarball, even one unpacked inside some other
# repository) or git is missing; never fails, needs no network.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
commit=unknown
if top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null) && [[ $(cd "$top" && pwd -P) == "$root" ]]; then
  commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
fi
echo "STABLE_SOFTDAT_COMMIT ${commit:-unknown}"
