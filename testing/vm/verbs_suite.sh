#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Host side of the verbs suite: builds the provider library and the conformance suite, then boots the
# VM (testing/vm/run.sh) and runs testing/vm/guest_verbs_suite.sh in it, which tests softdat-verbs
# on rxe0 and siw0 with the conformance suite and the stock dtest, dtestsrq and dapltest. The guest
# runs the Bazel outputs in place (shared into the guest where its tmpfs would hide them).
# Usage: testing/vm/verbs_suite.sh [device...]     (default: rxe0 siw0)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
bazel build //dat:libsoftdat.so.2 //testing/conformance:all //transport/verbs:verbs_transport_test //testing/consumers:handoff_relay \
  //testing/scale:scale_peer //testing/vm:peer_death >&2
bin=$(bazel info bazel-bin 2>/dev/null)
bin=$(cd "$bin" && pwd -P)
# Bazel outputs under /tmp or /run are hidden by the guest's tmpfs there: share the whole output
# base (bazel-bin's runfiles point into it).
base=$(cd "$(bazel info output_base 2>/dev/null)" && pwd -P)
export SOFTDAT_VM_SHARE="${SOFTDAT_VM_SHARE:+$SOFTDAT_VM_SHARE:}$base"
# TCG is slow: each device's part takes minutes.
export SOFTDAT_VM_TIMEOUT=${SOFTDAT_VM_TIMEOUT:-1800}
exec "$root/testing/vm/run.sh" testing/vm/guest_verbs_suite.sh "$bin" "$@"
