#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Guest side of tools/bench/verbs_profile: the user-space instructions and system calls of one 8 B
# Send round trip (datperf's client, polling with dat_evd_dequeue) over softdat-verbs and over OFED
# DAPL on one device. Each stack's client runs twice under callgrind (SHORT and LONG round trips)
# and twice under strace -c; the difference of the two runs, divided by LONG - SHORT, is the cost
# of one round trip without start-up and tear-down. Prints per stack:
#   INSTR <stack> <instructions per round trip>
#   CALL <stack> <entry point> <instructions per round trip, inclusive>
#   SYSCALL <stack> <name> <calls per round trip>
# and leaves the callgrind files in the work dir (callgrind_annotate reads them).
# Usage (inside the VM only): guest_profile_verbs.sh DEVICE DATPERF LIBSOFTDAT
set -uo pipefail

if [ "${SOFTDAT_VM:-}" != 1 ]; then
  echo "guest_profile_verbs.sh: not inside the softdat VM; use tools/bench/verbs_profile" >&2
  exit 2
fi
# shellcheck source=testing/shell_helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../shell_helpers.sh"
dev=$1 datperf=$2 lib=$3
work=$SOFTDAT_VM_WORK/profile
mkdir -p "$work"
declare -A ip=([rxe0]=10.0.0.1 [siw0]=10.0.1.1)
declare -A netdev=([rxe0]=dummy0 [siw0]=dummy1)
echo "bench u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"${netdev[$dev]} 0\" \"\"" >"$work/ofed.conf"
echo "bench u2.0 nonthreadsafe default $lib softdat.2.0 \"verbs $dev 1\" \"\"" >"$work/softdat.conf"
short=300 long=1300
status=0

run() {  # run STACK N TOOL: one client under TOOL (callgrind or strace) against a plain server
  local stack=$1 n=$2 tool=$3 out=$work/$1-$2 spid
  DAT_OVERRIDE=$work/$stack.conf timeout 300 "$datperf" -P bench --once --reap dequeue -q >"$out-$tool.server" 2>&1 &
  spid=$!
  wait_cm_listening 18515 $spid || echo "server never listened" >>"$out-$tool.log"
  local client=("$datperf" -P bench -h "${ip[$dev]}" -t lat -s 8 -n "$n" --reap dequeue -q)
  case $tool in
    callgrind) DAT_OVERRIDE=$work/$stack.conf timeout 400 valgrind --tool=callgrind --callgrind-out-file="$out.cg" "${client[@]}" ;;
    strace) DAT_OVERRIDE=$work/$stack.conf timeout 400 strace -f -c -o "$out.strace" "${client[@]}" ;;
  esac >"$out-$tool.log" 2>&1 || { echo "FAILED $stack $n $tool"; tail -n 5 "$out-$tool.log"; status=1; }
  wait $spid || status=1
}

total() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
inclusive() {  # inclusive FILE SYMBOL
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk -v s="$2" 'index($0, "???:" s " [") {gsub(",", "", $1); print $1; exit}'
}
calls() { awk -v s="$2" '$NF == s {print $4; exit}' "$1"; }  # calls FILE SYSCALL (strace -c's table)

for stack in softdat ofed; do
  for n in $short $long; do
    run $stack $n callgrind
    run $stack $n strace
  done
  a=$work/$stack-$short b=$work/$stack-$long
  echo "INSTR $stack $(( ($(total "$b.cg") - $(total "$a.cg")) / (long - short) ))"
  for entry in dat_ep_post_send dat_ep_post_recv dat_evd_dequeue; do
    echo "CALL $stack $entry $(( ($(inclusive "$b.cg" $entry) - $(inclusive "$a.cg" $entry)) / (long - short) ))"
  done
  for syscall in write read ioctl futex clock_gettime poll epoll_wait; do
    x=$(calls "$a.strace" $syscall) y=$(calls "$b.strace" $syscall)
    echo "SYSCALL $stack $syscall $(awk -v x="${x:-0}" -v y="${y:-0}" -v d=$((long - short)) 'BEGIN {v = (y - x) / d; printf "%.2f", v < 0.005 ? 0 : v}')"
  done
done
exit $status
