#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# 10,000 connections from one client process into one server process whose EPs share one SRQ of
# 256 buffers, over softdat-tcp on loopback, in a private network namespace: every connection is
# accepted, 8 messages on each (the 10,000th connection's last) arrive intact, an idle connection
# costs the server at most 16 KiB of memory and one descriptor (over the same-host path,
# SOFTDAT_SHM=auto: 16 KiB beyond the resident part of the rings it shares with its peer, which
# stays within the rings' size), and the memory the burst of
# messages took (connections waiting for SRQ buffers, each with a receive block) goes back once
# it is over. The figures go to stdout as JSON lines
# (docs/RELIABILITY.md quotes them); timing is reported, never asserted.
set -euo pipefail
if [[ -z ${SCALE_TEST_NETNS:-} ]] && command -v unshare >/dev/null && unshare --net true 2>/dev/null; then
  exec env SCALE_TEST_NETNS=1 unshare --net bash -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
lib=$(realpath "$1")
peer=$(realpath "$2")
n=${SOFTDAT_SCALE_CONNECTIONS:-10000}
tmp=${TEST_TMPDIR:-$(mktemp -d)}
conf="$tmp/dat.conf"
printf 'softdat-tcp u2.0 nonthreadsafe default %s softdat.2.0 "tcp 127.0.0.1" ""\n' "$lib" >"$conf"
export DAT_OVERRIDE="$conf"
fail() { echo "FAIL: $*"; exit 1; }
port=$((20000 + $$ % 10000))
rm -f "$tmp/server.err"
timeout 300 "$peer" server softdat-tcp "$port" "$n" >"$tmp/server.json" 2>"$tmp/server.err" &
server=$!
for _ in $(seq 100); do grep -q "serving" "$tmp/server.err" 2>/dev/null && break; sleep 0.1; done
status=0
timeout 300 "$peer" client softdat-tcp 127.0.0.1 "$port" "$n" >"$tmp/client.json" 2>"$tmp/client.err" || status=$?
server_status=0
wait "$server" || server_status=$?
cat "$tmp/server.json" "$tmp/client.json"
[[ $status -eq 0 && $server_status -eq 0 ]] ||
  fail "client exited $status ($(cat "$tmp/client.err")), server exited $server_status ($(cat "$tmp/server.err"))"
python3 - "$tmp/server.json" "$n" <<'PY' || fail "figures out of bounds"
import json, os, sys
s = json.loads(open(sys.argv[1]).read())
n = int(sys.argv[2])
assert s["connections"] == n and s["messages"] == 8 * n, s
assert s["bad_messages"] == 0, s
assert s["last_connection_received"] is True, s
own = s["kib_per_connection"] - s["shared_kib_per_connection"]
own_max = float(os.environ.get("SCALE_OWN_KIB_MAX", "16"))
assert own <= own_max, f"an idle connection costs {own} KiB of its own (at most {own_max})"
if os.environ.get("SOFTDAT_SHM") == "auto":
    # Every connection over shared memory: each keeps pages of its segment resident (12 KiB).
    assert s["shared_kib_per_connection"] >= 8.0, f"{s['shared_kib_per_connection']} KiB shared per connection: over TCP?"
# A same-host connection's segment: two rings of 64 KiB and a page of controls.
assert s["shared_kib_per_connection"] <= 132.0, f"{s['shared_kib_per_connection']} KiB of shared memory per connection"
assert s["fds_per_connection"] <= 1.01, f"{s['fds_per_connection']} descriptors per connection"
assert s["srq_available_after"] == s["srq_buffers"], s
burst = s["rss_peak_kib"] - s["rss_connected_kib"]
# What stayed, less the ring pages the messages passed through (shared, the connection's own).
left = (s["rss_after_messages_kib"] - s["shared_after_messages_kib"]) - (s["rss_connected_kib"] - s["shared_connected_kib"])
assert left <= 64 * 1024, f"the burst took {burst} KiB and {left} KiB stayed held after it (at most 64 MiB)"
print(f"PASS: {n} connections, {own:.2f} KiB of their own (+{s['shared_kib_per_connection']:.2f} KiB shared) and "
      f"{s['fds_per_connection']:.3f} fds each, "
      f"setup {s['setup_s']:.2f} s, every message intact; the burst took {burst} KiB, {left} KiB stayed")
PY
