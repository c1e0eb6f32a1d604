#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Builds softdat's Debian binary package from built files, Debian's way, with dpkg-deb: what
# `tools/dev package` runs after building, and what testing/install/package_test runs on the
# Bazel outputs. No Bazel here: it is given the files.
#
#   package.sh --out DIR --lib FILE --bin FILE... --man FILE... [--example FILE...]
#
# Writes DIR/softdat_VERSION_ARCH.deb (VERSION from base/version.h, ARCH from dpkg) and prints
# its path. The package holds:
#   /usr/lib/<multiarch>/libsoftdat.so.2       the provider (the dat.conf lines name it by soname)
#   /usr/bin/datinfo, /usr/bin/datperf         the tools
#   /usr/share/man/man{1,7}/*.gz                their man pages and softdat(7)
#   /usr/share/doc/softdat/                     copyright, changelog, examples/
# Depends come from dpkg-shlibdeps, plus libdapl2 (the registry that loads the provider). The
# maintainer scripts carry tools/install/datconf.sh whole: postinst (configure) adds softdat's
# dat.conf block, prerm (remove) takes it out, the same idempotent way tools/dev install does,
# under $DPKG_ROOT when dpkg installs into another root; a source install's block is seen and
# kept (datconf.sh). A file trigger on /etc/dat.conf runs postinst again when libdapl2 installs
# a new dat.conf over softdat's edit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
die() { echo "package.sh: $*" >&2; exit 2; }

out="" lib=""
bins=() mans=() examples=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=${2:?}; shift 2 ;;
    --lib) lib=${2:?}; shift 2 ;;
    --bin) bins+=("${2:?}"); shift 2 ;;
    --man) mans+=("${2:?}"); shift 2 ;;
    --example) examples+=("${2:?}"); shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[[ -n $out && -n $lib ]] || die "usage: package.sh --out DIR --lib FILE --bin FILE... --man FILE... [--example FILE...]"

version=$(sed -n 's/.*kVersionText\[\] = "\([0-9.]*\)";.*/\1/p' "$root/base/version.h")
[[ -n $version ]] || die "no version in base/version.h"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
package=softdat

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps wants the files where debhelper would put them: debian/<package>/.
stage=$work/debian/$package
mkdir -p "$stage/DEBIAN" "$stage/usr/lib/$multiarch" "$stage/usr/bin" "$stage/usr/share/doc/$package"

# Files, stripped as dh_strip does (no debug symbols, no .comment or .note sections).
strip_file() { strip --remove-section=.comment --remove-section=.note "$@"; }
install -m 644 "$lib" "$stage/usr/lib/$multiarch/libsoftdat.so.2"
strip_file --strip-unneeded "$stage/usr/lib/$multiarch/libsoftdat.so.2"
for file in "${bins[@]}"; do
  install -m 755 "$file" "$stage/usr/bin/$(basename "$file")"
  strip_file "$stage/usr/bin/$(basename "$file")"
done
for file in "${mans[@]}"; do
  name=$(basename "$file") section=${name##*.}
  mkdir -p "$stage/usr/share/man/man$section"
  gzip -9n <"$file" >"$stage/usr/share/man/man$section/$name.gz"
done
if [[ ${#examples[@]} -gt 0 ]]; then
  mkdir -p "$stage/usr/share/doc/$package/examples"
  for file in "${examples[@]}"; do install -m 644 "$file" "$stage/usr/share/doc/$package/examples/"; done
fi

# The project's address (the Maintainer field and the copyright file's Upstream-Contact).
maintainer="softdat developers <softdat@users.noreply.github.com>"

# A native package: its changelog is changelog.gz in Debian's format, made from NEWS.md (each
# "## VERSION (YYYY-MM-DD)" heading an entry, each "- " item a "*" line), dated at noon UTC of
# each release so that the package is reproducible. The newest entry must be base/version.h's.
news_changelog() {
  awk -v package="$package" -v maintainer="$maintainer" '
    function close_entry() { if (open) { printf "\n -- %s  %s\n\n", maintainer, date; open = 0 } }
    /^## [0-9]+\.[0-9]+ \([0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]\)$/ {
      close_entry()
      version = $2; day = substr($3, 2, 10)
      cmd = "date -R -u -d \"" day " 12:00\""; cmd | getline date; close(cmd)
      printf "%s (%s) unstable; urgency=medium\n\n", package, version; open = 1; next
    }
    /^## / { close_entry(); next }
    open && /^- / { sub(/^- /, ""); printf "  * %s\n", $0; next }
    open && /^  [^ ]/ { sub(/^  /, ""); printf "    %s\n", $0; next }
    END { close_entry() }' "$root/NEWS.md"
}
news_changelog >"$work/changelog"
first=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$work/changelog")
[[ $first == "$version" ]] || die "NEWS.md's newest release is '$first', base/version.h says $version"
gzip -9n <"$work/changelog" >"$stage/usr/share/doc/$package/changelog.gz"

# The copyright file in Debian's machine-readable format: both licences, the BSD text whole from
# LICENSE, the GPL by reference to Debian's copy (what Debian's policy asks for).
bsd_text=$(awk '/^BSD 2-Clause License$/ { inside = 1; getline; next }
  inside && /^====/ { exit }
  inside && (NF || seen) { seen = 1; print }' "$root/LICENSE")
[[ $bsd_text == *"Redistribution and use"* ]] || die "no BSD-2-Clause text in LICENSE"
{
  cat <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: softdat
Upstream-Contact: $maintainer
Comment: SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only. The recipient
 may use softdat under either licence; LICENSE in the source holds both texts.

Files: *
Copyright: 2026 the softdat developers
License: BSD-2-clause or GPL-2

License: BSD-2-clause
COPYRIGHT
  # A paragraph's continuation lines start with a space; an empty line is " .".
  sed -e 's/^$/./' -e 's/^/ /' <<<"$bsd_text"
  cat <<'COPYRIGHT'

License: GPL-2
 This program is free software; you can redistribute it and/or modify it
 under the terms of the GNU General Public License version 2 as published by
 the Free Software Foundation.
 .
 This program is distributed in the hope that it will be useful, but WITHOUT
 ANY WARRANTY; without even the implied warranty of MERCHANTABILITY or FITNESS
 FOR A PARTICULAR PURPOSE. See the GNU General Public License for more
 details.
 .
 On Debian systems, the complete text of the GNU General Public License
 version 2 can be found in "/usr/share/common-licenses/GPL-2".
COPYRIGHT
} >"$stage/usr/share/doc/$package/copyright"
chmod 644 "$stage/usr/share/doc/$package/"{changelog.gz,copyright}

# Depends: what the files link (dpkg-shlibdeps reads debian/control), and the registry.
mkdir -p "$work/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$package" "$package" >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O "$stage/usr/lib/$multiarch/libsoftdat.so.2" "$stage"/usr/bin/* 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')
[[ -n $shlibs ]] || die "dpkg-shlibdeps found no dependencies"
depends="$shlibs"
grep -qE '(^|, )libdapl2( |,|$)' <<<"$depends" || depends="$depends, libdapl2"

# Maintainer scripts: datconf.sh's functions, then what each step does.
maintainer_script() {  # maintainer_script NAME ACTIONS CALL
  {
    echo '#!/bin/sh'
    echo "# softdat $1: softdat's lines in /etc/dat.conf (tools/install/datconf.sh, as tools/dev install uses it)."
    echo 'set -e'
    echo
    sed -e '/^#/d' "$here/datconf.sh"
    echo
    echo 'case "$1" in'
    echo "  $2) $3 ;;"
    echo 'esac'
    echo 'exit 0'
  } >"$stage/DEBIAN/$1"
  chmod 755 "$stage/DEBIAN/$1"
}
# postinst runs on configure and when /etc/dat.conf, libdapl2's conffile, is installed anew (the
# file trigger below): a libdapl2 upgrade whose new dat.conf the user takes has no softdat block,
# and softdat puts it back; one whose file the user keeps already has it (unchanged).
maintainer_script postinst 'configure|triggered' 'softdat_conf_add "${DPKG_ROOT:-}/etc/dat.conf" libsoftdat.so.2 "the Debian package softdat"'
maintainer_script prerm 'remove|deconfigure' 'softdat_conf_remove "${DPKG_ROOT:-}/etc/dat.conf" libsoftdat.so.2'
printf 'activate-noawait ldconfig\ninterest-noawait /etc/dat.conf\n' >"$stage/DEBIAN/triggers"
printf 'libsoftdat 2 %s (>= %s)\n' "$package" "$version" >"$stage/DEBIAN/shlibs"
chmod 644 "$stage/DEBIAN/triggers" "$stage/DEBIAN/shlibs"

installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: $package
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Recommends: ibverbs-providers
Suggests: dapl2-utils
Section: net
Priority: optional
Description: user-space DAT 2.0 (uDAPL) provider with shared receive queues
 softdat is a provider for the DAT 2.0 registry (libdat2) that gives RDMA
 semantics, above all the shared receive queue (SRQ), on any Linux machine:
 over TCP sockets speaking the iWARP wire protocol, or through rdma-core on
 RDMA NICs and the kernel's soft-RoCE and soft-iWARP devices.
 .
 Installing it adds its IAs to /etc/dat.conf (softdat-tcp on loopback, one
 per network interface, one per RDMA port), so unchanged DAT consumers such
 as dtest find it by name. The package also holds datinfo, which shows what
 each IA reports, and datperf, a two-process DAT benchmark.
CONTROL
(cd "$stage" && find usr -type f -exec md5sum {} + | sort -k2) >"$stage/DEBIAN/md5sums"
chmod 644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
find "$stage" -type d -exec chmod 755 {} +

mkdir -p "$out"
deb=$out/${package}_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
