#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A checkout anywhere, /tmp and /run included, can run a guest command from its own directory: the
# guest mounts fresh tmpfs over /tmp and /run, so run.sh must share the caller's cwd (it once
# exited 127: "guest.sh: cd: ...: No such file or directory"). Boots one guest per place (about
# 15 s each under TCG).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dirs=()
trap 'rm -rf "${dirs[@]}"' EXIT
status=0
for place in /tmp /run; do
  dir=$(mktemp -d "$place/softdat-checkout-anywhere.XXXXXX")
  dirs+=("$dir")
  mkdir -p "$dir/checkout/tools"
  printf 'seen from the guest\n' >"$dir/checkout/marker"
  cat >"$dir/checkout/tools/probe.sh" <<'EOP'
#!/bin/bash
# Run by relative path from the checkout's root, as tools/dev runs the suites.
[ "$(cat marker)" = "seen from the guest" ] && echo "probe: the guest is in $(pwd)"
EOP
  chmod +x "$dir/checkout/tools/probe.sh"
  if (cd "$dir/checkout" && SOFTDAT_VM_TIMEOUT=${SOFTDAT_VM_TIMEOUT:-300} "$root/testing/vm/run.sh" tools/probe.sh); then
    echo "== PASS a checkout under $place runs guest commands from its own directory"
  else
    rc=$?; echo "== FAIL a checkout under $place: the guest command exited $rc"; status=1
  fi
done
exit $status
