#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# run.sh's report row for a target that crashed while loading its corpus (its log has no coverage
# line): the row and the crash input are printed, and the script goes on to its FAILED report.
# Regression: grep found no coverage line, pipefail ended run.sh mid-table, and the CI log showed a
# table cut short with no word of the crash.
set -euo pipefail
run_sh=${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-softdat}/testing/fuzz/run.sh
[[ -f $run_sh ]] || run_sh=testing/fuzz/run.sh
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/report_row.XXXXXX")
mkdir -p "$work/logs" "$work/corpus/dat_api"
printf 'INFO: Seed: 1\nruntime error: load of value 9\nTest unit written to %s/crashes/crash-1\nstat::number_of_executed_units: 13\n' \
  "$work" >"$work/logs/dat_api.log"
eval "$(sed -n '/^figures() {/,/^}/p' "$run_sh")"
figures dat_api 1 60 >"$work/row"  # not in $(...): set -e must apply, as in run.sh
row=$(cat "$work/row")
echo "$row"
[[ $row == "| dat_api | 60 | 13 | ? | 0 files, "*" | ? | $work/crashes/crash-1 |" ]] || { echo "FAIL: unexpected row"; exit 1; }
echo PASS
