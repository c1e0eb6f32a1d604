#!/bin/bash
# A checkout anywhere, /tmp included, can run a guest command from its own directory: the guest
# mounts fresh tmpfs over /tmp and /run, so run.sh must share the caller's cwd (it once exited
# 127: "guest.sh: cd: ...: No such file or directory"). Boots one guest (about 15 s under TCG).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d /tmp/softdat-checkout-anywhere.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/checkout/tools"
printf 'seen from the guest\n' >"$dir/checkout/marker"
cat >"$dir/checkout/tools/probe.sh" <<'EOP'
#!/bin/bash
# Run by relative path from the checkout's root, as tools/dev runs the suites.
[ "$(cat marker)" = "seen from the guest" ] && echo "probe: the guest is in $(pwd)"
EOP
chmod +x "$dir/checkout/tools/probe.sh"
cd "$dir/checkout"
if SOFTDAT_VM_TIMEOUT=${SOFTDAT_VM_TIMEOUT:-300} "$root/testing/vm/run.sh" tools/probe.sh; then
  echo "== PASS a checkout under /tmp runs guest commands from its own directory"
else
  rc=$?; echo "== FAIL a checkout under /tmp: the guest command exited $rc"; exit 1
fi
