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
#     then byte for byte what it was before softdat was added);
#   - a source install (tools/dev install) and the Debian package may both be installed: the block
#     records each installation ("# softdat: in use: LIBRARY (OWNER)" and "# softdat: also
#     installed: ..."). The latest to install has the IAs; each says whom it took them from.
#     Removing one gives the IAs to the other, and says so; removing the last takes the block out.
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

# The installations registered in FILE's block, one a line: "in-use LIBRARY OWNER" first, then
# "also LIBRARY OWNER" for each other installation. A block written before installations were
# recorded counts as one, its lines' library's, in use.
softdat_conf_registrations() {
  [ -f "$1" ] || return 0
  awk -v begin="$SOFTDAT_CONF_BEGIN" -v end="$SOFTDAT_CONF_END" '
    $0 == begin { inside = 1; next }
    inside && $0 == end { inside = 0; next }
    !inside { next }
    /^# softdat: in use: / { sub(/^# softdat: in use: /, ""); lib = $1; sub(/^[^ ]* \(/, ""); sub(/\)$/, "");
                             used = "in-use " lib " " $0; next }
    /^# softdat: also installed: / { sub(/^# softdat: also installed: /, ""); lib = $1; sub(/^[^ ]* \(/, "");
                                     sub(/\)$/, ""); also[++n] = "also " lib " " $0; next }
    /^#/ || NF < 5 { next }
    first == "" { first = $5 }
    END {
      if (used == "" && first != "") used = "in-use " first " an earlier install"
      if (used != "") print used
      for (i = 1; i <= n; ++i) print also[i]
    }' "$1"
}

# Writes FILE with softdat's block naming LIBRARY (OWNER) in use and the installations in OTHERS
# ("LIBRARY OWNER" lines) as also installed: in place of the block FILE has, else at its end.
# Idempotent; keeps the file as it was before softdat's first block as FILE.softdat-backup.
softdat_conf_put() {
  _file=$1 _lib=$2 _owner=$3 _others=$4
  _base=$(softdat_conf_without_block "$_file"; echo x)
  _base=${_base%x}
  # Names some line outside the block defines are that line's.
  _taken=$(printf '%s' "$_base" | awk '$1 !~ /^#/ && NF > 0 { print $1 }')
  _lines=$(softdat_conf_lines "$_lib" | while IFS= read -r _line; do
    _ia=${_line%% *}
    if printf '%s\n' "$_taken" | grep -qxF -- "$_ia"; then
      echo "softdat: $_file already defines $_ia; that line is kept and softdat adds none" >&2
    else
      printf '%s\n' "$_line"
    fi
  done)
  _registered=$(printf '# softdat: in use: %s (%s)\n' "$_lib" "$_owner"
    printf '%s\n' "$_others" | while read -r _other_lib _other_owner; do
      if [ -n "$_other_lib" ]; then printf '# softdat: also installed: %s (%s)\n' "$_other_lib" "$_other_owner"; fi
    done)
  _block=$(printf '%s\n%s\n%s\n%s' "$SOFTDAT_CONF_BEGIN" "$_registered" "$_lines" "$SOFTDAT_CONF_END" | grep -v '^$')
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
  echo "softdat: $_file: softdat's lines, naming $_lib ($_owner):" >&2
  printf '%s\n' "$_lines" | sed 's/^/  /' >&2
}

# softdat_conf_add FILE LIBRARY [OWNER]: registers an installation of softdat (its LIBRARY, and
# who installed it, in words: "tools/dev install, prefix /usr/local", "the Debian package") and
# makes softdat's IAs name its library. Another installation the block names stays recorded and
# is said: it takes the IAs back when this one is removed (softdat_conf_remove).
softdat_conf_add() {
  _file=$1 _lib=$2 _owner=${3:-$2}
  _registrations=$(softdat_conf_registrations "$_file")
  _others=$(printf '%s\n' "$_registrations" | while read -r _kind _other_lib _other_owner; do
    if [ -n "$_other_lib" ] && [ "$_other_lib" != "$_lib" ]; then printf '%s %s\n' "$_other_lib" "$_other_owner"; fi
  done)
  _previous=$(printf '%s\n' "$_registrations" | awk '$1 == "in-use" { $1 = ""; sub(/^ /, ""); print }')
  softdat_conf_put "$_file" "$_lib" "$_owner" "$_others" || return 1
  case $_previous in
    ""|"$_lib "*) ;;
    *) echo "softdat: $_file: softdat's IAs now name $_lib ($_owner) instead of ${_previous%% *}" \
         "(${_previous#* }), which stays installed and gets them back if this installation is removed" >&2 ;;
  esac
}

# softdat_conf_remove FILE [LIBRARY]: the installation of LIBRARY is going away. When another
# installation the block records remains (its library still there), softdat's IAs name that one
# and it says so; otherwise (or with no LIBRARY) it takes out exactly the block, then removes
# FILE.softdat-backup when it now equals FILE, or FILE itself when it is left empty with no backup
# (softdat_conf_add created it).
softdat_conf_remove() {
  _file=$1 _lib=${2:-}
  [ -f "$_file" ] || return 0
  if [ -n "$_lib" ] && grep -qxF -- "$SOFTDAT_CONF_BEGIN" "$_file"; then
    _registrations=$(softdat_conf_registrations "$_file")
    _in_use=$(printf '%s\n' "$_registrations" | awk '$1 == "in-use" { print $2 }')
    # What remains: the other installations whose library is still there (a path that is gone
    # was removed without telling us; a bare soname is the package's, which tells us).
    _remaining=$(printf '%s\n' "$_registrations" | while read -r _kind _other_lib _other_owner; do
      [ -n "$_other_lib" ] && [ "$_other_lib" != "$_lib" ] || continue
      case $_other_lib in /*) [ -e "$_other_lib" ] || continue ;; esac
      printf '%s %s\n' "$_other_lib" "$_other_owner"
    done)
    if [ -n "$_remaining" ]; then
      if [ "$_in_use" = "$_lib" ]; then
        _next=$(printf '%s\n' "$_remaining" | head -n 1)
        softdat_conf_put "$_file" "${_next%% *}" "${_next#* }" "$(printf '%s\n' "$_remaining" | sed 1d)" || return 1
        echo "softdat: $_file: softdat's IAs now name ${_next%% *} (${_next#* }), the installation that remains" >&2
      else
        _current=$(printf '%s\n' "$_registrations" | awk '$1 == "in-use" { $1 = ""; sub(/^ /, ""); print }')
        softdat_conf_put "$_file" "${_current%% *}" "${_current#* }" "$(printf '%s\n' "$_remaining" |
          while read -r _other_lib _other_owner; do
            if [ "$_other_lib" != "${_current%% *}" ]; then printf '%s %s\n' "$_other_lib" "$_other_owner"; fi
          done)" || return 1
        echo "softdat: $_file: softdat's IAs stay with ${_current%% *} (${_current#* })" >&2
      fi
      return 0
    fi
  fi
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
