#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Guest side of tools/bench/verbs_compare: on rxe0 and siw0, stock dtest over softdat-verbs (one
# or more builds of the library) and over OFED DAPL (libdaplofa), and perftest's raw verbs
# (ib_send_lat, ib_write_lat, ib_write_bw) on the same device, alternating within each round (the
# order rotates every round). Prints one line per figure:
#   RESULT <round> <device> <stack> <figure> <value>
# with latencies in µs (half a round trip, as dtest and perftest both report) and bandwidths in
# MB/s. A run that fails prints "FAILED <round> <device> <stack> <figure>" and its log's tail.
# With DATPERF set (a datperf binary), each DAT stack also runs datperf's 8 B Send ping-pong
# (2,000 round trips, reaping by spinning on dat_evd_dequeue: its p50), steadier than dtest's 100.
# Usage (inside the VM only): [DATPERF=path] guest_bench_verbs.sh ROUNDS NAME=LIBRARY [NAME=LIBRARY...]
set -uo pipefail

if [ "${SOFTDAT_VM:-}" != 1 ]; then
  echo "guest_bench_verbs.sh: not inside the softdat VM; use tools/bench/verbs_compare" >&2
  exit 2
fi
# shellcheck source=testing/shell_helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../shell_helpers.sh"
rounds=$1; shift
softdat=("$@")
work=$SOFTDAT_VM_WORK/bench
mkdir -p "$work"
declare -A ip=([rxe0]=10.0.0.1 [siw0]=10.0.1.1)
declare -A netdev=([rxe0]=dummy0 [siw0]=dummy1)
# Bursts: enough round trips to dwarf the timer, few enough for TCG (a 64 KiB write burst moves
# burst x 64 KiB each way).
small_burst=1000
large_burst=200

conf() {  # conf STACK DEVICE: writes the dat.conf naming IA "bench" for that stack
  local file=$work/$1-$2.conf
  case $1 in
    ofed) echo "bench u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"${netdev[$2]} 0\" \"\"" >"$file" ;;
    *) local lib=$3; echo "bench u2.0 nonthreadsafe default $lib softdat.2.0 \"verbs $2 1\" \"\"" >"$file" ;;
  esac
  echo "$file"
}

# run_pair LOG PORT SERVER_ARGV... -- CLIENT_ARGV...: both bounded in time; 0 when both exit 0.
# PORT is tcp:N (dtest's TCP hand-off port) or cm:N (a server that listens through rdma_cm only:
# perftest -R, datperf): the client starts once the server listens there.
run_pair() {
  local log=$1 port=$2; shift 2
  local server=() client=()
  while [ "$1" != -- ]; do server+=("$1"); shift; done; shift
  client=("$@")
  : >"$log"
  timeout 120 "${server[@]}" >>"$log" 2>&1 &
  local spid=$!
  case $port in
    # dtest's server opens its PSP (an rdma_cm listener) after its TCP port: a pause.
    tcp:*)
      wait_listening "${port#tcp:}" $spid || echo "server never listened on ${port#tcp:}" >>"$log"
      sleep 0.5 ;;
    cm:*) wait_cm_listening "${port#cm:}" $spid || echo "server never listened (rdma_cm) on ${port#cm:}" >>"$log" ;;
  esac
  timeout 100 "${client[@]}" >>"$log" 2>&1
  local crc=$?
  wait $spid
  local src=$?
  [ $crc = 0 ] && [ $src = 0 ]
}

result() {  # result ROUND DEVICE STACK FIGURE VALUE LOG
  if [ -n "$5" ]; then
    echo "RESULT $1 $2 $3 $4 $5"
  else
    echo "FAILED $1 $2 $3 $4"
    tail -n 15 "$6" | sed 's/^/   | /'
  fi
}

# The client's line of a dtest figure (the client prints its own timing first).
dtest_pingpong() { grep -m1 -E "$1 PingPong:" "$2" | sed -n 's/.*latency \([0-9.]*\) us.*/\1/p'; }
dtest_write_bw() { grep -m1 'RDMA write (' "$1" | sed -n 's/.*, \([0-9.]*\) MB\/sec.*/\1/p'; }

dtest_stack() {  # dtest_stack ROUND DEVICE STACK CONF
  local r=$1 dev=$2 stack=$3 conf=$4 log
  log=$work/$r-$dev-$stack-send8.log
  run_pair "$log" tcp:15828 env DAT_OVERRIDE="$conf" dtest -s -p -P bench -B $small_burst -b 8 -- \
    env DAT_OVERRIDE="$conf" dtest -p -P bench -h "${ip[$dev]}" -B $small_burst -b 8
  result "$r" "$dev" "$stack" send_lat_8 "$(dtest_pingpong Message "$log")" "$log"
  log=$work/$r-$dev-$stack-write8.log
  run_pair "$log" tcp:15828 env DAT_OVERRIDE="$conf" dtest -s -p -W -P bench -B $small_burst -b 8 -- \
    env DAT_OVERRIDE="$conf" dtest -p -W -P bench -h "${ip[$dev]}" -B $small_burst -b 8
  result "$r" "$dev" "$stack" write_lat_8 "$(dtest_pingpong 'RDMA write' "$log")" "$log"
  log=$work/$r-$dev-$stack-64k.log
  run_pair "$log" tcp:15828 env DAT_OVERRIDE="$conf" dtest -s -p -P bench -B $large_burst -b 65536 -- \
    env DAT_OVERRIDE="$conf" dtest -p -P bench -h "${ip[$dev]}" -B $large_burst -b 65536
  result "$r" "$dev" "$stack" send_lat_64k "$(dtest_pingpong Message "$log")" "$log"
  result "$r" "$dev" "$stack" write_bw_64k "$(dtest_write_bw "$log")" "$log"
  if [ -n "${DATPERF:-}" ]; then
    log=$work/$r-$dev-$stack-datperf8.log
    run_pair "$log" cm:18515 env DAT_OVERRIDE="$conf" "$DATPERF" -P bench --once --reap dequeue -q -- \
      env DAT_OVERRIDE="$conf" "$DATPERF" -P bench -h "${ip[$dev]}" -t lat -s 8 -n 2000 --reap dequeue -q
    result "$r" "$dev" "$stack" datperf_lat_8 "$(awk '$1 == "lat" && $3 == "B" {print $7}' "$log" | tail -1)" "$log"
  fi
}

# perftest through rdma_cm (-R: the only way on iWARP, and GID-free on RoCE), which listens on
# rdma_cm's port 18515 only. The last row of its table is the figure: t_typical for latency, BW average.
perf_lat() { awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ {v=$5} END {print v}' "$1"; }
perf_bw() { awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ {v=$4} END {print v}' "$1"; }

perftest_stack() {  # perftest_stack ROUND DEVICE
  local r=$1 dev=$2 figure tool size count parse log
  for figure in send_lat_8:ib_send_lat:8:$small_burst:perf_lat write_lat_8:ib_write_lat:8:$small_burst:perf_lat \
                send_lat_64k:ib_send_lat:65536:$large_burst:perf_lat write_bw_64k:ib_write_bw:65536:$large_burst:perf_bw; do
    IFS=: read -r figure tool size count parse <<<"$figure"
    log=$work/$r-$dev-perftest-$figure.log
    run_pair "$log" cm:18515 "$tool" -R -d "$dev" -s "$size" -n "$count" -- "$tool" -R -d "$dev" -s "$size" -n "$count" "${ip[$dev]}"
    result "$r" "$dev" perftest "$figure" "$($parse "$log")" "$log"
  done
}

for r in $(seq "$rounds"); do
  for dev in rxe0 siw0; do
    stacks=(ofed perftest)
    for entry in "${softdat[@]}"; do stacks+=("$entry"); done
    # Rotate the order each round, so no stack always runs first (or right after another).
    n=${#stacks[@]}
    for i in $(seq 0 $((n - 1))); do
      entry=${stacks[$(((i + r) % n))]}
      case $entry in
        ofed) dtest_stack "$r" "$dev" ofed "$(conf ofed "$dev")" ;;
        perftest) perftest_stack "$r" "$dev" ;;
        *=*) dtest_stack "$r" "$dev" "${entry%%=*}" "$(conf "${entry%%=*}" "$dev" "${entry#*=}")" ;;
      esac
    done
  done
done
