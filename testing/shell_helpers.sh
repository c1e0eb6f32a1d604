# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Shell helpers for tests that run stock DAT consumers (dtest) and the examples over softdat:
# sourced, never run.
#
#   enter_private_net "$@"   first thing in a test script: re-runs the script in network (and,
#                            with PRIVATE_NET_MOUNT=1, mount) namespaces of its own, with
#                            loopback up, so fixed ports meet nobody else's. Fails the test where
#                            no namespace can be made (unshare needs root or user namespaces).
#   listening PORT           whether a TCP socket listens on PORT in this namespace, read from
#                            /proc/net/tcp{,6} (state 0A); it never connects.
#   wait_listening PORT PID  waits up to 15 s for PORT to listen while PID lives.
#   cm_listening PORT        whether an rdma_cm listener (any device and address) is on PORT, as
#                            `rdma resource show cm_id` lists it: rdma_cm listeners are no
#                            sockets (on RoCE nothing listens in TCP at all).
#   wait_cm_listening PORT PID
#                            waits up to 60 s (a DAT IA opens slowly under TCG) for an rdma_cm
#                            listener on PORT while PID lives.
#   relay_dtest_handoff RELAY PID DIR
#                            stock dtest's server writes its DAT address to the first connection
#                            on 15828 and only then creates its PSP (45248): a fast client
#                            connects before the PSP listens. Run after wait_listening 15828 and
#                            before the client: RELAY (//testing/consumers:handoff_relay) takes
#                            the address and serves it again once the PSP listens. Waits up to
#                            60 s while the server PID lives; the relay's files go in DIR; on
#                            failure prints its reason.
#   sanitizer_env LIB        under --config=asan/ubsan/tsan the provider LIB is sanitized but a
#                            stock consumer (or a plain cc build) is not: sets the array
#                            SANITIZER_ENV to LD_PRELOAD of the runtime LIB needs and options that
#                            leave the consumer's own leaks and races to it (empty otherwise);
#                            run such a consumer as: env "${SANITIZER_ENV[@]}" dtest ...

enter_private_net() {
  if [[ -z ${PRIVATE_NET_ENTERED:-} ]]; then
    export PRIVATE_NET_ENTERED=1
    local mount="" flags
    [[ ${PRIVATE_NET_MOUNT:-0} == 1 ]] && mount=m
    for flags in "-n$mount" "-rn$mount"; do
      if unshare "$flags" true 2>/dev/null; then exec unshare "$flags" "$0" "$@"; fi
    done
    echo "FAIL: cannot create a network namespace (unshare -n needs root, unshare -rn user namespaces)"
    exit 1
  fi
  ip link set lo up
}

listening() {
  awk -v port="$(printf ':%04X' "$1")" '$4 == "0A" && substr($2, length($2) - 4) == port { found = 1 } END { exit !found }' \
    /proc/net/tcp /proc/net/tcp6
}

cm_listening() {
  rdma resource show cm_id 2>/dev/null | grep -qE "state LISTEN .*src-addr [^ ]*:$1( |\$)"
}

# wait_for TRIES PAUSE PID CMD...: CMD until it succeeds, up to TRIES times PAUSE seconds apart,
# while PID lives.
wait_for() {
  local tries=$1 pause=$2 pid=$3 _
  shift 3
  for _ in $(seq "$tries"); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep "$pause"
  done
  "$@"
}

wait_listening() { wait_for 300 0.05 "$2" listening "$1"; }
wait_cm_listening() { wait_for 600 0.1 "$2" cm_listening "$1"; }

relay_dtest_handoff() {
  local relay=$1 server=$2 ready=$3/relay.ready _
  rm -f "$ready"
  "$relay" 15828 128 45248 60 "$ready" >"$3/relay.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1200); do
    [[ -e $ready ]] && return 0
    kill -0 "$pid" 2>/dev/null && kill -0 "$server" 2>/dev/null || break
    sleep 0.05
  done
  [[ -e $ready ]] && return 0
  echo "the hand-off was not relayed: $(cat "$3/relay.log")"
  return 1
}

sanitizer_env() {
  local runtime
  runtime=$(ldd "$1" 2>/dev/null | grep -oE '/[^ ]*lib(asan|tsan|ubsan)\.so[^ ]*' | head -1) || true
  SANITIZER_ENV=()
  [[ -n $runtime ]] && SANITIZER_ENV=("LD_PRELOAD=$runtime" ASAN_OPTIONS=detect_leaks=0 TSAN_OPTIONS=halt_on_error=0:exitcode=0)
  return 0
}
