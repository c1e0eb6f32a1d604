#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs transport/verbs's test on the VM's real devices: builds it on the host (own Bazel output
# base, since the lead uses the default one), copies the binary into a work dir the guest shares,
# and runs it in one guest boot against rxe0 (RoCE v2) and then siw0 (iWARP). Outside the VM the
# same test skips for want of a device. Run from the repo root; exit status 0 when both pass.
#   SOFTDAT_VERBS_OUTPUT_BASE  Bazel output base (default /tmp/bzl-verbs)
#   SOFTDAT_VM_WORK            work dir shared with the guest (default a fresh /tmp/softdat-vm-work-verbs.*)
#   Extra arguments go to the test binary (e.g. --gtest_filter=*Srq*).
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${SOFTDAT_VERBS_OUTPUT_BASE:-/tmp/bzl-verbs}
bazel --output_base="$BASE" build --symlink_prefix=/ //transport/verbs:verbs_transport_test
BIN=$(bazel --output_base="$BASE" info --symlink_prefix=/ bazel-bin 2>/dev/null)/transport/verbs/verbs_transport_test
export SOFTDAT_VM_WORK=${SOFTDAT_VM_WORK:-$(mktemp -d /tmp/softdat-vm-work-verbs.XXXXXX)}
mkdir -p "$SOFTDAT_VM_WORK"
cp "$BIN" "$SOFTDAT_VM_WORK/verbs_transport_test"
ARGS=""; [ $# -eq 0 ] || ARGS=$(printf '%q ' "$@")
# Both devices in one boot (a boot costs about 12 s under TCG); each run's status is kept.
testing/vm/run.sh bash -c "
  rc=0
  for dev in 'rxe0 1' 'siw0 1'; do
    echo \"=== verbs_transport_test on \$dev\"
    SOFTDAT_VERBS_DEVICE=\"\$dev\" \"\$SOFTDAT_VM_WORK/verbs_transport_test\" $ARGS || rc=1
  done
  exit \$rc"
