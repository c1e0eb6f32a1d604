# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Pieces of testing/vm/run.sh that decide something, kept apart so that testing/vm/vm_lib_test.sh
# can check them without booting a guest. Sourced by run.sh; bash.

# vm_work_cleanup KEEP DIR: after a run, removes the runner's own files from the work dir DIR, and
# DIR itself only when the runner made it (KEEP=0). A failure to remove the runner's files never
# turns into removing the caller's DIR.
vm_work_cleanup() {
  if [ "$1" = 1 ]; then
    rm -rf "$2/.softdat-vm"
  else
    rm -rf "$2"
  fi
}

# vm_initrd_key KERNEL_VERSION INIT_SCRIPT MODULE_SET BUSYBOX: the cache key of an initramfs: it
# changes with everything that goes into one (the kernel, /init, which modules, busybox).
vm_initrd_key() {
  printf '%s\n%s\n%s\n' "$1" "$2" "$3" | cat - "$4" | sha256sum | cut -c1-16
}

# vm_hidden_dirs DIR...: those of DIR that the guest cannot see through its view of the host root,
# because the guest mounts fresh tmpfs over /tmp and /run: each must become a share of its own.
vm_hidden_dirs() {
  local d
  for d in "$@"; do
    case $d in /tmp|/tmp/*|/run|/run/*) echo "$d" ;; esac
  done
}
