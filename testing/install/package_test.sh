#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tools/install/package.sh as `tools/dev package` runs it, on the Bazel outputs:
#   - lintian (installed from Debian here if it is missing) finds no error in the package;
#   - its layout and fields are Debian's: the library in the multiarch lib dir, man pages
#     compressed, Depends on libdapl2 and the rdma-core libraries;
#   - dpkg -i installs it into a temporary root (dpkg --root, maintainer scripts run without
#     chroot under DPKG_ROOT; the dependencies are marked installed there from this machine's
#     dpkg database) whose etc/dat.conf is a copy of the machine's: softdat's lines are added,
#     every other line kept, a backup made; installing again changes nothing;
#   - the packaged datinfo opens the packaged softdat-tcp, and the stock dtest passes over it;
#   - dpkg -r removes every file and leaves etc/dat.conf byte for byte as it was.
#   package_test.sh HANDOFF_RELAY PACKAGE_SH LIB DATINFO DATPERF SRQ_ECHO_C MAN_PAGE...
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=testing/shell_helpers.sh
. testing/shell_helpers.sh  # Bazel runs tests from the workspace root of the runfiles
# shellcheck source=testing/install/dpkg_root.sh
. testing/install/dpkg_root.sh
enter_private_net "$@"  # the stock dtest's fixed ports

relay=$(realpath "$1") packager=$(realpath "$2") lib=$(realpath "$3") datinfo=$(realpath "$4") datperf=$(realpath "$5")
example=$(realpath "$6")
shift 6
mans=()
for page in "$@"; do mans+=(--man "$(realpath "$page")"); done
work=$TEST_TMPDIR

if ! command -v lintian >/dev/null; then
  echo "lintian is missing: installing it from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lintian >/dev/null ||
    fail "cannot install lintian (tools/dev deps installs it)"
fi

echo "--- package"
deb=$("$packager" --out "$work/dist" --lib "$lib" --bin "$datinfo" --bin "$datperf" "${mans[@]}" --example "$example")
arch=$(dpkg --print-architecture) multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
[[ $(basename "$deb") =~ ^softdat_[0-9]+\.[0-9]+_${arch}\.deb$ ]] || fail "package name $(basename "$deb")"
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in "./usr/lib/$multiarch/libsoftdat.so.2" ./usr/bin/datinfo ./usr/bin/datperf ./usr/share/man/man1/datinfo.1.gz \
  ./usr/share/man/man1/datperf.1.gz ./usr/share/man/man7/softdat.7.gz ./usr/share/doc/softdat/copyright \
  ./usr/share/doc/softdat/changelog.gz ./usr/share/doc/softdat/examples/srq_echo.c; do
  grep -qxF "$path" <<<"$contents" || fail "the package lacks $path"
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for dependency in libdapl2 libibverbs1 librdmacm1 libc6; do
  grep -qE "(^|, )$dependency( |,|$)" <<<"$depends" || fail "Depends lacks $dependency"
done

echo "--- licence, maintainer and changelog"
maintainer=$(dpkg-deb -f "$deb" Maintainer)
[[ $maintainer == "softdat developers <softdat@users.noreply.github.com>" ]] || fail "Maintainer: $maintainer"
[[ -z $(dpkg-deb -f "$deb" Homepage) ]] || fail "a Homepage field: softdat has none to name"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/softdat/copyright >"$work/copyright"
grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$work/copyright" ||
  fail "copyright is not machine-readable"
grep -qx 'License: BSD-2-clause or GPL-2' "$work/copyright" || fail "copyright does not say BSD-2-clause or GPL-2"
grep -qx ' Redistribution and use in source and binary forms, with or without' "$work/copyright" ||
  fail "copyright lacks the BSD-2-Clause text"
grep -q '/usr/share/common-licenses/GPL-2' "$work/copyright" || fail "copyright does not point at the GPL-2 text"
! grep -qi 'all rights reserved: no license' "$work/copyright" || fail "copyright still says no licence"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/softdat/changelog.gz | gunzip >"$work/changelog"
dpkg-parsechangelog -l "$work/changelog" -S Version | grep -qx "$(basename "$deb" | cut -d_ -f2)" ||
  fail "the changelog's newest entry is not the package's version: $(head -1 "$work/changelog")"
[[ $(grep -c '^softdat (' "$work/changelog") -ge 2 ]] || fail "the changelog has one release; NEWS.md has more"

echo "--- lintian"
lintian --fail-on error "$deb" 2>&1 | grep -v 'running with root privileges' || true
lintian --fail-on error "$deb" >/dev/null 2>&1 || fail "lintian reports errors"

echo "--- dpkg -i into a temporary root"
root=$work/root
admin=$root/var/lib/dpkg
dpkg_root_make "$root" "$depends" || fail "the temporary root"
cp "$root/etc/dat.conf" "$work/seed.conf"
pkg() { dpkg_root "$root" "$work/dpkg.log" "$@"; }
pkg -i "$deb" || fail "dpkg -i failed"
[[ -f $root/usr/lib/$multiarch/libsoftdat.so.2 && -x $root/usr/bin/datinfo ]] || fail "files not installed"
grep -q '^softdat-tcp u2.0 nonthreadsafe default libsoftdat.so.2 softdat.2.0 "tcp 127.0.0.1" ""$' "$root/etc/dat.conf" ||
  fail "postinst did not add softdat-tcp: $(cat "$root/etc/dat.conf")"
cmp -s "$root/etc/dat.conf.softdat-backup" "$work/seed.conf" || fail "no backup of the dat.conf as it was"
diff <(sed '/^# softdat: begin/,/^# softdat: end/d' "$root/etc/dat.conf") <(sed '$a\' "$work/seed.conf") >/dev/null ||
  fail "lines outside softdat's block changed"
before=$(find "$root/etc" -printf '%p %s %T@\n' | sort; sha256sum "$root/etc/dat.conf")
sleep 1.1
pkg -i "$deb" || fail "installing again failed"
[[ $(find "$root/etc" -printf '%p %s %T@\n' | sort; sha256sum "$root/etc/dat.conf") == "$before" ]] ||
  fail "installing again changed etc/"

echo "--- the packaged datinfo, and the stock dtest over the packaged softdat-tcp"
export LD_LIBRARY_PATH=$root/usr/lib/$multiarch DAT_OVERRIDE=$root/etc/dat.conf
"$root/usr/bin/datinfo" -v softdat-tcp >"$work/datinfo.out" || fail "datinfo -v softdat-tcp: $(cat "$work/datinfo.out")"
grep -q 'SOFTDAT_TRANSPORT: *tcp' "$work/datinfo.out" || fail "the packaged softdat-tcp does not say tcp"
sanitizer_env "$lib"
timeout 60 env "${SANITIZER_ENV[@]}" dtest -s -P softdat-tcp -B 64 -b 4096 >"$work/server.log" 2>&1 &
server=$!
wait_listening 15828 "$server" || fail "dtest's server never listened: $(cat "$work/server.log")"
relay_dtest_handoff "$relay" "$server" "$work" || fail "dtest's server: $(cat "$work/server.log")"
status=0 server_status=0
timeout 60 env "${SANITIZER_ENV[@]}" dtest -P softdat-tcp -h 127.0.0.1 -B 64 -b 4096 >"$work/client.log" 2>&1 || status=$?
wait "$server" || server_status=$?
[[ $status -eq 0 && $server_status -eq 0 ]] && grep -q "PASSED" "$work/client.log" && grep -q "PASSED" "$work/server.log" ||
  fail "dtest: client exit $status, server exit $server_status: $(cat "$work/client.log" "$work/server.log")"
unset LD_LIBRARY_PATH DAT_OVERRIDE

echo "--- dpkg -r"
pkg -r softdat || fail "dpkg -r failed"
cmp "$root/etc/dat.conf" "$work/seed.conf" || fail "etc/dat.conf is not as it was"
left=$(find "$root" -mindepth 1 -not -path "$admin*" -not -path "$root/var" -not -path "$root/var/lib" \
  -not -path "$root/etc" -not -path "$root/etc/dat.conf")
[[ -z $left ]] || fail "left after dpkg -r: $left"
! dpkg --root="$root" -s softdat >/dev/null 2>&1 || fail "dpkg still lists softdat"
echo "PASS: lintian clean, dpkg -i adds the dat.conf lines once, dtest runs, dpkg -r restores"
