#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Guest check for testing/vm/run.sh: the verbs transport's tests assume rxe0 (RoCE) and siw0 (iWARP)
# exist with an active port, so prove that first, through the same user-space tools a person would
# use (rdma link, ibv_devices, ibv_devinfo). Exits non-zero, saying which check failed, otherwise.
# Usage (host): testing/vm/run.sh testing/vm/probe_devices.sh
set -uo pipefail

fails=0
check() {  # check DESCRIPTION COMMAND...: run COMMAND, count a failure if it fails
  local what=$1; shift
  if "$@"; then echo "PASS $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

if [ "${SOFTDAT_VM:-}" != 1 ]; then
  echo "probe_devices.sh: not inside the softdat VM; run it with testing/vm/run.sh" >&2
  exit 2
fi

links=$(timeout 30 rdma link show 2>&1); echo "$links"
devices=$(timeout 30 ibv_devices 2>&1); echo "$devices"
for dev in rxe0 siw0; do
  check "rdma link shows $dev ACTIVE" grep -Eq "^link $dev/1 state ACTIVE " <<<"$links"
  check "ibv_devices lists $dev" grep -Eq "^[[:space:]]+$dev[[:space:]]" <<<"$devices"
  info=$(timeout 30 ibv_devinfo -d "$dev" 2>&1); rc=$?; echo "$info"
  check "ibv_devinfo -d $dev succeeds" test "$rc" = 0
  check "ibv_devinfo -d $dev port is PORT_ACTIVE" grep -Eq "state:[[:space:]]+PORT_ACTIVE" <<<"$info"
done
check "rxe0 is RoCE (InfiniBand transport, Ethernet link)" \
  grep -Eq "link_layer:[[:space:]]+Ethernet" <<<"$(ibv_devinfo -d rxe0 2>&1)"
check "siw0 is iWARP" grep -Eq "transport:[[:space:]]+iWARP" <<<"$(ibv_devinfo -d siw0 2>&1)"
check "RLIMIT_MEMLOCK is unlimited (siw enforces it even for root)" test "$(ulimit -l)" = unlimited

if [ $fails -ne 0 ]; then echo "probe_devices: $fails check(s) failed"; exit 1; fi
echo "probe_devices: all checks passed"
