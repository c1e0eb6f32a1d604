#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# examples/srq_echo.c as a user meets it: built by Bazel and by the cc line of docs/EXAMPLE.md run
# exactly as written, then a server of one build and a client of the other over softdat-tcp
# through the stock registry, in a network namespace of the test's own (fixed port). The server
# must have refilled its SRQ on low-watermark events and reported each EP's span; the client must
# have checked every echo. Also: a refused connection and a usage error give their exit statuses.
#   srq_echo_test.sh LIB SRQ_ECHO SRQ_ECHO_C EXAMPLE_MD
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=testing/shell_helpers.sh
. testing/shell_helpers.sh  # Bazel runs tests from the workspace root of the runfiles
enter_private_net "$@"
lib=$(realpath "$1") bazel_built=$(realpath "$2") source=$(realpath "$3") doc=$(realpath "$4")
work=$TEST_TMPDIR

# The doc's build line, run as written from a folder laid out like the source tree.
line=$(grep -E '^cc .*examples/srq_echo\.c' "$doc") || fail "docs/EXAMPLE.md has no cc line for examples/srq_echo.c"
mkdir -p "$work/tree/examples"
cp "$source" "$work/tree/examples/"
(cd "$work/tree" && eval "$line") || fail "the documented build line failed: $line"
cc_built=$work/tree/srq_echo
[[ -x $cc_built ]] || fail "the documented line made no ./srq_echo"

printf 'softdat-tcp u2.0 nonthreadsafe default %s softdat.2.0 "tcp 127.0.0.1" ""\n' "$lib" >"$work/dat.conf"
sanitizer_env "$lib"  # the cc build is not sanitized; a sanitized provider needs its runtime
export DAT_OVERRIDE=$work/dat.conf

run_pair() {  # run_pair SERVER CLIENT: 4 connections, window 8, 2000 messages each
  local server_bin=$1 client_bin=$2 server status=0 server_status=0
  timeout 60 env "${SANITIZER_ENV[@]}" "$server_bin" server -c 4 -w 8 >"$work/server.out" 2>&1 &
  server=$!
  wait_listening 17001 "$server" || fail "the server never listened: $(cat "$work/server.out")"
  timeout 60 env "${SANITIZER_ENV[@]}" "$client_bin" client 127.0.0.1 -c 4 -w 8 -n 2000 >"$work/client.out" 2>&1 || status=$?
  wait "$server" || server_status=$?
  cat "$work/server.out" "$work/client.out"
  [[ $status -eq 0 && $server_status -eq 0 ]] || fail "client exit $status, server exit $server_status"
  grep -q '^srq_echo client: 4 connections x 2000 messages of 256 bytes echoed, every byte checked$' "$work/client.out" ||
    fail "the client did not check every echo"
  grep -q '^srq_echo server: IA softdat-tcp, port 17001, SRQ of 64 buffers of 256 bytes, low watermark 32$' \
    "$work/server.out" || fail "the server's SRQ is not sized from 4 x 8 messages in flight"
  grep -qE '^srq_echo server: 8000 messages echoed over 4 connections; low watermark reached [1-9][0-9]* times$' \
    "$work/server.out" || fail "the server did not echo 8000 messages refilling on the low watermark"
  grep -qE '^  low watermark 1: [0-9]+ SRQ buffers held by [0-4] of 4 EPs, at most [0-9]+ by one; widest span [0-9]+$' \
    "$work/server.out" || fail "no dat_ep_recv_query summary of the EPs at the first low watermark"
  ! grep -q 'softdat: error' "$work/server.out" "$work/client.out" || fail "softdat logged an error"
}
echo "--- server built by Bazel, client built by the documented cc line"
run_pair "$bazel_built" "$cc_built"
echo "--- and the other way round"
run_pair "$cc_built" "$bazel_built"

echo "--- 50 connections: the low watermark reports stay one short line each"
server_status=0 status=0
timeout 60 env "${SANITIZER_ENV[@]}" "$bazel_built" server -c 50 -w 4 -p 17003 >"$work/server.out" 2>&1 &
server=$!
wait_listening 17003 "$server" || fail "the server never listened: $(cat "$work/server.out")"
timeout 60 env "${SANITIZER_ENV[@]}" "$cc_built" client 127.0.0.1 -c 50 -w 4 -n 200 -p 17003 >"$work/client.out" 2>&1 || status=$?
wait "$server" || server_status=$?
[[ $status -eq 0 && $server_status -eq 0 ]] || fail "50 connections: client exit $status, server exit $server_status"
grep '^  low watermark' "$work/server.out"
grep -qE '^  low watermark 1: [0-9]+ SRQ buffers held by [0-9]+ of 50 EPs' "$work/server.out" || fail "no summary for 50 EPs"
awk '/^  low watermark/ && length($0) > 100 { bad = 1 } END { exit bad }' "$work/server.out" ||
  fail "a low watermark line longer than 100 characters"

echo "--- the client asks for more connections than the server takes: both say so, both exit 1"
server_status=0 status=0
timeout 60 env "${SANITIZER_ENV[@]}" "$bazel_built" server -c 4 -p 17004 >"$work/server.out" 2>"$work/server.err" &
server=$!
wait_listening 17004 "$server" || fail "the server never listened: $(cat "$work/server.out" "$work/server.err")"
timeout 60 env "${SANITIZER_ENV[@]}" "$cc_built" client 127.0.0.1 -c 8 -p 17004 >"$work/client.out" 2>"$work/client.err" || status=$?
wait "$server" || server_status=$?
cat "$work/server.out" "$work/server.err" "$work/client.out" "$work/client.err"
[[ $status -eq 1 && $server_status -eq 1 ]] || fail "more connections than taken: client exit $status, server exit $server_status"
grep -qx 'srq_echo: connection 5 of 8 rejected: the server takes 4 connections (its -c 4); give both sides the same -c' \
  "$work/client.err" || fail "the client does not say plainly why"
grep -qx 'srq_echo server: connection request 5 rejected: this server takes 4 connections (-c 4); give the client the same -c' \
  "$work/server.err" || fail "the server does not say it rejected the fifth"
grep -qx 'srq_echo server: 1 connection request was rejected: the client asked for more connections than the 4 this server takes (-c)' \
  "$work/server.err" || fail "the server's summary does not say why it fails"
! grep -q 'softdat: error' "$work/server.err" "$work/client.err" || fail "softdat logged an error"

echo "--- no server: exit 1, one line of srq_echo's, and softdat's log line names the peer and why"
status=0
timeout 30 env "${SANITIZER_ENV[@]}" "$cc_built" client 127.0.0.1 -p 17002 >/dev/null 2>"$work/err" || status=$?
cat "$work/err"
[[ $status -eq 1 ]] || fail "no server: exit $status"
grep -qx 'srq_echo: connection 0 to 127.0.0.1 port 17002: no server there (DAT_CONNECTION_EVENT_UNREACHABLE)' "$work/err" ||
  fail "srq_echo's reason"
[[ $(grep -c '^srq_echo: ' "$work/err") -eq 1 ]] || fail "srq_echo printed more than one line"
grep -qx 'softdat: warn: tcp -> 127.0.0.1:17002: connect failed: Connection refused (nobody listens on that port there); the endpoint gets DAT_CONNECTION_EVENT_UNREACHABLE' \
  "$work/err" ||
  fail "softdat's log line does not name the connection's peer and the reason"
echo "--- a usage error: exit 2"
status=0
"$cc_built" serve >/dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "usage error: exit $status"
echo "PASS: both builds, both directions, SRQ refilled on its low watermark, every echo checked"
