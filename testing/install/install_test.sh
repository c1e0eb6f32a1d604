#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tools/install/install.sh as `tools/dev install` runs it, into a temporary prefix and a temporary
# dat.conf (never /etc/dat.conf), inside a network namespace of the test's own where an interface
# with an IPv4 address and fake RDMA devices make the lines it adds known in advance:
#   - the files land under the prefix; the dat.conf gets softdat's block, every other line intact,
#     and a backup of the file as it was;
#   - a second install changes nothing (not a byte, not a timestamp);
#   - the installed datinfo opens the installed IAs, and the stock dtest from dapl2-utils passes
#     over softdat-tcp through the stock registry with no DAT_OVERRIDE (the test's private mount
#     namespace shows the temporary dat.conf as /etc/dat.conf), using only what was installed;
#   - uninstall leaves the dat.conf byte for byte as it was and the prefix gone.
#   install_test.sh HANDOFF_RELAY INSTALL_SH LIB DATINFO DATPERF MAN_PAGE...
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }

# Our own network and mount namespaces: dtest's fixed ports meet nobody else's, the interfaces
# are ours, and /etc/dat.conf can be our temporary one without touching the machine's.
# shellcheck source=testing/shell_helpers.sh
. testing/shell_helpers.sh  # Bazel runs tests from the workspace root of the runfiles
PRIVATE_NET_MOUNT=1 enter_private_net "$@"
ip link add vsoft0 type veth peer name vsoft1
ip addr add 10.77.0.1/24 dev vsoft0
ip link set vsoft0 up
ip link set vsoft1 up

relay=$(realpath "$1") installer=$(realpath "$2") lib=$(realpath "$3") datinfo=$(realpath "$4") datperf=$(realpath "$5")
shift 5
mans=()
for page in "$@"; do mans+=(--man "$(realpath "$page")"); done
work=$TEST_TMPDIR
prefix=$work/prefix
conf=$work/dat.conf
run_install() {
  "$installer" install --prefix "$prefix" --dat-conf "$conf" --lib "$lib" --bin "$datinfo" --bin "$datperf" "${mans[@]}"
}

# The machine's own dat.conf as it is (read only), plus a line of the user's own that names an IA
# softdat would add: that line must win and stay.
# Debian's /etc/dat.conf has no newline after its last line: keep it last, as it is.
{
  echo 'softdat-verbs-rxe9 u2.0 nonthreadsafe default /opt/mine/libsoftdat.so.2 softdat.2.0 "verbs rxe9 1" ""'
  if [[ -r /etc/dat.conf ]]; then cat /etc/dat.conf; else printf '# DAT v2.0\nofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""'; fi
} >"$conf"
cp -p "$conf" "$work/seed.conf"
# Fake RDMA devices: rxe9 (one port, taken by the user's line) and mlx9 (two ports).
export SOFTDAT_SYSFS_INFINIBAND=$work/sys
mkdir -p "$work/sys/rxe9/ports/1" "$work/sys/mlx9/ports/1" "$work/sys/mlx9/ports/2"

echo "--- install"
run_install
for file in lib/libsoftdat.so.2 bin/datinfo bin/datperf share/man/man1/datinfo.1 share/man/man1/datperf.1 \
  share/man/man7/softdat.7; do
  [[ -f $prefix/$file ]] || fail "$prefix/$file was not installed"
done
[[ -x $prefix/bin/datinfo ]] || fail "datinfo is not executable"
cmp -s "$conf.softdat-backup" "$work/seed.conf" || fail "the backup is not the dat.conf as it was"
block=$(sed -n '/^# softdat: begin/,/^# softdat: end/p' "$conf")
echo "$block"
expected=$(printf '%s\n' softdat-tcp softdat-tcp-vsoft0 softdat-verbs-mlx9-1 softdat-verbs-mlx9-2)
[[ $(grep -v '^#' <<<"$block" | awk '{print $1}' | sort) == "$expected" ]] || fail "unexpected IA lines in the block"
grep -q "^softdat-tcp-vsoft0 u2.0 nonthreadsafe default $prefix/lib/libsoftdat.so.2 softdat.2.0 \"tcp vsoft0\" \"\"$" "$conf" ||
  fail "the vsoft0 line is wrong"
diff <(sed '/^# softdat: begin/,/^# softdat: end/d' "$conf") <(sed '$a\' "$work/seed.conf") >/dev/null ||
  fail "lines outside softdat's block changed"

echo "--- a second install changes nothing"
snapshot() {
  find "$prefix" "$work" -maxdepth 0 >/dev/null
  { find "$prefix" "$conf" "$conf.softdat-backup" -printf '%p %s %m %T@\n'; find "$prefix" -type f -exec sha256sum {} +;
    sha256sum "$conf"; ls -a "$work"; } | sort
}
before=$(snapshot)
sleep 1.1  # a rewrite would show in the timestamps
run_install
[[ $(snapshot) == "$before" ]] || { diff <(echo "$before") <(snapshot) || true; fail "the second install changed something"; }

echo "--- the installed datinfo and man pages"
export DAT_OVERRIDE=$conf
"$prefix/bin/datinfo" -l | grep -q "^softdat-tcp-vsoft0 " || fail "datinfo -l does not list softdat-tcp-vsoft0"
"$prefix/bin/datinfo" softdat-tcp softdat-tcp-vsoft0 | tee "$work/datinfo.out"
grep -qE '^softdat-tcp-vsoft0 +softdat .* 10\.77\.0\.1 ' "$work/datinfo.out" || fail "softdat-tcp-vsoft0 is not on 10.77.0.1"
MANWIDTH=80 man -M "$prefix/share/man" 7 softdat 2>/dev/null | grep -q "^SOFTDAT(7)" || fail "man -M PREFIX/share/man 7 softdat"

echo "--- stock dtest over the installed softdat-tcp, no DAT_OVERRIDE"
# In this mount namespace only, /etc/dat.conf is the installed-into file: dtest finds softdat-tcp
# where every DAT consumer looks.
[[ -f /etc/dat.conf ]] || fail "/etc/dat.conf is missing: install libdapl2 (tools/dev deps does)"
mount --bind "$conf" /etc/dat.conf
unset DAT_OVERRIDE
sanitizer_env "$lib"
# Plain dtest moves gigabytes: minutes through ThreadSanitizer's copies, so there its short form.
dtest_flags=()
[[ ${SANITIZER_ENV[*]:-} == *libtsan* ]] && dtest_flags=(-B 64 -b 4096)
timeout 120 env "${SANITIZER_ENV[@]}" dtest -s -P softdat-tcp "${dtest_flags[@]}" >"$work/server.log" 2>&1 &
server=$!
wait_listening 15828 "$server" || fail "dtest's server never listened: $(cat "$work/server.log")"
relay_dtest_handoff "$relay" "$server" "$work" || fail "dtest's server: $(cat "$work/server.log")"
status=0
timeout 100 env "${SANITIZER_ENV[@]}" dtest -P softdat-tcp -h 127.0.0.1 "${dtest_flags[@]}" >"$work/client.log" 2>&1 || status=$?
server_status=0
wait "$server" || server_status=$?
tail -3 "$work/client.log"
[[ $status -eq 0 && $server_status -eq 0 ]] ||
  fail "dtest: client exit $status, server exit $server_status; client: $(cat "$work/client.log"); server: $(cat "$work/server.log")"
grep -q "DAPL Test Complete. PASSED" "$work/client.log" || fail "dtest client did not pass"
grep -q "DAPL Test Complete. PASSED" "$work/server.log" || fail "dtest server did not pass"
! grep -q "softdat: error" "$work/client.log" "$work/server.log" || fail "softdat logged an error"
umount /etc/dat.conf

echo "--- uninstall"
"$installer" uninstall --prefix "$prefix"
cmp "$conf" "$work/seed.conf" || fail "the dat.conf is not as it was"
[[ ! -e $conf.softdat-backup ]] || fail "the backup was left behind though it equals the dat.conf"
[[ ! -e $prefix ]] || fail "left under the prefix: $(find "$prefix")"
status=0
"$installer" uninstall --prefix "$prefix" 2>"$work/err" || status=$?
[[ $status -eq 2 ]] && grep -q "no softdat installation under $prefix" "$work/err" || fail "a second uninstall: exit $status"
cmp -s "$conf" "$work/seed.conf" || fail "a second uninstall touched the dat.conf"
echo "PASS: install, idempotent reinstall, datinfo, man, stock dtest, exact uninstall"
