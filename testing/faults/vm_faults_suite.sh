#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Host side of the guest fault suite: builds the provider, fault_peer and guest_faults_test, then
# boots the qemu guest (testing/vm/run.sh) and runs guest_faults_suite.sh in it: tc netem between
# two softdat-tcp peers, and RLIMIT_MEMLOCK too low for a verbs registration. The Bazel outputs
# run in place (their output base is shared into the guest wherever it lives).
# Usage: testing/faults/vm_faults_suite.sh [gtest arguments]   (run by tools/dev test's VM step)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
bazel build //dat:libsoftdat.so.2 //testing/faults:fault_peer //testing/faults:guest_faults_test >&2
bin=$(cd "$(bazel info bazel-bin 2>/dev/null)" && pwd -P)
base=$(cd "$(bazel info output_base 2>/dev/null)" && pwd -P)
export SOFTDAT_VM_SHARE="${SOFTDAT_VM_SHARE:+$SOFTDAT_VM_SHARE:}$base"
export SOFTDAT_VM_TIMEOUT=${SOFTDAT_VM_TIMEOUT:-1200}
exec "$root/testing/vm/run.sh" testing/faults/guest_faults_suite.sh "$bin" "$@"
