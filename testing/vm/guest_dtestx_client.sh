#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The client side of a stock dtestx pair in the guest (guest_verbs_suite.sh, guest_interop.sh).
# dtestx's server writes its address to the first connection on TCP port 15828, reads the
# client's, and only then creates its PSP: a client that connects at once can find no listener.
# handoff_relay takes the server's hand-off in the client's place, answers it as a dtestx client
# at CLIENT_ADDRESS using PROVIDER would, waits for the server's PSP (THEN_PORT; 0 for an rdma_cm
# listener on RoCE, which ss cannot see: a pause), and serves the hand-off again; then the client
# runs.
# Usage: guest_dtestx_client.sh RELAY CLIENT_ADDRESS PROVIDER THEN_PORT DTESTX_ARGV...
set -uo pipefail
relay=$1 client=$2 provider=$3 then_port=$4; shift 4
ready=$(mktemp -u /tmp/dtestx-relay.XXXXXX)
"$relay" 15828 128 "$then_port" 60 "$ready" "$client" "$provider" &
relay_pid=$!
for _ in $(seq 600); do
  [ -e "$ready" ] && break
  kill -0 $relay_pid 2>/dev/null || break
  sleep 0.1
done
[ -e "$ready" ] || { echo "guest_dtestx_client.sh: the relay never got ready"; wait $relay_pid; exit 1; }
"$@"
rc=$?
wait $relay_pid
rm -f "$ready"
exit $rc
