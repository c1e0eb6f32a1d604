#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Guest side of testing/interop/interop_suite.sh: softdat on the wire with other stacks, in the qemu
# guest of testing/vm, as a user would run it: one IA name ("interop") mapped per process by its
# own dat.conf (DAT_OVERRIDE) to a provider, and stock dtest and dapltest plus interop_peer (our
# cross-stack DAT cases) between the two processes.
#   A. softdat-tcp (on siw0's address, 10.0.1.1) <-> kernel siw, through a siw-based provider:
#      OFED DAPL (libdaplofa) on siw0 (CRC on and off) and softdat-verbs on siw0 (CRC on; this is
#      also softdat-verbs <-> softdat-tcp); both directions.
#   B. softdat-verbs <-> OFED DAPL on rxe0 (RoCE) and on siw0 (iWARP); both directions; on rxe0
#      also stock dtestx (the DAT IB extensions: immediate data, atomics, counters).
#   C. the siw zero-copy CRC race, provoked: softdat-tcp (CRC on) must refuse the bad FPDU.
# Every softdat-tcp pair is captured with tcpdump; a failing pair's capture goes through
# iwarp-dump into its log. Prints one line per case and a summary (under a failed pair, the lines of
# its log that say why); exits non-zero if any failed.
# Usage (inside the VM only): guest_interop.sh <dir with libsoftdat.so.2, interop_peer, iwarp-dump,
#                                               handoff_relay>
#   INTEROP_ONLY=regex  run only the pairs whose name matches (for debugging)
set -uo pipefail

if [ "${SOFTDAT_VM:-}" != 1 ]; then
  echo "guest_interop.sh: not inside the softdat VM; use testing/interop/interop_suite.sh" >&2
  exit 2
fi
bin=$1
lib=$bin/libsoftdat.so.2
peer=$bin/interop_peer
dump=$bin/iwarp-dump
relay=$bin/handoff_relay
dtestx_client=$(dirname "${BASH_SOURCE[0]}")/../vm/guest_dtestx_client.sh
work=$SOFTDAT_VM_WORK/interop
mkdir -p "$work"
only=${INTEROP_ONLY:-}
results=()
failed=0
start=$SECONDS

siw_ip=10.0.1.1  # dummy1: siw0 (testing/vm/run.sh)
rxe_ip=10.0.0.1  # dummy0: rxe0

# One dat.conf per provider kind, each mapping the IA name "interop".
conf() {  # conf KIND LIBRARY PROVIDER_ID IA_PARAMS
  echo "interop u2.0 nonthreadsafe default $2 $3 \"$4\" \"\"" >"$work/$1.conf"
}
conf tcp-crc "$lib" softdat.2.0 "tcp $siw_ip crc=on"
conf tcp-crc-poll "$lib" softdat.2.0 "tcp $siw_ip crc=on progress=poll"
conf tcp-nocrc "$lib" softdat.2.0 "tcp $siw_ip crc=off"
conf verbs-siw "$lib" softdat.2.0 "verbs siw0 1"
conf verbs-rxe "$lib" softdat.2.0 "verbs rxe0 1"
conf ofed-siw libdaplofa.so.2 dapl.2.0 "dummy1 0"
conf ofed-rxe libdaplofa.so.2 dapl.2.0 "dummy0 0"

record() {  # record NAME RC LOG SECONDS
  local verdict=PASS
  [ "$2" = 0 ] || { verdict=FAIL; failed=$((failed + 1)); }
  results+=("$(printf '%-4s %4ss %s' "$verdict" "$4" "$1")")
  echo "== $verdict $1 ($4 s, log: $3)"
  if [ "$verdict" = FAIL ]; then
    tail -n 60 "$3" | sed 's/^/   | /'
    # The summary carries the lines that say why, too: a CI report may show only the part of the
    # output around the summary, and the log stays in the guest.
    local line
    while IFS= read -r line; do results+=("       | ${line:0:160}"); done < <(
      grep -E 'rror|ERR|Fail|fail|FAIL|bad |annot|ismatch|softdat: (warn|error)|never|exit [1-9]' "$3" |
        grep -Ev '^( |connection [0-9]+ |iwarp-dump: )' | head -n 12)
  fi
}

note() {  # note TEXT: a deliberate exclusion, with its reason, in the summary
  results+=("NOTE       $1")
  echo "== NOTE $1"
}

# wait_ready KIND LOG PID PORT: until the server can take a connection, 60 s at most. interop_peer
# says "ready"; dtest and dapltest do not, so their listening port is looked for (a TCP listener
# for softdat-tcp and siw; rdma_cm listeners on rxe are invisible to ss: there dapltest's ready
# line, as a fixed pause was too short on a loaded host).
wait_ready() {
  for _ in $(seq 600); do
    kill -0 "$3" 2>/dev/null || return 1
    case $1 in
      peer) grep -q 'ready on port' "$2" && return 0 ;;
      # RoCE: an rdma_cm listener has no socket ss could see; dapltest's server says when it
      # listens, dtest's listens on a TCP port first.
      rxe) { grep -q 'Service Point Ready' "$2" || ss -ltn 2>/dev/null | grep -q ":$4 "; } && return 0 ;;
      *) ss -ltn 2>/dev/null | grep -q ":$4 " && return 0 ;;
    esac
    sleep 0.1
  done
  return 1
}

# pair NAME SERVER_CONF CLIENT_CONF READY(peer|tcp|rxe) PORT SERVER_ARGV... -- CLIENT_ARGV...
#      [-- QUIT_ARGV...]: the server with its dat.conf in the background, the client with its own
# once the server is ready, then the optional quit command (dapltest's server runs until told).
# Every process is bounded in time; all must exit 0; dtest and dapltest also print their success.
pair() {
  local name=$1 sconf=$2 cconf=$3 ready=$4 port=$5; shift 5
  if [ -n "$only" ] && ! [[ "$name" =~ $only ]]; then return; fi
  local server=() client=() quit=()
  while [ "$1" != -- ]; do server+=("$1"); shift; done; shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do client+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; quit=("$@"); }
  local log=$work/$name.log cap=$work/$name.pcap t0=$SECONDS td=
  rm -f "$cap" "$work/$name.sockets"
  : >"$log"
  # softdat-tcp and siw speak iWARP over TCP on siw0's address: capture it (loopback in the guest).
  if [[ "$sconf $cconf" == *tcp-* || "$sconf $cconf" == *-siw* ]]; then
    tcpdump -i lo -U -B 16384 -s 0 -w "$cap" "host $siw_ip and tcp and not port 15828 ${capture_filter:-}" \
      >/dev/null 2>&1 &
    td=$!
    sleep 0.5
  fi
  DAT_OVERRIDE=$work/$sconf.conf timeout 240 "${server[@]}" >>"$log" 2>&1 &
  local spid=$!
  wait_ready "$ready" "$log" $spid "$port" || echo "server never became ready" >>"$log"
  DAT_OVERRIDE=$work/$cconf.conf timeout 200 "${client[@]}" >>"$log" 2>&1
  local crc=$? qrc=0
  if [ $crc != 0 ]; then
    # The guest's TCP sockets as the client failed, while the server still runs: when rdma_cm's
    # port for a siw connection is one another socket holds (docs/WIRE.md, "Ports": "Address
    # already in use"), the holder is among them (listeners and sockets without SO_REUSEADDR).
    ss -tanpe >"$work/$name.sockets" 2>&1
  fi
  if [ ${#quit[@]} -gt 0 ]; then DAT_OVERRIDE=$work/$cconf.conf timeout 60 "${quit[@]}" >>"$log" 2>&1; qrc=$?; fi
  wait $spid
  local src=$? rc=0
  [ $crc = 0 ] && [ $src = 0 ] && [ $qrc = 0 ] || rc=1
  case $name in
    *dtestx*) [ "$(grep -c 'IB extension test - .* PASSED' "$log")" -ge 2 ] || rc=1 ;;
    *dtest*) [ "$(grep -c 'DAPL Test Complete. PASSED' "$log")" -ge 2 ] || rc=1 ;;
    *dapltest*)
      grep -q 'End of Work -- Client Exiting' "$log" || rc=1
      grep -q 'DT_cs_Server (interop):  Exiting.' "$log" || rc=1
      grep -E 'rror|Fail|fail|FAIL|bad |annot|ismatch' "$log" >/dev/null && rc=1 ;;
  esac
  grep -q 'softdat: error' "$log" && rc=1
  echo "server exit $src, client exit $crc, quit exit $qrc" >>"$log"
  if [ -n "$td" ]; then
    sleep 0.3
    kill "$td" 2>/dev/null
    wait "$td" 2>/dev/null
    if [ $rc != 0 ] && [ -s "$cap" ]; then
      echo "--- iwarp-dump of the capture (last 40 lines):" >>"$log"
      "$dump" "$cap" 2>&1 | tail -n 40 >>"$log"
    elif [ $rc = 0 ] && [ "${keep_capture:-0}" != 1 ]; then
      rm -f "$cap"
    fi
  fi
  record "$name" $rc "$log" $((SECONDS - t0))
  if [ -s "$work/$name.sockets" ]; then
    echo "   | TCP sockets when the client failed (ss -tanpe):"
    head -n 80 "$work/$name.sockets" | sed 's/^/   | /'
  fi
}

# The stock consumers between two providers. dtest: its default moves 1000 x 4 MiB each way
# (hours under TCG); -B 10 -b 65536 keeps every phase (Send, RDMA Write, RDMA Read, each checked).
# dapltest -T T -V: SR, RW and RR from both sides, data checked.
# Each pair listens on a port of its own: a listener's port may linger after its process. Below
# the ephemeral range (32768 and up), where an earlier client connection's local end may be.
next_port=27500
stock_pairs() {  # stock_pairs NAME SERVER_CONF CLIENT_CONF READY SERVER_IP [REASON_TO_SKIP_DTEST]
  local name=$1 s=$2 c=$3 ready=$4 ip=$5 skip=${6:-}
  if [ -n "$skip" ]; then
    { [ -z "$only" ] || [[ "$name-dtest" =~ $only ]]; } && note "$name-dtest not run: $skip"
  else
    pair "$name-dtest" "$s" "$c" "$ready" 15828 dtest -s -P interop -B 10 -b 65536 -- \
      dtest -P interop -h "$ip" -B 10 -b 65536
  fi
  local port=$((next_port++))
  pair "$name-dapltest" "$s" "$c" "$ready" $port dapltest -T S -D interop -n $port -- \
    dapltest -T T -s "$ip" -D interop -n $port -i 20 -V client SR 256 client RW 65536 client RR 65536 \
      server SR 256 server RW 65536 server RR 65536 -- \
    dapltest -T Q -s "$ip" -D interop -n $port
}

# interop_peer's cases; the low watermark only where the server is softdat (OFED DAPL does not
# implement dat_srq_set_lw). After a connection of OFED DAPL's on siw that ended abnormally (a
# reject; an abrupt disconnect, too), the next connection on that IA now and then never reaches
# ESTABLISHED on the OFED side (seen as server and as client, not root-caused; docs/WIRE.md,
# interop): the abrupt disconnect comes last in its process pair, and the reject gets a pair of
# its own, each on a fresh IA.
peer_pair() {  # peer_pair NAME SERVER_CONF CLIENT_CONF SERVER_IP SERVER_OPTIONS CLIENT_OPTIONS
  local name=$1 s=$2 c=$3 ip=$4 sopts=$5 copts=$6
  local cases=private-data,disconnect-graceful,read-large,write-large,srq-sends
  case $s in tcp-*|verbs-*) cases=$cases,low-watermark ;; esac
  cases=$cases,disconnect-abrupt
  local list port suffix
  for list in "$cases" reject; do
    port=$((next_port++)) suffix=cases
    [ "$list" = reject ] && suffix=reject
    # shellcheck disable=SC2086  # option lists
    pair "$name-$suffix" "$s" "$c" peer 0 \
      "$peer" server --ia interop --port $port --cases "$list" $sopts -- \
      "$peer" client --ia interop --port $port --host "$ip" --cases "$list" $copts
  done
}

race_reason="dtest rewrites its RDMA Read source while the peer reads it; siw sends that Read Response zero-copy after computing its CRC, so with CRC on softdat (rightly) refuses it about 1 run in 3 (C-crc-race tests that refusal on purpose; dapltest and the cases run with CRC on here)"

# --- A. softdat-tcp <-> kernel siw ----------------------------------------------------------------
# CRC off is run against the stock provider (OFED DAPL); softdat-verbs on siw0 runs with CRC on.
for siw in ofed-siw verbs-siw; do
  opts_siw="--iwarp"; opts_tcp="--iwarp"
  crcs="crc nocrc"
  [ $siw = ofed-siw ] && { opts_siw="--iwarp --self-ofed"; opts_tcp="--iwarp --peer-ofed"; }
  [ $siw = verbs-siw ] && crcs=crc
  for crc in $crcs; do
    tcp=tcp-$crc
    skip=""; [ $crc = crc ] && skip=$race_reason
    stock_pairs "A-$tcp-server-$siw-client" "$tcp" "$siw" tcp $siw_ip "$skip"
    stock_pairs "A-$siw-server-$tcp-client" "$siw" "$tcp" tcp $siw_ip
    peer_pair "A-$tcp-server-$siw-client" "$tcp" "$siw" $siw_ip "$opts_tcp" "$opts_siw"
    peer_pair "A-$siw-server-$tcp-client" "$siw" "$tcp" $siw_ip "$opts_siw" "$opts_tcp"
  done
done

# --- B. softdat-verbs <-> OFED DAPL -----------------------------------------------------------------
for dev in rxe siw; do
  if [ $dev = rxe ]; then ip=$rxe_ip ready=rxe link="--padded"; else ip=$siw_ip ready=tcp link="--iwarp"; fi
  stock_pairs "B-verbs-$dev-server-ofed-client" "verbs-$dev" "ofed-$dev" $ready $ip
  stock_pairs "B-ofed-$dev-server-verbs-client" "ofed-$dev" "verbs-$dev" $ready $ip
  peer_pair "B-verbs-$dev-server-ofed-client" "verbs-$dev" "ofed-$dev" $ip "$link --peer-ofed" "$link --self-ofed"
  peer_pair "B-ofed-$dev-server-verbs-client" "ofed-$dev" "verbs-$dev" $ip "$link --self-ofed" "$link --peer-ofed"
done

# Stock dtestx (RC: RDMA Write with immediate data, Compare and Swap, Fetch and Add each way, the
# counters with -p) between softdat-verbs and OFED DAPL on rxe0, both directions. Its server reads
# the client's address before it creates its PSP: the client goes through the hand-off relay
# (guest_dtestx_client.sh; the rdma_cm PSP is invisible to ss, hence THEN_PORT 0). OFED DAPL's UD
# form fails on rxe in this guest (create_qp: Invalid argument), so UD runs softdat-verbs with
# itself (testing/vm/guest_verbs_suite.sh).
for server in verbs ofed; do
  client=ofed; [ $server = ofed ] && client=verbs
  pair "B-$server-rxe-server-$client-client-dtestx" "$server-rxe" "$client-rxe" tcp 15828 dtestx -P interop -s -p -- \
    "$dtestx_client" "$relay" $rxe_ip interop 0 dtestx -P interop -c -h $rxe_ip -p
done

# --- C. the siw CRC race, provoked ------------------------------------------------------------------
# OFED DAPL on siw0 serves Reads of a region its own thread rewrites without pause; softdat-tcp
# (CRC on, progress=poll) reads it, leaving each 256 KiB Response unread for a while so the
# rewrite lands between siw's CRC and the copy out of siw's pages (cases.cc, CrcRace). At least
# one Read must fail with the connection broken (interop_peer checks), softdat must have logged the CRC mismatch, and its LLP CRC Terminate must be on the wire.
# (Capturing siw's side would not show the bad CRC reliably anyway: on loopback tcpdump copies a
# zero-copy page when it is sent, the receiver reads it later.)
if [ -z "$only" ] || [[ C-crc-race =~ $only ]]; then
  # Only softdat's direction is captured: the Read Requests and the Terminate. siw's 256 KiB Read
  # Responses, at full speed, make a TCG guest's tcpdump drop packets.
  keep_capture=1 capture_filter="and dst port 47700" pair C-crc-race ofed-siw tcp-crc-poll peer 0 \
    "$peer" server --ia interop --port 47700 --cases crc-race --iwarp -- \
    "$peer" client --ia interop --port 47700 --host $siw_ip --cases crc-race --iwarp --attempts 3 --reads 10
  grep 'crc-race: .* refusal' "$work/C-crc-race.log" | sed 's/^/   | /'  # how soon the race showed
  log=$work/C-crc-race-wire.log
  t0=$SECONDS
  "$dump" --port=47700 "$work/C-crc-race.pcap" >"$log" 2>&1
  rc=0
  grep -Eq 'tcp .*: (FPDU CRC mismatch|terminating the connection: MPA: CRC error)' "$work/C-crc-race.log" || { echo "softdat did not log the CRC mismatch" >>"$log"; rc=1; }
  grep -q 'op=7 Terminate.*ctrl=2002.*layer=2 etype=0 code=0x02' "$log" ||
    { echo "no LLP CRC Terminate (RFC order) from softdat on the wire" >>"$log"; rc=1; }
  record "C-crc-race-on-the-wire: iwarp-dump finds the LLP CRC Terminate softdat sent" $rc "$log" $((SECONDS - t0))
fi

echo
echo "interop suite ($((SECONDS - start)) s):"
printf '%s\n' "${results[@]}"
echo "failed: $failed"
[ $failed = 0 ]
