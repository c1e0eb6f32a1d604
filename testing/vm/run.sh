#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs one command inside a throwaway qemu guest that has real RDMA software devices (rxe0 = Soft-RoCE,
# siw0 = Soft-iWARP), because the host kernel has no RDMA and the verbs transport must be tested on
# real kernel devices. The guest runs Debian's stock 6.1 kernel under TCG (the host's /dev/kvm is a
# nested kvm_pvm on which stock kernels hang), sees the host root read-only over 9p, and gets one
# writable work dir. The command's exit status becomes this script's exit status.
#
# Usage: testing/vm/run.sh [--prepare-only] [--] COMMAND [ARG...]
#   COMMAND runs with bash inside the guest, chrooted into the host root, in the caller's cwd.
#   In the guest: SOFTDAT_VM=1, SOFTDAT_VM_WORK=<writable dir>, rxe0 on dummy0 (10.0.0.1/24),
#   siw0 on dummy1 (10.0.1.1/24), RLIMIT_MEMLOCK unlimited, sch_netem and veth loaded. The guest
#   /tmp and /run are empty tmpfs, except for the caller's cwd (wherever it is) and the dirs of
#   SOFTDAT_VM_SHARE, shared read-only at their own paths.
# Environment:
#   SOFTDAT_VM_CACHE    cache dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/softdat-vm)
#   SOFTDAT_VM_WORK     writable dir shared into the guest at the same path (default: a fresh dir
#                       under the cache, removed afterwards); copy Bazel outputs there
#   SOFTDAT_VM_TIMEOUT  seconds before the guest is killed (default 600)
#   SOFTDAT_VM_KERNEL   kernel version to use, e.g. 6.1.0-56-amd64 (default: the cached one, else
#                       what linux-image-amd64 depends on)
#   SOFTDAT_VM_VERBOSE  1 to show the kernel's boot messages
#   SOFTDAT_VM_SHARE    more host dirs (colon-separated) the guest must see at their own path;
#                       only those under /tmp or /run need it (the caller's cwd is added by itself)
# Exit status: the command's, 124 if the guest timed out, 125 if the runner itself failed.
set -euo pipefail

die() { echo "vm/run.sh: $*" >&2; exit 125; }
# shellcheck source=testing/vm/vm_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/vm_lib.sh"
log() { echo "vm/run.sh: $*" >&2; }

PREPARE_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --prepare-only) PREPARE_ONLY=1; shift ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
[ $PREPARE_ONLY = 1 ] || [ $# -gt 0 ] || die "usage: run.sh [--prepare-only] [--] COMMAND [ARG...]"

CACHE=${SOFTDAT_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/softdat-vm}
TIMEOUT=${SOFTDAT_VM_TIMEOUT:-600}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd -P)

for t in qemu-system-x86_64 busybox cpio depmod gzip timeout; do
  command -v $t >/dev/null || [ -x /bin/$t ] || die "missing $t (see testing/vm/README.md for the packages)"
done

# Two runners preparing the same cache at once would corrupt it: serialise preparation.
exec 9>"$CACHE/.lock"
timeout 900 flock 9 || die "timed out waiting for the cache lock $CACHE/.lock"

# --- kernel version: pinned by the cache so that a cached run needs no apt access ---------------
KV=${SOFTDAT_VM_KERNEL:-}
[ -n "$KV" ] || { [ -f "$CACHE/kernel-version" ] && KV=$(cat "$CACHE/kernel-version"); } || true
if [ -z "$KV" ]; then
  KV=$(timeout 60 apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-//p' | head -1)
  if [ -z "$KV" ]; then  # a fresh machine may have no package lists yet
    log "no package lists: apt-get update"
    timeout 300 apt-get update -qq || true
    KV=$(timeout 60 apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-//p' | head -1)
  fi
  [ -n "$KV" ] || die "cannot find the kernel that linux-image-amd64 depends on (set SOFTDAT_VM_KERNEL)"
fi
KB=$(echo "$KV" | cut -d. -f1,2)
K=$CACHE/$KV
mkdir -p "$K"

# --- 1. kernel, headers, kbuild, source: downloaded and unpacked, never installed on the host ---
# The .debs are deleted once siw.ko is built (they are most of the cache's size), so fetch them
# again if an interrupted run left the siw stage to do.
if [ ! -f "$K/.unpacked" ] || { [ ! -f "$K/.siw" ] && ! ls "$K"/dl/linux-source-*.deb >/dev/null 2>&1; }; then
  log "downloading and unpacking kernel $KV"
  rm -rf "$K/dl" "$K/kroot" "$K/hdr"; mkdir -p "$K/dl"
  (cd "$K/dl" && timeout 600 apt-get download -q linux-image-$KV linux-headers-$KV \
      linux-headers-${KV%-amd64}-common linux-kbuild-$KB linux-source-$KB 2>&1 | grep -v unsandboxed || true)
  ls "$K"/dl/linux-image-*.deb "$K"/dl/linux-source-*.deb >/dev/null || die "apt-get download failed"
  for d in "$K"/dl/linux-image-*.deb; do dpkg -x "$d" "$K/kroot"; done
  for d in "$K"/dl/linux-headers-*.deb "$K"/dl/linux-kbuild-*.deb; do dpkg -x "$d" "$K/hdr"; done
  # The headers package points at /usr/src; point it at the unpacked copy instead.
  sed -i "s#/usr/src/#$K/hdr/usr/src/#" "$K/hdr/usr/src/linux-headers-$KV/Makefile"
  touch "$K/.unpacked"
fi

# --- 2. siw.ko: Debian builds its kernels with CONFIG_RDMA_SIW off, so build it out of tree -------
if [ ! -f "$K/.siw" ]; then
  log "building siw.ko from linux-source-$KB"
  rm -rf "$K/src" "$K/siw"; mkdir -p "$K/src"
  dpkg-deb --fsys-tarfile "$K"/dl/linux-source-${KB}_*.deb |
    tar -xO --wildcards "./usr/src/linux-source-$KB.tar.xz" |
    tar -xJ -C "$K/src" --wildcards "linux-source-$KB/drivers/infiniband/sw/siw/*"
  cp -r "$K/src/linux-source-$KB/drivers/infiniband/sw/siw" "$K/siw"
  rm -rf "$K/src"
  timeout 600 make -s -C "$K/hdr/usr/src/linux-headers-$KV" M="$K/siw" CONFIG_RDMA_SIW=m modules
  mkdir -p "$K/kroot/lib/modules/$KV/extra"
  strip --strip-debug "$K/siw/siw.ko" -o "$K/kroot/lib/modules/$KV/extra/siw.ko"
  depmod -b "$K/kroot" "$KV"
  rm -rf "$K/siw" "$K/dl"
  touch "$K/.siw"
fi

# --- 3. initramfs: busybox + the modules the guest needs; rebuilt when this script changes ------
# /init loads every module from the initramfs (so the guest never reads the cache, which may sit
# under the host's /tmp that the guest hides), mounts the host root read-only, the host dirs
# under /tmp or /run the command needs (its own shares), and the work dir read-write, then runs
# the guest script chrooted into the host root. sch_netem and veth are loaded for suites that
# shape traffic between network namespaces (`tc qdisc ... netem`).
INIT=$(cat <<'EOI'
#!/bin/sh
export PATH=/bin:/sbin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
W=$(sed -n 's/.*softdat_work=\([^ ]*\).*/\1/p' /proc/cmdline)
fail() { echo "SOFTDAT-VM: init failed: $*"; poweroff -f; }
for m in virtio_pci 9pnet_virtio 9p configfs crc32_generic crc32c_generic ib_uverbs rdma_ucm rdma_rxe siw \
    sch_netem veth; do
  modprobe $m || fail "modprobe $m"
done
modprobe dummy numdummies=0 || fail "modprobe dummy"
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host || fail "mount host root"
for d in proc sys dev; do mount --rbind /$d /host/$d; done
mount -t tmpfs tmp /host/tmp; mount -t tmpfs run /host/run
# Host dirs under /tmp or /run (a checkout there, its Bazel outputs) come as shares of their own,
# mounted before the work dir, which may lie inside one of them.
for share in $(sed -n 's/.*softdat_shares=\([^ ]*\).*/\1/p' /proc/cmdline | tr ',' ' '); do
  tag=${share%%=*}; dir=${share#*=}
  mkdir -p /host$dir && mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 $tag /host$dir ||
    fail "mount share $dir"
done
mkdir -p /host$W
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 work /host$W || fail "mount work dir"
chroot /host /bin/bash $W/.softdat-vm/guest.sh
sync; poweroff -f
EOI
)
# The module dirs copied into the initramfs (relative to the kernel's module tree).
MODULE_SET="kernel/drivers/virtio kernel/net/9p kernel/fs/9p kernel/fs/netfs kernel/fs/fscache \
kernel/fs/configfs kernel/drivers/infiniband/core kernel/drivers/infiniband/sw kernel/net/ipv4 \
kernel/net/ipv6 kernel/net/sched kernel/crypto kernel/arch/x86/crypto kernel/lib extra \
kernel/drivers/net/dummy.ko kernel/drivers/net/veth.ko"
INIT_KEY=$(vm_initrd_key "$KV" "$INIT" "$MODULE_SET" /bin/busybox)
INITRD=$K/initrd-$INIT_KEY.cpio.gz
if [ ! -f "$INITRD" ]; then
  log "building initramfs"
  R=$K/initrd.tmp; rm -rf "$R"; mkdir -p "$R"/{bin,sbin,proc,sys,dev,host,lib/modules/$KV}
  cp /bin/busybox "$R/bin/"
  for a in sh mount mkdir modprobe poweroff cat sed cut chroot sync; do ln -sf busybox "$R/bin/$a"; done
  ln -sf ../bin/busybox "$R/sbin/modprobe"
  # shellcheck disable=SC2086  # MODULE_SET is a list of words
  (cd "$K/kroot/lib/modules/$KV" && find $MODULE_SET -name '*.ko*' 2>/dev/null | cpio -pdm --quiet "$R/lib/modules/$KV")
  cp "$K/kroot/lib/modules/$KV"/modules.{order,builtin,builtin.modinfo} "$R/lib/modules/$KV/"
  depmod -b "$R" "$KV"
  printf '%s\n' "$INIT" > "$R/init"; chmod +x "$R/init"
  rm -f "$K"/initrd-*.cpio.gz
  (cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD.tmp"
  mv "$INITRD.tmp" "$INITRD"; rm -rf "$R"
fi
echo "$KV" > "$CACHE/kernel-version"
flock -u 9

if [ $PREPARE_ONLY = 1 ]; then log "prepared $K"; exit 0; fi

# --- 4. the work dir and the guest script ------------------------------------------------------
if [ -n "${SOFTDAT_VM_WORK:-}" ]; then
  mkdir -p "$SOFTDAT_VM_WORK"; W=$(cd "$SOFTDAT_VM_WORK" && pwd -P); KEEP_WORK=1
else
  mkdir -p "$CACHE/work"; W=$(mktemp -d "$CACHE/work/run.XXXXXX"); KEEP_WORK=0
fi
case $W in *[!A-Za-z0-9._/-]*) die "work dir path must be plain (no spaces etc.): $W" ;; esac
rm -rf "$W/.softdat-vm"; mkdir -p "$W/.softdat-vm"
trap 'vm_work_cleanup $KEEP_WORK "$W"' EXIT

# The caller's cwd (a checkout anywhere, /tmp included) and SOFTDAT_VM_SHARE, where the guest's
# tmpfs over /tmp and /run would hide them: one read-only share each.
SHARE_ARGS=(); SHARES=""; n=0
IFS=: read -r -a extra_dirs <<<"${SOFTDAT_VM_SHARE:-}"
for d in $(vm_hidden_dirs "$(pwd -P)" "${extra_dirs[@]}"); do
  case $d in *[!A-Za-z0-9._/-]*) die "a dir the guest must see has an unusual path (no spaces etc.): $d" ;; esac
  case ",$SHARES," in *"=$d,"*) continue ;; esac
  SHARE_ARGS+=(-virtfs "local,path=$d,mount_tag=share$n,security_model=none,readonly=on,multidevs=remap")
  SHARES="${SHARES:+$SHARES,}share$n=$d"; n=$((n + 1))
done

{
  echo "# Generated by testing/vm/run.sh: device setup, then the caller's command."
  printf 'W=%q; CWD=%q\n' "$W" "$PWD"
  printf 'CMD=('; printf '%q ' "$@"; printf ')\n'
  cat <<'EOG'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp
export SOFTDAT_VM=1 SOFTDAT_VM_WORK=$W
setup() {
  ip link set lo up &&
  ip link add dummy0 type dummy && ip addr add 10.0.0.1/24 dev dummy0 && ip link set dummy0 up &&
  ip link add dummy1 type dummy && ip addr add 10.0.1.1/24 dev dummy1 && ip link set dummy1 up &&
  rdma link add rxe0 type rxe netdev dummy0 &&
  rdma link add siw0 type siw netdev dummy1 &&
  ulimit -l unlimited
}
if ! setup; then
  echo "SOFTDAT-VM: device setup failed"; echo 125 > $W/.softdat-vm/exit; exit
fi
echo "SOFTDAT-VM: guest ready at $(cut -d' ' -f1 /proc/uptime)s, running: ${CMD[*]}"
cd "$CWD" || { echo "SOFTDAT-VM: cannot cd into $CWD"; echo 125 > $W/.softdat-vm/exit; exit; }
"${CMD[@]}" </dev/null
rc=$?
echo "SOFTDAT-VM: command exited with $rc at $(cut -d' ' -f1 /proc/uptime)s"
echo $rc > $W/.softdat-vm/exit
EOG
} > "$W/.softdat-vm/guest.sh"

# --- 5. boot -------------------------------------------------------------------------------------
QUIET="quiet loglevel=1"; [ "${SOFTDAT_VM_VERBOSE:-0}" = 1 ] && QUIET="loglevel=7"
set +e
timeout --kill-after=10 "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 2048 -smp 2 \
  -nographic -no-reboot -nic none \
  -kernel "$K/kroot/boot/vmlinuz-$KV" -initrd "$INITRD" \
  -append "console=ttyS0 $QUIET panic=-1 softdat_work=$W${SHARES:+ softdat_shares=$SHARES}" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$W,mount_tag=work,security_model=none,multidevs=remap" "${SHARE_ARGS[@]}" </dev/null 2>&1 |
  sed -u -e 's/\x1b\[2J/\n/g' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' -e 's/\r//g'   # drop SeaBIOS's screen codes
q=${PIPESTATUS[0]}
set -e
if [ "$q" = 124 ] || [ "$q" = 137 ]; then log "guest timed out after ${TIMEOUT}s"; exit 124; fi
[ -s "$W/.softdat-vm/exit" ] || die "the guest did not report an exit status (qemu exit $q)"
exit "$(cat "$W/.softdat-vm/exit")"
