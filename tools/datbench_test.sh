#!/usr/bin/env bash
# datbench must run every benchmark to the end (none stopping with ERROR OCCURRED) and give each
# softdat row its ratio to the raw TCP baseline. Numbers are not checked: timing belongs to runs
# of the benchmark itself (docs/BENCHMARKS.md), not to tests.
set -euo pipefail
datbench="$1"
status=0
output=$(timeout 50 "$datbench" --benchmark_min_time=0.01 2>&1) || status=$?
echo "$output"
fail() { echo "FAIL: $*"; exit 1; }
[[ $status -eq 0 ]] || fail "datbench exited with $status"
if grep -q 'ERROR OCCURRED' <<<"$output"; then fail "a benchmark stopped with an error"; fi
count() { { grep -E "$1" <<<"$output" || true; } | wc -l; }
[[ $(count '^(PingPong|Stream)/[0-9]+/(raw_tcp|softdat_thread|softdat_poll)/real_time ') -eq 18 ]] ||
  fail "expected 18 benchmark rows"
[[ $(count '/softdat_(thread|poll)/.*latency_ratio=') -eq 6 ]] || fail "expected 6 latency_ratio counters"
[[ $(count '/softdat_(thread|poll)/.*bandwidth_ratio=') -eq 6 ]] || fail "expected 6 bandwidth_ratio counters"
echo "PASS: 18 benchmarks ran, 12 ratios reported"
