#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Guest side of the verbs suite's peer-death case: a server EP on an SRQ of 2 buffers has taken
# 2 of 20 Sends when its client process is killed with SIGKILL (testing/vm/peer_death). The
# server must see the connection end (DISCONNECTED or BROKEN, within peer_death's bound), deliver
# no message after the two, raise EP_BROKEN, free the EP, and its SRQ must hold nothing
# outstanding. How long the end took is reported, not asserted.
# Usage (inside the VM only): guest_peer_death.sh PEER_DEATH DAT_CONF IA HOST WORK_DIR
set -uo pipefail
peer=$1 conf=$2 ia=$3 host=$4 work=$5
export DAT_OVERRIDE=$conf
port=47700
fail() { echo "FAIL: $*"; exit 1; }
timeout 200 "$peer" server "$ia" "$port" >"$work/peer-death.server.out" 2>"$work/peer-death.server.err" &
server=$!
for _ in $(seq 300); do grep -q serving "$work/peer-death.server.err" 2>/dev/null && break; sleep 0.1; done
sleep 1  # the PSP is an rdma_cm listener: nothing to poll for
# Not under timeout(1): the SIGKILL must reach the client itself. It bounds its own life (120 s).
"$peer" client "$ia" "$host" "$port" >"$work/peer-death.client.out" 2>"$work/peer-death.client.err" &
client=$!
for _ in $(seq 600); do grep -q '^received' "$work/peer-death.server.out" 2>/dev/null && break; sleep 0.1; done
grep -q '^received' "$work/peer-death.server.out" || { kill -9 $client $server 2>/dev/null; fail "the server received nothing: $(cat "$work"/peer-death.*.err)"; }
kill -9 $client
wait $client 2>/dev/null
wait $server
rc=$?
cat "$work/peer-death.server.out"
[ $rc = 0 ] || fail "the server exited $rc: $(cat "$work/peer-death.server.err")"
python3 - "$work/peer-death.server.out" <<'PY' || fail "the peer's death was not accounted"
import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert s["end"] in ("DISCONNECTED", "BROKEN"), f"no end reported: {s}"
assert s["delivered_after"] == 0, f"messages delivered after the two: {s}"
assert s["ep_broken_async"], f"no EP_BROKEN: {s}"
assert s["ep_freed"] and s["srq_outstanding"] == 0, f"the SRQ holds buffers after the EP went: {s}"
print(f"PASS: peer killed: {s['end']} {s['end_s']:.2f} s after the second receive, "
      f"{s['flushed_after']} flushed, EP_BROKEN, SRQ clean")
PY
