#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The soak on demand (testing/soak/soak_test.cc): `testing/soak/soak.sh [seconds]`, 600 (ten
# minutes) unless told; extra arguments go to bazel (e.g. --config=asan). Prints the figures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
seconds=${1:-600}
shift || true
bazel test //testing/soak:soak_test --test_env=SOFTDAT_SOAK_SECONDS="$seconds" \
  --test_timeout=$((seconds + 300)) --nocache_test_results --test_output=errors "$@"
grep '^figure' "$(bazel info bazel-testlogs "$@" 2>/dev/null)/testing/soak/soak_test/test.log"
