#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The decisions of testing/vm/run.sh that need no guest: what the work-dir cleanup removes, what
# the initramfs cache key depends on, and which host dirs need a share of their own.
set -euo pipefail
. "$(dirname "$0")/vm_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }

# A caller's work dir survives even when removing the runner's own files fails (it once fell
# through to rm -rf of the whole dir).
removed=()
rm() { removed+=("${*: -1}"); return 1; }   # every removal fails, and is recorded
vm_work_cleanup 1 /some/callers/dir || true
[ "${removed[*]}" = "/some/callers/dir/.softdat-vm" ] || fail "KEEP=1 removed: ${removed[*]}"
removed=()
vm_work_cleanup 0 /runner/made/dir || true
[ "${removed[*]}" = "/runner/made/dir" ] || fail "KEEP=0 removed: ${removed[*]}"
unset -f rm

# The key changes with the module set (it once hashed only the kernel, /init and busybox).
busybox=$(mktemp); trap 'command rm -f "$busybox"' EXIT; echo binary >"$busybox"
a=$(vm_initrd_key 6.1.0 "init" "kernel/net/9p" "$busybox")
b=$(vm_initrd_key 6.1.0 "init" "kernel/net/9p kernel/net/sched" "$busybox")
c=$(vm_initrd_key 6.1.0 "init" "kernel/net/9p" "$busybox")
[ "$a" != "$b" ] || fail "the module set does not change the key"
[ "$a" = "$c" ] || fail "the key is not stable"
[ "$(vm_initrd_key 6.1.1 init kernel/net/9p "$busybox")" != "$a" ] || fail "the kernel does not change the key"
echo other >"$busybox"
[ "$(vm_initrd_key 6.1.0 init kernel/net/9p "$busybox")" != "$a" ] || fail "busybox does not change the key"

# Only dirs the guest's tmpfs hides need a share.
[ "$(vm_hidden_dirs /tmp/checkout /home/me/src /run/user/0/x /tmpfoo /tmp)" = "$(printf '/tmp/checkout\n/run/user/0/x\n/tmp')" ] ||
  fail "hidden dirs: $(vm_hidden_dirs /tmp/checkout /home/me/src /run/user/0/x /tmpfoo /tmp)"
echo "vm_lib: cleanup, initramfs key and shares as expected"
