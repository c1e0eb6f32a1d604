# Shell helpers for tests that run programs on fixed ports (stock dtest, the examples): sourced,
# never run.
#
#   enter_private_net "$@"   first thing in a test script: re-runs the script in network (and,
#                            with PRIVATE_NET_MOUNT=1, mount) namespaces of its own, with
#                            loopback up, so fixed ports meet nobody else's. Fails the test where
#                            no namespace can be made (unshare needs root or user namespaces).
#   listening PORT           whether a TCP socket listens on PORT in this namespace, read from
#                            /proc/net/tcp{,6} (state 0A); it never connects.
#   wait_listening PORT PID  waits up to 15 s for PORT to listen while PID lives.

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

wait_listening() {
  local _
  for _ in $(seq 300); do
    listening "$1" && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.05
  done
  listening "$1"
}
