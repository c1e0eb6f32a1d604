#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# datperf as users run it: a server process and a client process through the stock registry over
# softdat-tcp, in both progress modes and both ways of reaping, every test, --srq and --clients;
# the JSON, CSV and SVG outputs; and the command line's exit statuses. Figures are not checked
# (timing targets live in tools/bench/compare); that every byte verified is.
set -euo pipefail
# A private network namespace (root, as in CI): its own loopback and ports, so another process on
# this machine listening on our port cannot take our client, nor we its (the same as the consumer
# tests). Without the privilege it says so and runs on the shared loopback.
if [[ -z ${DATPERF_TEST_NETNS:-} ]] && command -v unshare >/dev/null; then
  if DATPERF_TEST_NETNS=1 unshare --net true 2>/dev/null; then
    exec env DATPERF_TEST_NETNS=1 unshare --net bash -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
  fi
  echo "datperf_test: no private network namespace; using the shared loopback" >&2
fi
lib=$(realpath "$1")
datperf=$(realpath "$2")
conf="$TEST_TMPDIR/dat.conf"
{
  printf 'softdat-tcp u2.0 nonthreadsafe default %s softdat.2.0 "tcp 127.0.0.1" ""\n' "$lib"
  printf 'softdat-poll u2.0 nonthreadsafe default %s softdat.2.0 "tcp 127.0.0.1 progress=poll" ""\n' "$lib"
  printf 'softdat-badopt u2.0 nonthreadsafe default %s softdat.2.0 "tcp 127.0.0.1 progress=bogus" ""\n' "$lib"
} >"$conf"
export DAT_OVERRIDE="$conf"
fail() { echo "FAIL: $*"; exit 1; }
# Below the kernel's ephemeral range (32768 and up): a port there may be the local end of an
# earlier run's client connection still closing, and the server's listen then fails with
# DAT_CONN_QUAL_IN_USE (CI, 2026-11-24: port 36127). About 40 runs follow this base.
port=$((10000 + $$ % 20000))

# One server --once and one client; the client's stdout is left in $TEST_TMPDIR/out.
run() {
  local ia="$1"; shift
  port=$((port + 1))
  # The previous server's 'serving on' must not be taken for this one's (its client would find
  # nobody listening, and this server would wait out its bound).
  rm -f "$TEST_TMPDIR/server.err"
  timeout 60 "$datperf" -P "$ia" -p "$port" --once -q "$@" 2>"$TEST_TMPDIR/server.err" &
  local server=$!
  local status=0
  for _ in $(seq 50); do
    grep -q "serving on" "$TEST_TMPDIR/server.err" 2>/dev/null && break
    sleep 0.1
  done
  # Its log lines go to stderr, apart from the document (a poll-mode IA's watchdog may say that
  # input waited for a call, which a slow sanitizer run can make true).
  timeout 60 "$datperf" -P "$ia" -h 127.0.0.1 -p "$port" -q "$@" >"$TEST_TMPDIR/out" 2>"$TEST_TMPDIR/client.err" ||
    status=$?
  local server_status=0
  wait "$server" || server_status=$?
  [[ $server_status -eq 0 && $status -eq 0 ]] ||
    fail "$ia '$*': server exited $server_status ($(cat "$TEST_TMPDIR/server.err")), client exited $status ($(cat "$TEST_TMPDIR/out" "$TEST_TMPDIR/client.err"))"
}

# Every test, each mode and reap, data verified, JSON with the documented keys and no bad byte.
for ia in softdat-tcp softdat-poll; do
  for reap in wait dequeue; do
    for test in lat bw rate write read; do
      run "$ia" -t "$test" -s 8,65536 -n 200 --reap "$reap" --verify --json
      python3 - "$TEST_TMPDIR/out" "$test" <<'PY' || fail "$ia $reap $test: bad JSON: $(cat "$TEST_TMPDIR/out")"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["rows"]
assert [r["size"] for r in rows] == [8, 65536], rows
for r in rows:
    for key in ("test", "size", "lat_us_p50", "lat_us_p99", "bw_MBps", "msg_rate_Mps", "iters"):
        assert key in r, key
    assert r["test"] == sys.argv[2] and r["iters"] == 200 and r["bad_bytes"] == 0, r
PY
    done
  done
done
echo "ok: every test in both modes and both reaps, verified"

# SRQ fan-in over several connections, CSV and the plot.
run softdat-tcp -t rate -s 4096 -n 400 --srq --srq-buffers 16 --clients 4 --verify --csv
[[ $(head -1 "$TEST_TMPDIR/out") == test,size,lat_us_p50,* ]] || fail "CSV header: $(head -1 "$TEST_TMPDIR/out")"
grep -q '^rate,4096,.*,4,' "$TEST_TMPDIR/out" || fail "CSV row for 4 clients: $(cat "$TEST_TMPDIR/out")"
run softdat-tcp -t lat -s 8,4k -n 100 --plot "$TEST_TMPDIR/plot.svg"
grep -q '<svg' "$TEST_TMPDIR/plot.svg" || fail "no SVG written"
grep -qE '^lat +8 B' "$TEST_TMPDIR/out" || fail "no table row: $(cat "$TEST_TMPDIR/out")"
echo "ok: --srq --clients 4, CSV, table, plot"

# --one-buffer (the peers' way of streaming): every message through one buffer per side, every
# byte still checked, and said in the JSON; for Send streams, Writes and Reads. (A Write checked
# against every slot, or a Read from any slot but the first, would count bad bytes here.)
for ia in softdat-tcp softdat-poll; do
  for test in bw rate write read; do
    run "$ia" -t "$test" -s 8,65536 -n 200 --one-buffer --verify --json
    python3 - "$TEST_TMPDIR/out" <<'PY' || fail "$ia $test --one-buffer: $(cat "$TEST_TMPDIR/out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["one_buffer"] is True, doc
assert [(r["size"], r["iters"], r["bad_bytes"]) for r in doc["rows"]] == [(8, 200, 0), (65536, 200, 0)], doc
PY
  done
done
status=0; "$datperf" -P softdat-tcp -t lat --one-buffer 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 2 ]] && grep -q 'one-buffer' "$TEST_TMPDIR/err" || fail "--one-buffer with lat: exit $status, $(cat "$TEST_TMPDIR/err")"
status=0; "$datperf" -P softdat-tcp -t bw --srq --one-buffer 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 2 ]] && grep -q 'one-buffer' "$TEST_TMPDIR/err" || fail "--one-buffer with --srq: exit $status, $(cat "$TEST_TMPDIR/err")"
echo "ok: --one-buffer streams, Writes and Reads in both modes, verified"

# The RDMA Write ping-pong: each way a side can learn of the peer's Write, in both modes (spinning
# on memory alone needs the progress thread: under progress=poll nothing would place the Write).
# A side's consumer spins on memory its own progress thread places the peer's Write into, as a CPU
# spins on memory an RNIC writes by DMA, and rewrites its Write's source once the peer answered
# (the answer proves the last Write was read): both ordered through the peer, which
# ThreadSanitizer cannot see and reports as races. Under TSan these runs suppress exactly the
# placement (RxStream::Place) and the framing copy (TxStream::AppendPayload), and no more.
if [[ -n ${TSAN_OPTIONS:-} ]]; then
  printf '%s\n' "race:softdat::transport::tcp::RxStream::Place" \
    "race:softdat::transport::tcp::TxStream::AppendPayload" >"$TEST_TMPDIR/tsan_rdma.supp"
  export TSAN_OPTIONS="$TSAN_OPTIONS:suppressions=$TEST_TMPDIR/tsan_rdma.supp"
fi
for args in "softdat-tcp" "softdat-tcp --spin dequeue" "softdat-tcp --notify send" "softdat-tcp --notify send --reap dequeue" \
            "softdat-poll --spin dequeue" "softdat-poll --notify send --reap dequeue"; do
  # shellcheck disable=SC2086
  run $args -t write_lat -s 8,65536 -n 200 --verify --json
  python3 - "$TEST_TMPDIR/out" <<'PY' || fail "write_lat $args: $(cat "$TEST_TMPDIR/out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert [(r["test"], r["size"], r["iters"], r["bad_bytes"]) for r in doc["rows"]] == \
    [("write_lat", 8, 200, 0), ("write_lat", 65536, 200, 0)], doc
assert all(r["lat_us_p50"] > 0 and r["lat_us_p99"] >= r["lat_us_p50"] for r in doc["rows"]), doc
PY
done
status=0; "$datperf" -P softdat-tcp -t write_lat --clients 2 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 2 ]] && grep -q 'write_lat is one connection' "$TEST_TMPDIR/err" || fail "write_lat --clients 2: exit $status"
echo "ok: write_lat in both modes, each notification, verified"

# --duration ends each kind of loop (a Send ping-pong, a stream, the Write ping-pong) early and
# cleanly, though its clock is read only every so often: fewer iterations than -n, every byte
# verified, within the run's timeout.
for test in lat rate write_lat; do
  run softdat-tcp -t "$test" -s 8 -n 5000000 --duration 0.2 --verify --json
  python3 - "$TEST_TMPDIR/out" <<'PY' || fail "--duration with $test: $(cat "$TEST_TMPDIR/out")"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 1 and 0 < rows[0]["iters"] < 5000000 and rows[0]["bad_bytes"] == 0, rows
PY
done
echo "ok: --duration ends every loop"

# The command line: --help 0, a usage error 2, an IA that does not open 1 with one line saying why.
"$datperf" --help | grep -q '^usage: datperf' || fail "--help"
"$datperf" -V | grep -qE '^datperf \(softdat\) [0-9]+\.[0-9]+, commit ([0-9a-f]{12}|unknown)$' || fail "-V: $("$datperf" -V)"
[[ $("$datperf" --version) == $("$datperf" -V) ]] || fail "--version differs from -V"
status=0; "$datperf" -P softdat-tcp -t nonsense 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 2 ]] || fail "usage error exit $status"
grep -q 'datperf: ' "$TEST_TMPDIR/err" || fail "usage error says nothing"
status=0; timeout 20 "$datperf" -P no-such-ia -h 127.0.0.1 -q 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] || fail "unknown IA exit $status"
grep -q "cannot open IA 'no-such-ia': DAT_PROVIDER_NOT_FOUND.*: no IA of that name in $conf (named by DAT_OVERRIDE); datinfo -l lists its IAs" \
  "$TEST_TMPDIR/err" || fail "unknown IA not named with the dat.conf read: $(cat "$TEST_TMPDIR/err")"
# Which dat.conf only when that is the question: without DAT_OVERRIDE it is /etc/dat.conf; for an
# IA that is there but does not open, the provider's own reason and no dat.conf hint.
status=0; env -u DAT_OVERRIDE timeout 20 "$datperf" -P no-such-ia -h 127.0.0.1 -q 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] && grep -q 'no IA of that name in /etc/dat.conf; datinfo -l' "$TEST_TMPDIR/err" &&
  ! grep -q DAT_OVERRIDE "$TEST_TMPDIR/err" || fail "unknown IA without DAT_OVERRIDE: exit $status, $(cat "$TEST_TMPDIR/err")"
status=0; timeout 20 "$datperf" -P softdat-badopt -h 127.0.0.1 -q 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] && grep -q 'progress must be thread or poll, got "bogus"' "$TEST_TMPDIR/err" &&
  ! grep -q 'dat.conf;\|DAT_OVERRIDE' "$TEST_TMPDIR/err" || fail "a bad option: exit $status, $(cat "$TEST_TMPDIR/err")"
# Nobody listening: the event by its name, and what to check.
status=0; timeout 30 "$datperf" -P softdat-tcp -h 127.0.0.1 -p $((port + 1)) -q 2>"$TEST_TMPDIR/err" || status=$?
[[ $status -eq 1 ]] && grep -q "connecting to 127.0.0.1 port $((port + 1)): DAT_CONNECTION_EVENT_UNREACHABLE instead of ESTABLISHED (is a datperf server listening there" \
  "$TEST_TMPDIR/err" && ! grep -q '0x' "$TEST_TMPDIR/err" || fail "nobody listening: exit $status, $(cat "$TEST_TMPDIR/err")"
echo "PASS"
