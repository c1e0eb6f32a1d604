#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Guest side of testing/vm/verbs_suite.sh: over softdat-verbs on rxe0 (RoCE) and siw0 (iWARP), runs
# the verbs transport's own test, the conformance suite and the stock consumers (dtest, dtestsrq, dapltest -T T) exactly as a user
# would, through a generated dat.conf and the stock libdat2 registry. Prints one line per case and a
# summary; exits non-zero if any case failed.
# Usage (inside the VM only): guest_verbs_suite.sh <bazel-bin> [device...]
set -uo pipefail

if [ "${SOFTDAT_VM:-}" != 1 ]; then
  echo "guest_verbs_suite.sh: not inside the softdat VM; use testing/vm/verbs_suite.sh" >&2
  exit 2
fi
bin=$1; shift
if [ $# -gt 0 ]; then devices=("$@"); else devices=(rxe0 siw0); fi
lib=$bin/dat/libsoftdat.so.2
work=$SOFTDAT_VM_WORK/suite
mkdir -p "$work"
results=()
failed=0
case_start=$SECONDS

record() {  # record DEVICE CASE RC LOGFILE
  local verdict=PASS
  [ "$3" = 0 ] || { verdict=FAIL; failed=$((failed + 1)); }
  [ "$3" = 77 ] && { verdict=SKIP; failed=$((failed - 1)); }
  results+=("$(printf '%-5s %-6s %4ss %s' "$verdict" "$1" $((SECONDS - case_start)) "$2")")
  echo "== $verdict $1 $2 ($((SECONDS - case_start)) s, log: $4)"
  case_start=$SECONDS
  if [ "$verdict" = FAIL ]; then
    tail -n 40 "$4" | sed 's/^/   | /'
    # The device's counters (rxe has them: retries, sequence errors, packets) and the kernel's last
    # messages: a completion the device never made is told from one softdat lost only by these, and
    # the guest is gone after the run.
    { rdma statistic show link "$1/1" 2>/dev/null; dmesg 2>/dev/null | grep -v 'speed is unknown' | tail -n 15; } |
      sed 's/^/   # /'
  fi
}

# gtest_summary LOG: GoogleTest's closing counts on one line.
gtest_summary() {
  grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$1" | sed 's/, listed below://' | tr '\n' ' '
}

# wait_port PORT PID: until something listens on TCP PORT (dtest's server), 60 s at most, or PID ends.
wait_port() {
  for _ in $(seq 600); do
    ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# wait_line LOG PID: until the server's log says it listens (dapltest's "Service Point Ready",
# dtestsrq's "server ready on port"), 60 s at most, or PID ends. A fixed pause was not enough: on a
# loaded host dapltest's server took more than 5 s and its client was refused.
wait_line() {
  for _ in $(seq 600); do
    grep -qE 'Service Point Ready|server ready on port' "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# pair NAME DEVICE PORT SERVER_ARGV... -- CLIENT_ARGV... [-- QUIT_ARGV...]: the server in the
# background; the client once the server is ready (PORT: a plain TCP port the server listens on
# first, as dtest's 15828; 0: an rdma_cm listener that ss cannot see, so its ready line); then the
# optional quit command (dapltest's server runs until told). Every process is bounded in time;
# all must exit 0 and, for dtest, both sides print PASSED.
pair() {
  local name=$1 dev=$2 port=$3; shift 3
  local server=() client=() quit=()
  while [ "$1" != -- ]; do server+=("$1"); shift; done; shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do client+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; quit=("$@"); }
  local log=$work/$dev-$name.log
  : >"$log"
  timeout 240 "${server[@]}" >>"$log" 2>&1 &
  local spid=$!
  if [ "$port" != 0 ]; then
    wait_port "$port" $spid || echo "server never listened on $port" >>"$log"
  else
    wait_line "$log" $spid || echo "server never said it was ready" >>"$log"
  fi
  timeout 200 "${client[@]}" >>"$log" 2>&1
  local crc=$? qrc=0
  if [ ${#quit[@]} -gt 0 ]; then timeout 60 "${quit[@]}" >>"$log" 2>&1; qrc=$?; fi
  wait $spid
  local src=$?
  local rc=0
  [ $crc = 0 ] && [ $src = 0 ] && [ $qrc = 0 ] || rc=1
  if [[ "$name" == dtest-* || "$name" == dtest ]]; then
    [ "$(grep -c 'PASSED' "$log")" -ge 2 ] || rc=1
  fi
  if [[ "$name" == dtestx* ]]; then
    [ "$(grep -c 'IB extension test - .* PASSED' "$log")" -ge 2 ] || rc=1
  fi
  if [[ "$name" == dtestsrq* ]]; then  # exits 0 whatever happens: its text is the verdict
    [ "$(grep -c 'DAPL RC SRQ Test Complete.' "$log")" -ge 2 ] || rc=1
    grep -E 'ERR|Err' "$log" >/dev/null && rc=1
  fi
  if [[ "$name" == dapltest* ]]; then  # the client says it finished, the server that it quit
    grep -q 'End of Work -- Client Exiting' "$log" || rc=1
    grep -q "DT_cs_Server ($ia):  Exiting." "$log" || rc=1
    grep -E 'rror|Fail|fail|FAIL|arning|bad |annot|ismatch' "$log" >/dev/null && rc=1
  fi
  grep -q 'softdat: error' "$log" && rc=1
  echo "server exit $src, client exit $crc, quit exit $qrc" >>"$log"
  record "$dev" "$name" $rc "$log"
}

# dtestx on a device without immediate data or atomics (siw): both sides must be refused at the
# first such call with DAT_MODEL_NOT_SUPPORTED, and softdat must say why, never answer wrongly.
dtestx_refused() {  # dtestx_refused DEVICE IA IP
  local dev=$1 ia=$2 ip=$3 log=$work/$1-dtestx-refused.log rc=0
  : >"$log"
  timeout 120 dtestx -P "$ia" -s >>"$log" 2>&1 &
  local spid=$!
  wait_port 15828 $spid || echo "server never listened on 15828" >>"$log"
  timeout 120 "$dtestx_client" "$relay" "$ip" "$ia" 0 dtestx -P "$ia" -c -h "$ip" >>"$log" 2>&1
  wait $spid
  [ "$(grep -c 'dat_ib_post_rdma_write_immed returned DAT_MODEL_NOT_SUPPORTED' "$log")" -ge 2 ] || rc=1
  grep -q 'does not support RDMA Write with immediate data' "$log" || rc=1
  grep -q 'PASSED' "$log" && rc=1
  record "$dev" "dtestx refused (no immediate data, no atomics)" $rc "$log"
}

relay=$bin/testing/consumers/handoff_relay
dtestx_client=$(dirname "${BASH_SOURCE[0]}")/guest_dtestx_client.sh

for dev in "${devices[@]}"; do
  netdev=$(rdma link show "$dev/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
  ip=$(ip -4 -o addr show dev "$netdev" 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
  if [ -z "$ip" ]; then
    results+=("FAIL  $dev   device setup: no IPv4 address for $dev (netdev '$netdev')"); failed=$((failed + 1))
    continue
  fi
  ia=softdat-verbs-$dev
  conf=$work/dat-$dev.conf
  echo "$ia u2.0 nonthreadsafe default $lib softdat.2.0 \"verbs $dev 1\" \"\"" >"$conf"
  export DAT_OVERRIDE=$conf

  # The transport on its own, through the transport interface (transport/verbs).
  log=$work/$dev-verbs_transport_test.log
  SOFTDAT_VERBS_DEVICE="$dev 1" timeout 300 "$bin/transport/verbs/verbs_transport_test" >"$log" 2>&1
  rc=$?
  summary=$(gtest_summary "$log")
  record "$dev" "verbs_transport_test: $summary" $rc "$log"

  # The conformance suite, one binary per man page, each over this device's IA.
  for test in "$bin"/testing/conformance/*_test; do
    name=$(basename "$test")
    log=$work/$dev-$name.log
    mkdir -p "$work/tmp/$dev/$name"
    TEST_SRCDIR=$test.runfiles TEST_TMPDIR=$work/tmp/$dev/$name SOFTDAT_CONFORMANCE_IA=$ia \
      timeout 300 "$test" >"$log" 2>&1
    rc=$?
    summary=$(gtest_summary "$log")
    record "$dev" "conformance $name: $summary" $rc "$log"
  done

  # Busy-poll (progress=poll: the consumer's waits poll the CQs, no progress thread) on a few
  # suites that move data both ways.
  for name in srq_post_recv_test two_process_test; do
    test=$bin/testing/conformance/$name
    log=$work/$dev-$name-poll.log
    mkdir -p "$work/tmp/$dev/$name-poll"
    TEST_SRCDIR=$test.runfiles TEST_TMPDIR=$work/tmp/$dev/$name-poll SOFTDAT_CONFORMANCE_IA=$ia SOFTDAT_PROGRESS=poll \
      timeout 300 "$test" >"$log" 2>&1
    rc=$?
    summary=$(gtest_summary "$log")
    record "$dev" "conformance $name progress=poll: $summary" $rc "$log"
  done

  # A peer killed while its Sends wait for SRQ buffers: the device reports the end.
  log=$work/$dev-peer-death.log
  "$(dirname "${BASH_SOURCE[0]}")/guest_peer_death.sh" "$bin/testing/vm/peer_death" "$conf" "$ia" "$ip" "$work" >"$log" 2>&1
  rc=$?
  record "$dev" "peer death: $(grep -E '^(PASS|FAIL)' "$log" | tail -1)" $rc "$log"

  # 1,000 EPs on one SRQ and one receive EVD (RoCE: the issue's figure; one boot's worth of time).
  if [ "$dev" = rxe0 ]; then
    log=$work/$dev-scale.log
    "$(dirname "${BASH_SOURCE[0]}")/guest_verbs_scale.sh" "$bin/testing/scale/scale_peer" "$conf" "$ia" "$ip" "$work" >"$log" 2>&1
    rc=$?
    record "$dev" "scale: $(grep -E '^(PASS|FAIL)' "$log" | tail -1)" $rc "$log"
  fi

  # dtest's default moves 1000 x 4 MiB each way: hours under TCG. 100 x 1 MiB keeps every phase.
  pair dtest-B100-b1M "$dev" 15828 dtest -s -P "$ia" -B 100 -b 1048576 -- \
    dtest -P "$ia" -h "$ip" -B 100 -b 1048576
  pair dtest-B64 "$dev" 15828 dtest -s -P "$ia" -B 64 -b 4096 -- dtest -P "$ia" -h "$ip" -B 64 -b 4096
  pair dtestsrq-c4 "$dev" 0 dtestsrq -s -P "$ia" -c 4 -B 16 -b 4096 -- \
    dtestsrq -h "$ip" -P "$ia" -c 4 -B 16 -b 4096
  pair dapltest-T-SR "$dev" 0 dapltest -T S -D "$ia" -n 47100 -- \
    dapltest -T T -s "$ip" -D "$ia" -n 47100 -i 100 -t 1 -w 1 client SR 256 server SR 256 -- \
    dapltest -T Q -s "$ip" -D "$ia" -n 47100
  pair dapltest-T-SR-RW-RR-V "$dev" 0 dapltest -T S -D "$ia" -n 47200 -- \
    dapltest -T T -s "$ip" -D "$ia" -n 47200 -i 50 -V client SR 256 client RW 4096 client RR 4096 server SR 256 -- \
    dapltest -T Q -s "$ip" -D "$ia" -n 47200
  pair dapltest-T-t2-w4 "$dev" 0 dapltest -T S -D "$ia" -n 47300 -- \
    dapltest -T T -s "$ip" -D "$ia" -n 47300 -i 50 -t 2 -w 4 client SR 256 server SR 256 -- \
    dapltest -T Q -s "$ip" -D "$ia" -n 47300
  pair dapltest-P-RW "$dev" 0 dapltest -T S -D "$ia" -n 47400 -- \
    dapltest -T P -s "$ip" -D "$ia" -n 47400 -i 100 RW 4096 2 -- \
    dapltest -T Q -s "$ip" -D "$ia" -n 47400

  # The DAT IB extensions (issue 37): stock dtestx (RC; UD with -u) where the device has them, its
  # refusal where not.
  if [ "$dev" = rxe0 ]; then
    pair dtestx-immed-atomic-counters "$dev" 15828 dtestx -P "$ia" -s -p -- \
      "$dtestx_client" "$relay" "$ip" "$ia" 0 dtestx -P "$ia" -c -h "$ip" -p
    pair dtestx-ud "$dev" 15828 dtestx -P "$ia" -s -u -- \
      "$dtestx_client" "$relay" "$ip" "$ia" 0 dtestx -P "$ia" -c -h "$ip" -u
  else
    dtestx_refused "$dev" "$ia" "$ip"
  fi
done

echo
echo "softdat-verbs suite:"
printf '%s\n' "${results[@]}"
echo "failed: $failed"
[ $failed = 0 ]
