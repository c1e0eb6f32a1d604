#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Installs built softdat files under a prefix and registers its IAs in dat.conf; uninstalls
# exactly that. What `tools/dev install` and `tools/dev uninstall` run after building, and what
# testing/install runs on the Bazel outputs. No Bazel here: it is given the files.
#
#   install.sh install --prefix DIR [--dat-conf FILE] --lib FILE [--bin FILE ...] [--man FILE ...]
#   install.sh uninstall --prefix DIR [--dat-conf FILE]
#
# install copies the library to DIR/lib, the programs to DIR/bin and each man page NAME.N to
# DIR/share/man/manN, only where the file there differs; adds softdat's dat.conf lines (naming
# DIR/lib/libsoftdat.so.2 by its full path) to FILE (default /etc/dat.conf) the way
# tools/install/datconf.sh describes; and writes a manifest, DIR/share/softdat/install-manifest,
# of the files and folders it made and the dat.conf it edited. A second install changes nothing.
# uninstall removes what the manifest lists (folders only when empty) and softdat's dat.conf block.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/install/datconf.sh
. "$here/datconf.sh"

die() { echo "install.sh: $*" >&2; exit 2; }

action=${1:-}
shift || true
prefix="" dat_conf="" lib=""
bins=() mans=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix) prefix=${2:?--prefix needs a folder}; shift 2 ;;
    --dat-conf) dat_conf=${2:?--dat-conf needs a file}; shift 2 ;;
    --lib) lib=${2:?--lib needs a file}; shift 2 ;;
    --bin) bins+=("${2:?--bin needs a file}"); shift 2 ;;
    --man) mans+=("${2:?--man needs a file}"); shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[[ -n $prefix ]] || die "--prefix is required"
[[ $prefix == /* ]] || prefix=$PWD/$prefix
prefix=${prefix%/}
manifest=$prefix/share/softdat/install-manifest

# Folders made by this install and by the ones before it (from the old manifest).
made_dirs=()
if [[ -f $manifest ]]; then
  while read -r kind path; do [[ $kind == dir ]] && made_dirs+=("$path"); done <"$manifest"
fi

make_dir() {  # mkdir -p that remembers each folder it made
  local dir=$1 missing=()
  while [[ ! -d $dir ]]; do missing=("$dir" "${missing[@]}"); dir=$(dirname "$dir"); done
  for dir in "${missing[@]}"; do mkdir "$dir"; made_dirs+=("$dir"); done
}

files=()
put() {  # put SOURCE DEST MODE: copies only when DEST differs
  local source=$1 dest=$2 mode=$3
  make_dir "$(dirname "$dest")"
  if [[ -f $dest ]] && cmp -s "$source" "$dest"; then
    echo "softdat: $dest is up to date" >&2
  else
    install -m "$mode" "$source" "$dest"
    echo "softdat: installed $dest" >&2
  fi
  files+=("$dest")
}

do_install() {
  [[ -n $lib ]] || die "--lib is required"
  [[ -n $dat_conf ]] || dat_conf=/etc/dat.conf
  [[ $dat_conf == /* ]] || dat_conf=$PWD/$dat_conf
  put "$lib" "$prefix/lib/libsoftdat.so.2" 755
  local file name section
  for file in "${bins[@]}"; do put "$file" "$prefix/bin/$(basename "$file")" 755; done
  for file in "${mans[@]}"; do
    name=$(basename "$file"); section=${name##*.}
    put "$file" "$prefix/share/man/man$section/$name" 644
  done
  make_dir "$(dirname "$manifest")"
  local text
  text=$(
    printf 'dat-conf %s\n' "$dat_conf"
    printf 'file %s\n' "${files[@]}"
    # Deepest first, so uninstall can remove them in order.
    printf 'dir %s\n' "${made_dirs[@]}" | sort -u -r
  )
  if [[ -f $manifest ]] && [[ $(cat "$manifest") == "$text" ]]; then
    echo "softdat: $manifest is up to date" >&2
  else
    printf '%s\n' "$text" >"$manifest"
  fi
  # After the manifest: if this fails, uninstall still finds every file.
  softdat_conf_add "$dat_conf" "$prefix/lib/libsoftdat.so.2" "tools/dev install, prefix $prefix"
}

do_uninstall() {
  [[ -f $manifest ]] || die "no softdat installation under $prefix ($manifest is missing)"
  local kind path conf="" dirs=()
  while read -r kind path; do
    case $kind in
      dat-conf) conf=$path ;;
      file) rm -f "$path" && echo "softdat: removed $path" >&2 ;;
      dir) dirs+=("$path") ;;
    esac
  done <"$manifest"
  rm -f "$manifest"
  [[ -n $dat_conf ]] && conf=$dat_conf
  [[ -n $conf ]] && softdat_conf_remove "$conf" "$prefix/lib/libsoftdat.so.2"
  for path in "${dirs[@]}"; do rmdir "$path" 2>/dev/null || true; done
}

case $action in
  install) do_install ;;
  uninstall) do_uninstall ;;
  *) die "usage: install.sh install|uninstall --prefix DIR [--dat-conf FILE] ..." ;;
esac
