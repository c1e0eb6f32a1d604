#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The man pages render with man(1) at 80 columns without a single groff warning, each tool's page
# documents every option its --help lists (so the two cannot drift apart), and every page a SEE
# ALSO names exists: one of ours, or one of the Debian packages softdat builds on (dapl2-utils'
# dtest(1) ... and dat.conf(5)).
#   man_pages_test.sh DATINFO DATPERF PAGE...
set -euo pipefail
datinfo=$1 datperf=$2
shift 2
fail() { echo "FAIL: $*"; exit 1; }
export LC_ALL=C  # \- renders as an ASCII hyphen, so options grep as typed
command -v man >/dev/null || fail "man is missing: install man-db (tools/dev deps does)"
for page in "$@"; do
  warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || fail "man -l $page failed: $warnings"
  [[ -z $warnings ]] || fail "$page: $warnings"
  text=$(MANWIDTH=80 man -l "$page" 2>/dev/null)
  for section in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
    [[ $page == *.7 && $section == SYNOPSIS ]] && continue
    grep -q "^$section" <<<"$text" || fail "$page has no $section section"
  done
  echo "ok: $(basename "$page") renders without warnings ($(wc -l <<<"$text") lines)"
done
# Every option --help names, in the rendered page of its tool.
check_options() {
  local tool=$1 page=$2 text option
  text=$(MANWIDTH=200 man -l "$page" 2>/dev/null)
  for option in $("$tool" --help | grep -oE '(^|[ ,])--?[a-zA-Z][a-z-]*' | tr -d ' ,' | sort -u); do
    grep -qe "$option" <<<"$text" || fail "$(basename "$page") does not document $option (from $tool --help)"
  done
  echo "ok: $(basename "$page") documents every option of $(basename "$tool") --help"
}
# Every SEE ALSO reference: a page of ours, or one this machine has from dapl2-utils or libdapl2.
ours=$(for page in "$@"; do basename "$page"; done)
for page in "$@"; do
  for reference in $(sed -n '/^\.SH SEE ALSO/,/^\.SH/p' "$page" | sed -n 's/^\.BR \([^ ]*\) (\([0-9][a-zA-Z]*\)).*/\1.\2/p' |
    sed 's/\\-/-/g'); do
    grep -qxF "$reference" <<<"$ours" && continue
    found=$(man -w "${reference##*.}" "${reference%.*}" 2>/dev/null) || fail "$(basename "$page") names $reference, which no page is"
    owner=$(dpkg -S "$found" 2>/dev/null | cut -d: -f1) || true
    [[ $owner == dapl2-utils || $owner == libdapl2* ]] ||
      fail "$(basename "$page") names $reference ($found, from '${owner:-no package}'), which softdat's packages do not bring"
  done
done
echo "ok: every SEE ALSO names a page softdat or dapl2-utils ships"
for page in "$@"; do
  case $(basename "$page") in
    datinfo.1) check_options "$datinfo" "$page" ;;
    datperf.1) check_options "$datperf" "$page" ;;
  esac
done
