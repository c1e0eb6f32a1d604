#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# What `tools/dev demo` shows must stay true: the demo transfers over softdat-tcp through the stock
# registry, checks every byte, prints its table and writes the CSV it names.
set -euo pipefail
lib=$(realpath "$1")
demo="$2"
conf="$TEST_TMPDIR/dat.conf"
csv="$TEST_TMPDIR/demo.csv"
printf 'softdat-tcp u2.0 nonthreadsafe default %s softdat.2.0 "tcp 127.0.0.1" ""\n' "$lib" >"$conf"
status=0
output=$(DAT_OVERRIDE="$conf" timeout 50 "$demo" --csv "$csv" 2>&1) || status=$?
echo "$output"
fail() { echo "FAIL: $*"; exit 1; }
[[ $status -eq 0 ]] || fail "softdat_demo exited with $status"
grep -q 'softdat demo: PASSED' <<<"$output" || fail "no PASSED line"
rows=$(grep -cE '^(Send|RDMA Write|RDMA Read) .*\| yes$' <<<"$output" || true)
[[ $rows -eq 12 ]] || fail "expected 12 checked rows, found $rows"
[[ $(wc -l <"$csv") -eq 13 ]] || fail "CSV $csv should hold a header and 12 rows"
echo "PASS: 12 rows, every one checked, CSV written"
