# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# softdat's dat.conf lines: which to add for this machine, and how to add and remove them.
#
# POSIX sh functions, sourced by tools/install/install.sh (`tools/dev install`/`uninstall`) and
# copied whole into the Debian package's maintainer scripts (tools/install/package.sh), so both
# ways of installing edit dat.conf the same way:
#
#   - every line softdat adds sits in one block between two marker comments; no other line of the
#     file is touched, reordered or rewritten;
#   - adding is idempotent: when the block already says what it would say, the file is not
#     written at all; otherwise the file as it was before softdat's first block is kept as
#     FILE.softdat-backup (a later change of the block keeps that first backup);
#   - an IA name some other line of the file already defines is left to that line (libdat2 would
#     take the first of two lines with one name);
#   - removing takes out exactly the block (and the newline adding had to put after a last line
#     that had none), and the backup too when it holds nothing the file does not (the file is
#     then byte for byte what it was before softdat was added).
#
# SOFTDAT_SYSFS_INFINIBAND names the folder of RDMA devices (default /sys/class/infiniband),
# so tests can offer a device the machine lacks.

SOFTDAT_CONF_BEGIN='# softdat: begin (added by the softdat installer; uninstalling softdat removes this block)'
SOFTDAT_CONF_END='# softdat: end'

# The up interfaces with an IPv4 address, loopback left out (softdat-tcp covers it), one a line.
softdat_conf_interfaces() {
  command -v ip >/dev/null 2>&1 || return 0
  ip -o -4 addr show up 2>/dev/null |
    awk '{ name = $2; sub(/@.*/, "", name); if (name != "lo" && !seen[name]++) print name }'
}

# softdat_conf_lines LIBRARY: the dat.conf lines for this machine naming LIBRARY (a path, or a
# bare soname the dynamic linker finds): softdat-tcp on loopback, softdat-tcp-IF per up IPv4
# interface, softdat-verbs-DEV per RDMA device port (DEV-PORT when a device has several).
softdat_conf_lines() {
  _lib=$1
  printf 'softdat-tcp u2.0 nonthreadsafe default %s softdat.2.0 "tcp 127.0.0.1" ""\n' "$_lib"
  for _if in $(softdat_conf_interfaces); do
    printf 'softdat-tcp-%s u2.0 nonthreadsafe default %s softdat.2.0 "tcp %s" ""\n' "$_if" "$_lib" "$_if"
  done
  _sys=${SOFTDAT_SYSFS_INFINIBAND:-/sys/class/infiniband}
  for _dev in "$_sys"/*; do
    [ -d "$_dev/ports" ] || continue
    _name=${_dev##*/}
    _ports=$(ls "$_dev/ports" | sort -n)
    _count=$(printf '%s\n' "$_ports" | grep -c .)
    for _port in $_ports; do
      _ia=softdat-verbs-$_name
      [ "$_count" -gt 1 ] && _ia=$_ia-$_port
      printf '%s u2.0 nonthreadsafe default %s softdat.2.0 "verbs %s %s" ""\n' "$_ia" "$_lib" "$_name" "$_port"
    done
  done
}

# The file without softdat's block.
softdat_conf_without_block() {
  [ -f "$1" ] || return 0
  awk -v begin="$SOFTDAT_CONF_BEGIN" -v end="$SOFTDAT_CONF_END" '
    $0 == begin { inside = 1; next }
    inside && $0 == end { inside = 0; next }
    !inside { print }' "$1"
}

# Writes stdin to FILE through a temporary file in the same folder, keeping FILE's mode; where
# FILE cannot be replaced (a file bind-mounted into a container) it is rewritten in place.
softdat_conf_write() {
  _tmp=$(mktemp "$1.softdat-XXXXXX") || return 1
  cat >"$_tmp" || { rm -f "$_tmp"; return 1; }
  if [ -e "$1" ]; then chmod --reference="$1" "$_tmp"; else chmod 644 "$_tmp"; fi
  mv -f "$_tmp" "$1" 2>/dev/null && return 0
  cat "$_tmp" >"$1" || { rm -f "$_tmp"; return 1; }
  rm -f "$_tmp"
}

# softdat_conf_add FILE LIBRARY: puts softdat's block (the lines of softdat_conf_lines) into FILE,
# in place of the block it already has, else at its end. Prints what it did on stderr.
softdat_conf_add() {
  _file=$1
  _base=$(softdat_conf_without_block "$_file"; echo x)
  _base=${_base%x}
  # Names some line outside the block defines are that line's.
  _taken=$(printf '%s' "$_base" | awk '$1 !~ /^#/ && NF > 0 { print $1 }')
  _lines=$(softdat_conf_lines "$2" | while IFS= read -r _line; do
    _ia=${_line%% *}
    if printf '%s\n' "$_taken" | grep -qxF -- "$_ia"; then
      echo "softdat: $_file already defines $_ia; that line is kept and softdat adds none" >&2
    else
      printf '%s\n' "$_line"
    fi
  done)
  _block=$(printf '%s\n%s\n%s' "$SOFTDAT_CONF_BEGIN" "$_lines" "$SOFTDAT_CONF_END" | grep -v '^$')
  # The new file: the old block's place taken by the new one, or the block appended.
  _new=$( { [ -f "$_file" ] && cat "$_file"; } | awk -v begin="$SOFTDAT_CONF_BEGIN" -v end="$SOFTDAT_CONF_END" -v block="$_block" '
    $0 == begin { inside = 1; if (!done) print block; done = 1; next }
    inside && $0 == end { inside = 0; next }
    !inside { print }
    END { if (!done) print block }'; echo x)
  _new=${_new%x}
  if [ -f "$_file" ] && [ "$(cat "$_file"; echo x)" = "${_new}x" ]; then
    echo "softdat: $_file already has softdat's lines; unchanged" >&2
    return 0
  fi
  if [ -f "$_file" ] && { ! grep -qxF -- "$SOFTDAT_CONF_BEGIN" "$_file" || [ ! -f "$_file.softdat-backup" ]; }; then
    cp -p "$_file" "$_file.softdat-backup" || return 1
    echo "softdat: $_file saved as $_file.softdat-backup" >&2
  fi
  printf '%s' "$_new" | softdat_conf_write "$_file" || return 1
  echo "softdat: $_file: softdat's lines added:" >&2
  printf '%s\n' "$_lines" | sed 's/^/  /' >&2
}

# softdat_conf_remove FILE: takes softdat's block out of FILE (nothing else), then removes
# FILE.softdat-backup when it now equals FILE, or FILE itself when it is left empty with no
# backup (softdat_conf_add created it).
softdat_conf_remove() {
  _file=$1
  [ -f "$_file" ] || return 0
  if ! grep -qxF -- "$SOFTDAT_CONF_BEGIN" "$_file"; then
    echo "softdat: $_file has no softdat lines; unchanged" >&2
  else
    _new=$(softdat_conf_without_block "$_file"; echo x)
    _new=${_new%x}
    # Adding put a newline after a last line that had none (Debian's /etc/dat.conf ends so): when
    # the backup is the result but for that newline, the backup's bytes are the file as it was.
    if [ -f "$_file.softdat-backup" ] &&
       [ "$(cat "$_file.softdat-backup"; [ -z "$(tail -c 1 "$_file.softdat-backup")" ] || echo; echo x)" = "${_new}x" ]; then
      _new=$(cat "$_file.softdat-backup"; echo x)
      _new=${_new%x}
    fi
    printf '%s' "$_new" | softdat_conf_write "$_file" || return 1
    echo "softdat: $_file: softdat's lines removed" >&2
  fi
  if [ -f "$_file.softdat-backup" ]; then
    if cmp -s "$_file" "$_file.softdat-backup"; then rm -f "$_file.softdat-backup"; fi
  elif [ ! -s "$_file" ]; then
    rm -f "$_file"
  fi
}
