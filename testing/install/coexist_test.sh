#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A source install (tools/install/install.sh, as `tools/dev install` runs it) and the Debian
# package (tools/install/package.sh, dpkg -i into a temporary root) on one machine, in both
# orders: each sees the other's dat.conf block and says what it does; the IAs always name an
# installed library and open (datinfo); removing one gives them to the other; removing both
# leaves the dat.conf byte for byte as it was. Then libdapl2 upgrades: one whose new dat.conf the
# user takes (dpkg --force-confnew) gets softdat's block back from the package's file trigger;
# one whose file the user keeps (--force-confold) leaves it as it was.
#   coexist_test.sh INSTALL_SH PACKAGE_SH LIB DATINFO DATPERF MAN_PAGE...
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=testing/install/dpkg_root.sh
. testing/install/dpkg_root.sh  # Bazel runs tests from the workspace root of the runfiles
installer=$(realpath "$1") packager=$(realpath "$2") lib=$(realpath "$3") datinfo=$(realpath "$4") datperf=$(realpath "$5")
shift 5
mans=()
for page in "$@"; do mans+=(--man "$(realpath "$page")"); done
work=$TEST_TMPDIR root=$TEST_TMPDIR/root
prefix=$root/usr/local conf=$root/etc/dat.conf
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
source_lib=$prefix/lib/libsoftdat.so.2 source_owner="tools/dev install, prefix $prefix"
package_owner="the Debian package softdat"

deb=$("$packager" --out "$work/dist" --lib "$lib" --bin "$datinfo" --bin "$datperf" "${mans[@]}")
dpkg_root_make "$root" "$(dpkg-deb -f "$deb" Depends)" || fail "the temporary root"
cp "$conf" "$work/seed.conf"
pkg() { dpkg_root "$root" "$work/dpkg.log" "$@" 2>&1 | tee "$work/said"; return "${PIPESTATUS[0]}"; }
source_install() {
  "$installer" install --prefix "$prefix" --dat-conf "$conf" --lib "$lib" --bin "$datinfo" 2>&1 | tee "$work/said"
}
source_uninstall() { "$installer" uninstall --prefix "$prefix" 2>&1 | tee "$work/said"; }
said() { grep -qF -- "$1" "$work/said" || fail "not said: '$1'; said: $(cat "$work/said")"; }
# The block's lines name LIBRARY (OWNER) in use, and softdat-tcp opens through it.
in_use() {
  local library=$1 owner=$2 others=${3:-}
  grep -qxF "# softdat: in use: $library ($owner)" "$conf" || fail "not in use: $library ($owner): $(cat "$conf")"
  [[ $(grep -c '^softdat-tcp ' "$conf") -eq 1 ]] || fail "softdat-tcp is not there once: $(cat "$conf")"
  grep -q "^softdat-tcp u2.0 nonthreadsafe default $library softdat.2.0 \"tcp 127.0.0.1\" \"\"$" "$conf" ||
    fail "softdat-tcp does not name $library"
  [[ $(grep -c '^# softdat: also installed: ' "$conf") -eq $([[ -n $others ]] && echo 1 || echo 0) ]] ||
    fail "also installed: $(grep '^# softdat: also' "$conf")"
  [[ -z $others ]] || grep -qxF "# softdat: also installed: $others" "$conf" || fail "not recorded: $others"
  LD_LIBRARY_PATH=$root/usr/lib/$multiarch DAT_OVERRIDE=$conf "$datinfo" softdat-tcp >/dev/null ||
    fail "softdat-tcp does not open with $library in use"
}
outside_unchanged() {
  diff <(sed '/^# softdat: begin/,/^# softdat: end/d' "$conf") <(sed '$a\' "$work/seed.conf") >/dev/null ||
    fail "lines outside softdat's block changed"
}

echo "--- source install, then the package"
source_install
in_use "$source_lib" "$source_owner"
pkg -i "$deb" || fail "dpkg -i"
said "softdat's IAs now name libsoftdat.so.2 ($package_owner) instead of $source_lib ($source_owner), which stays installed"
in_use libsoftdat.so.2 "$package_owner" "$source_lib ($source_owner)"
outside_unchanged
pkg -i "$deb" || fail "dpkg -i again"
said "already has softdat's lines; unchanged"
echo "--- dpkg -r: the source install gets the IAs back"
pkg -r softdat || fail "dpkg -r"
said "softdat's IAs now name $source_lib ($source_owner), the installation that remains"
in_use "$source_lib" "$source_owner"
source_uninstall
said "softdat's lines removed"
cmp "$conf" "$work/seed.conf" || fail "the dat.conf is not as it was"

echo "--- the package, then a source install"
pkg -i "$deb" || fail "dpkg -i"
in_use libsoftdat.so.2 "$package_owner"
source_install
said "softdat's IAs now name $source_lib ($source_owner) instead of libsoftdat.so.2 ($package_owner), which stays installed"
in_use "$source_lib" "$source_owner" "libsoftdat.so.2 ($package_owner)"
echo "--- dpkg -r while the source install has the IAs: they stay with it"
pkg -r softdat || fail "dpkg -r"
said "softdat's IAs stay with $source_lib ($source_owner)"
in_use "$source_lib" "$source_owner"
pkg -i "$deb" || fail "dpkg -i"
in_use libsoftdat.so.2 "$package_owner" "$source_lib ($source_owner)"
echo "--- the source uninstall while the package has the IAs: they stay with it"
source_uninstall
said "softdat's IAs stay with libsoftdat.so.2 ($package_owner)"
in_use libsoftdat.so.2 "$package_owner"

echo "--- libdapl2 upgrades over softdat's edit of its conffile"
# libdapl2_deb VERSION: a newer libdapl2 whose only file is a dat.conf (a conffile) of its own.
libdapl2_deb() {
  local stage=$work/libdapl2-$1
  mkdir -p "$stage/DEBIAN" "$stage/etc"
  printf '# DAT v2.0, as libdapl2 %s ships it\nofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "ib0 0" ""\n' \
    "$1" >"$stage/etc/dat.conf"
  echo /etc/dat.conf >"$stage/DEBIAN/conffiles"
  cat >"$stage/DEBIAN/control" <<CONTROL
Package: libdapl2
Version: $1
Architecture: $(dpkg --print-architecture)
Maintainer: softdat tests <softdat@users.noreply.github.com>
Multi-Arch: same
Description: a newer libdapl2 for the test: only its dat.conf
CONTROL
  dpkg-deb --root-owner-group --build "$stage" "$work/libdapl2-$1.deb" >/dev/null
  echo "$work/libdapl2-$1.deb"
}
# The user keeps the dat.conf softdat edited: softdat's block stays as it was.
pkg -i --force-confold "$(libdapl2_deb 99:1)" || fail "libdapl2 upgrade keeping the dat.conf"
! grep -q '^# DAT v2.0, as libdapl2' "$conf" || fail "the user's dat.conf was replaced"
in_use libsoftdat.so.2 "$package_owner"
# The user takes libdapl2's new dat.conf: the package's trigger puts softdat's block back.
pkg -i --force-confnew "$(libdapl2_deb 99:2)" || fail "libdapl2 upgrade taking its dat.conf"
grep -q '^# DAT v2.0, as libdapl2 99:2 ships it$' "$conf" || fail "the new libdapl2 dat.conf was not taken"
in_use libsoftdat.so.2 "$package_owner"
pkg -r softdat || fail "dpkg -r"
! grep -q softdat "$conf" || fail "softdat lines left: $(cat "$conf")"
echo "PASS: a source install and the package see each other, in both orders; libdapl2 upgrades keep softdat registered"
