#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The shipped provider library carries no test seam: no object of a testonly library is linked
# into it, it defines none of their symbols, and no symbol of a test-only name (the *TestAccess
# seams, the ::testing namespaces, the racy-read annotations, the fake device) is exported or even
# local in it.
#
#   no_test_seams_test.sh LIB FILE...   LIB the shipped .so; FILEs the outputs of the testonly
#                                       libraries with sources (their archives are read, other
#                                       files ignored)
set -euo pipefail
lib="$1"
shift

fail=0
report() {  # FAIL line, then the first lines of stdin
  local lines
  lines=$(cat)
  echo "FAIL: $1 ($(wc -l <<<"$lines") in all)"
  head -n 8 <<<"$lines" | cut -c 1-200 | sed 's/^/  /'
  fail=1
}

# The checks below read the full symbol table; a stripped library would pass them all unseen.
defined=$(nm --defined-only "$lib" | awk '{print $3}' | sort -u)
local_names=$(nm -C --defined-only "$lib" | awk '{$1=$2=""; print substr($0, 3)}')
if ! grep -q 'softdat::dat::IaOpen' <<<"$local_names"; then
  echo "FAIL: $lib has no symbol table with its local symbols (stripped?): nothing can be checked"
  exit 1
fi

test_only_names='TestAccess|(^|[^[:alnum:]_])testing::|::[a-z_]*testing::|DeliberatelyRacy|ProcNetTcp|FakeDevice'
exported=$(nm -D -C --defined-only "$lib" | awk '{$1=$2=""; print substr($0, 3)}')
hits=$(grep -E "$test_only_names" <<<"$exported" || true)
[[ -z $hits ]] || report "$lib exports symbols of test-only names:" <<<"$hits"
hits=$(grep -E "$test_only_names" <<<"$local_names" || true)
[[ -z $hits ]] || report "$lib links in symbols of test-only names:" <<<"$hits"

# Source files whose objects the linker put in: their FILE symbols.
linked_sources=$(readelf -sW "$lib" | awk '$4 == "FILE" {print $8}' | sort -u)

archives=0
for file in "$@"; do
  [[ $file == *.a || $file == *.lo ]] || continue  # .lo: an alwayslink archive
  archives=$((archives + 1))
  # Each member is <stem>.o or <stem>.pic.o, compiled from <stem>.cc (or .c).
  sources=$(ar t "$file" | sed -E 's/(\.pic)?\.o$//' | sort -u)
  hits=$(comm -12 <(sed -E 's/\.(cc|c)$//' <<<"$linked_sources" | sort -u) <(cat <<<"$sources") || true)
  [[ -z $hits ]] || report "$lib links in objects of the testonly $file:" <<<"$hits"
  # Strong definitions only: inline functions and templates are weak and may be in both.
  strong=$(nm --defined-only "$file" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TDBR]$/ {print $3}' | sort -u)
  hits=$(comm -12 <(cat <<<"$defined") <(cat <<<"$strong") | grep . | c++filt || true)
  [[ -z $hits ]] || report "$lib defines symbols of the testonly $file:" <<<"$hits"
done
if ((archives == 0)); then
  echo "FAIL: no testonly archive given to compare against"
  exit 1
fi

((fail == 0)) || exit 1
echo "PASS: $lib carries nothing of $archives testonly libraries and no symbol of a test-only name"
