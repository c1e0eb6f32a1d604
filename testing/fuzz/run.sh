#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# softdat's fuzzing driver (what `tools/dev fuzz` and the fuzz step of `tools/dev test` run).
#
#   run.sh [TARGET|all] [SECONDS]  build the libFuzzer targets and fuzz TARGET (default: all, one
#                                  after another) for SECONDS each (default 60)
#   run.sh ci                      what `tools/dev test` runs: every target for 60 s, two at a
#                                  time; fails on any crash, leak or timeout
#   run.sh capture                 rewrite the captured seeds in testing/fuzz/corpus (softdat
#                                  talking to itself through a recording relay)
#   run.sh coverage [TARGET|all]   line coverage of softdat's own sources by each target's seeds
#                                  and working corpus (clang source-based coverage, an output base
#                                  of its own; the report is kept in $SOFTDAT_FUZZ_DIR/coverage/)
#   run.sh list                    the targets
#
# Targets are built with clang 14, libFuzzer, ASan and UBSan (--config=fuzz) in an output base of
# their own, so the normal GCC build stays cached. Each target starts from its seeds
# (testing/fuzz/corpus/TARGET, read only) and a working corpus that grows across runs, kept with
# the crash inputs under $SOFTDAT_FUZZ_DIR (default ~/.cache/softdat-fuzz). A crash input is
# saved there and its path printed; replay it with the GCC-built replay binary
# (bazel run //testing/fuzz:TARGET_fuzzer -- FILE), fix the bug, and add the input to
# testing/fuzz/corpus/TARGET with a regression test. The figures of the run (executions,
# execs/s, corpus, coverage, crashes) are printed as a markdown table and kept in
# $SOFTDAT_FUZZ_DIR/last-run.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
targets=(mpa fpdu ia_params connection dat_api shm_ring ud)
work=${SOFTDAT_FUZZ_DIR:-$HOME/.cache/softdat-fuzz}
# One output base per checkout, next to the fuzzing work (bazel's own default is per checkout too).
output_base="$work/bazel/$(printf '%s' "$root" | md5sum | cut -c1-12)"

log() { printf 'fuzz: %s\n' "$*" >&2; }

fuzz_bazel() { bazel --output_base="$output_base" "$@"; }

# Inputs larger than the default 4096 bytes, where a target needs them: a connection carries
# large FPDUs (direct placement starts at 8 KiB missing), an FPDU may be 64 KiB.
max_len() {
  case $1 in
    connection) echo 24576 ;;
    fpdu) echo 65600 ;;
    shm_ring) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

build() {
  local labels=() target
  for target in "$@"; do labels+=("//testing/fuzz:${target}_fuzzer"); done
  log "building ${labels[*]} (clang, libFuzzer, ASan, UBSan; log: $work/logs/build.log)"
  mkdir -p "$work/logs"
  if ! fuzz_bazel build --config=fuzz --symlink_prefix=/ --noshow_progress "${labels[@]}" >"$work/logs/build.log" 2>&1; then
    # gold warns about every sanitizer symbol it cannot export; the warnings say nothing.
    grep -v 'ld.gold: warning: Cannot export local symbol' "$work/logs/build.log" >&2
    log "FAILED: building the fuzz targets"
    return 1
  fi
  bin=$(fuzz_bazel info --config=fuzz bazel-bin 2>/dev/null)
}

# Fuzzes one target for $2 seconds; its log goes to $work/logs/TARGET.log. Exit status of libFuzzer.
fuzz_one() {
  local target=$1 seconds=$2
  local corpus="$work/corpus/$target" crashes="$work/crashes/$target" logfile="$work/logs/$target.log"
  mkdir -p "$corpus" "$crashes" "$work/logs"
  local status=0
  # -timeout: an input that takes 10 s has hung (every input is bounded in rounds, not clocks).
  "$bin/testing/fuzz/${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$(max_len "$target")" -print_final_stats=1 -artifact_prefix="$crashes/" \
    "$corpus" "testing/fuzz/corpus/$target" >"$logfile" 2>&1 || status=$?
  return $status
}

# One markdown row of figures from a target's log and working corpus.
figures() {
  local target=$1 status=$2 seconds=$3
  local logfile="$work/logs/$target.log" corpus="$work/corpus/$target"
  local execs rate files bytes coverage crash
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logfile" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$logfile" | tail -1)
  # A target that crashed while loading its corpus printed no coverage line: grep finds nothing,
  # which must not end the script (pipefail) before the row and the FAILED report are printed.
  coverage=$({ grep -oE 'cov: [0-9]+ ft: [0-9]+' "$logfile" || true; } | tail -1 | awk '{print $2 " edges, " $4 " features"}')
  files=$(find "$corpus" -type f | wc -l)
  bytes=$(du -sb "$corpus" | cut -f1)
  crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$logfile" | tail -1)
  if [[ $status -eq 0 ]]; then crash="none"; else crash="${crash:-exit status $status, see $logfile}"; fi
  printf '| %s | %s | %s | %s | %s files, %s bytes | %s | %s |\n' \
    "$target" "$seconds" "${execs:-?}" "${rate:-?}" "$files" "$bytes" "${coverage:-?}" "$crash"
}

report() {
  local seconds=$1; shift
  {
    echo "Fuzzing run of $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores"
    echo
    echo "| target | seconds | executions | execs/s | working corpus | coverage | crash |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    local target
    for target in "$@"; do figures "$target" "${statuses[$target]}" "$seconds"; done
  } | tee "$work/last-run.md"
}

declare -A statuses

run() {
  local which=${1:-all} seconds=${2:-60} list=()
  if [[ $which == all ]]; then list=("${targets[@]}"); else list=("$which"); fi
  local target
  for target in "${list[@]}"; do
    [[ " ${targets[*]} " == *" $target "* ]] || { log "unknown target '$target' (targets: ${targets[*]})"; exit 2; }
  done
  build "${list[@]}"
  local failed=0
  for target in "${list[@]}"; do
    log "fuzzing $target for $seconds s (log: $work/logs/$target.log)"
    statuses[$target]=0
    fuzz_one "$target" "$seconds" || { statuses[$target]=$?; failed=1; }
  done
  report "$seconds" "${list[@]}"
  finish $failed
}

# Every target for 60 s, as many at once as there are cores (each fuzzer is one process).
ci() {
  local seconds=${SOFTDAT_FUZZ_SECONDS:-60} jobs
  jobs=$(nproc)
  build "${targets[@]}"
  local -A pids
  local target running=()
  for target in "${targets[@]}"; do
    while [[ ${#running[@]} -ge $jobs ]]; do
      wait -n || true
      local still=() t
      for t in "${running[@]}"; do kill -0 "${pids[$t]}" 2>/dev/null && still+=("$t"); done
      running=("${still[@]}")
    done
    log "fuzzing $target for $seconds s (log: $work/logs/$target.log)"
    fuzz_one "$target" "$seconds" &
    pids[$target]=$!
    running+=("$target")
  done
  local failed=0
  for target in "${targets[@]}"; do
    statuses[$target]=0
    wait "${pids[$target]}" || { statuses[$target]=$?; failed=1; }
  done
  report "$seconds" "${targets[@]}"
  finish $failed
}

finish() {
  local failed=$1 target
  # The second Bazel server holds memory the rest of a run may want.
  fuzz_bazel shutdown 2>/dev/null || true
  [[ $failed -eq 0 ]] && return 0
  for target in "${targets[@]}"; do
    [[ ${statuses[$target]:-0} -eq 0 ]] && continue
    log "FAILED: $target (exit status ${statuses[$target]}); the end of $work/logs/$target.log:"
    tail -n 40 "$work/logs/$target.log" >&2
  done
  log "crash inputs are in $work/crashes/<target>/; replay one with: bazel run //testing/fuzz:<target>_fuzzer -- FILE"
  return 1
}

# Replays each target's seeds and working corpus in a coverage build and reports, per source file
# of softdat (not the harness), the lines run.
coverage() {
  local which=${1:-all} list=() target labels=()
  if [[ $which == all ]]; then list=("${targets[@]}"); else list=("$which"); fi
  for target in "${list[@]}"; do labels+=("//testing/fuzz:${target}_fuzzer"); done
  local cov_base="$work/bazel-coverage/$(printf '%s' "$root" | md5sum | cut -c1-12)"
  log "building ${labels[*]} with coverage (log: $work/logs/coverage-build.log)"
  mkdir -p "$work/logs" "$work/coverage"
  local flags=(--config=fuzz --symlink_prefix=/ --noshow_progress --copt=-fprofile-instr-generate
               --copt=-fcoverage-mapping --linkopt=-fprofile-instr-generate)
  bazel --output_base="$cov_base" build "${flags[@]}" "${labels[@]}" >"$work/logs/coverage-build.log" 2>&1 || {
    tail -n 40 "$work/logs/coverage-build.log" >&2; return 1; }
  local cov_bin
  cov_bin=$(bazel --output_base="$cov_base" info "${flags[@]}" bazel-bin 2>/dev/null)
  bazel --output_base="$cov_base" shutdown 2>/dev/null || true
  for target in "${list[@]}"; do
    local out="$work/coverage/$target"
    rm -rf "$out" && mkdir -p "$out" "$work/corpus/$target"
    LLVM_PROFILE_FILE="$out/%p.profraw" "$cov_bin/testing/fuzz/${target}_fuzzer" -runs=0 -timeout=10 \
      -max_len="$(max_len "$target")" "$work/corpus/$target" "testing/fuzz/corpus/$target" >"$out/run.log" 2>&1 || true
    llvm-profdata-14 merge -sparse "$out"/*.profraw -o "$out/merged.profdata"
    # Paths as the build saw them; only softdat's sources, not the harness or system headers.
    llvm-cov-14 report "$cov_bin/testing/fuzz/${target}_fuzzer" -instr-profile="$out/merged.profdata" \
      -ignore-filename-regex='(^/usr/|external/|testing/fuzz/)' >"$out/report.txt" 2>/dev/null || true
    echo "== $target: line coverage of softdat's sources it reaches (full report: $out/report.txt)"
    awk 'NR > 2 && $1 != "TOTAL" && $1 !~ /^-/ && NF >= 10 { printf "  %-40s %6s of %5s lines\n", $1, $10, $8 }
         $1 == "TOTAL" { printf "  %-40s %6s of %5s lines\n", "TOTAL", $10, $8 }' "$out/report.txt"
  done
}

capture() {
  bazel build //testing/fuzz:capture_seeds
  "$(bazel info bazel-bin 2>/dev/null)/testing/fuzz/capture_seeds" "$root/testing/fuzz/corpus"
}

main() {
  local command=${1:-all}
  case "$command" in
    ci) ci ;;
    capture) capture ;;
    coverage) shift; coverage "$@" ;;
    list) printf '%s\n' "${targets[@]}" ;;
    -h|--help|help) awk 'NR > 1 && /SPDX-License-Identifier/ { next } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" ;;
    *) run "$@" ;;
  esac
}

# One line, read whole before it runs: a campaign outlives edits to this file.
main "$@"; exit
