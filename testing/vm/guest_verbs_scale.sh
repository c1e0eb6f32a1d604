#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Guest side of the verbs scale case (run by guest_verbs_suite.sh): N connections into one server
# whose EPs share one SRQ and one receive EVD, over softdat-verbs on DEVICE through the stock
# registry (testing/scale/scale_peer), for a small N and for N = 1,000. Every message must arrive
# intact, and what the server's completion queues hold (its CQ entries, as the kernel lists them)
# must not grow with N: the EPs share their EVDs' CQs. The figures (CQ entries, pinned memory, an
# empty dat_evd_dequeue's cost, setup time) go to stdout as JSON lines; timing is reported, never
# asserted.
# Usage (inside the VM only): guest_verbs_scale.sh SCALE_PEER DAT_CONF IA HOST WORK_DIR
set -uo pipefail
peer=$1 conf=$2 ia=$3 host=$4 work=$5
export DAT_OVERRIDE=$conf
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run N: one server/client pair; the server's JSON line in $work/scale-N.json
  local n=$1 port=$((47600 + $1 % 100))
  # One receive EVD length for every N: the SRQ's 256 buffers bound what completes unreaped.
  timeout 600 "$peer" server "$ia" "$port" "$n" 2048 >"$work/scale-$n.json" 2>"$work/scale-$n.server.err" &
  local server=$!
  for _ in $(seq 300); do grep -q serving "$work/scale-$n.server.err" 2>/dev/null && break; sleep 0.1; done
  sleep 1  # the PSP is an rdma_cm listener: nothing to poll for
  timeout 600 "$peer" client "$ia" "$host" "$port" "$n" >"$work/scale-$n.client.json" 2>"$work/scale-$n.client.err"
  local client_rc=$? server_rc=0
  wait "$server" || server_rc=$?
  cat "$work/scale-$n.json" "$work/scale-$n.client.json"
  [ $client_rc = 0 ] && [ $server_rc = 0 ] ||
    fail "N=$n: client exited $client_rc ($(tail -3 "$work/scale-$n.client.err")), server exited $server_rc ($(tail -3 "$work/scale-$n.server.err"))"
}
run 10
run 1000
python3 - "$work/scale-10.json" "$work/scale-1000.json" <<'PY' || fail "figures out of bounds"
import json, sys
small, large = (json.loads(open(f).read()) for f in sys.argv[1:3])
for s in (small, large):
    assert s["bad_messages"] == 0 and s["last_connection_received"], s
    assert s["srq_available_after"] == s["srq_buffers"], s
    assert s["cq_entries"] > 0, f"no CQ of this process listed (rdma resource show cq): {s}"
# The EPs share their EVDs' CQs: 1,000 EPs on one SRQ hold what 10 do.
assert large["cq_entries"] == small["cq_entries"], f"CQ entries grow with the EPs: {small['cq_entries']} -> {large['cq_entries']}"
print(f"PASS: 1000 EPs on one SRQ: {large['cq_entries']} CQ entries (10 EPs: {small['cq_entries']}), "
      f"pinned {large['pinned_kib']} KiB (10 EPs: {small['pinned_kib']} KiB), empty dequeue "
      f"{large['empty_dequeue_ns']:.0f} ns (10 EPs: {small['empty_dequeue_ns']:.0f} ns), setup {large['setup_s']:.1f} s")
PY
