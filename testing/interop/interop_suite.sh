#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Host side of the interop suite: builds the provider library, interop_peer and iwarp-dump, then
# boots the VM (testing/vm/run.sh) and runs testing/interop/guest_interop.sh in it: softdat-tcp
# with kernel siw, softdat-verbs with OFED DAPL on rxe0 and siw0, softdat-verbs with softdat-tcp,
# and the siw CRC race (see that script and docs/WIRE.md, interop). Run by `tools/dev test`.
# Usage: testing/interop/interop_suite.sh           (INTEROP_ONLY=regex picks pairs by name)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
bazel build //dat:libsoftdat.so.2 //testing/interop:interop_peer //tools/iwarp_dump:iwarp-dump \
  //testing/consumers:handoff_relay >&2
bin=$(bazel info bazel-bin 2>/dev/null)
# The four programs, copied where the guest sees them (self-contained: no runfiles needed).
dir=$(mktemp -d /tmp/softdat-interop.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cp "$bin/dat/libsoftdat.so.2" "$bin/testing/interop/interop_peer" "$bin/tools/iwarp_dump/iwarp-dump" \
  "$bin/testing/consumers/handoff_relay" "$dir/"
export SOFTDAT_VM_SHARE="${SOFTDAT_VM_SHARE:+$SOFTDAT_VM_SHARE:}$dir"
export SOFTDAT_VM_TIMEOUT=${SOFTDAT_VM_TIMEOUT:-1800}
"$root/testing/vm/run.sh" env INTEROP_ONLY="${INTEROP_ONLY:-}" testing/interop/guest_interop.sh "$dir"
