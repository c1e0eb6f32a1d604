#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Guest side of testing/faults/vm_faults_suite.sh: runs guest_faults_test (netem profiles between
# two namespaces, RLIMIT_MEMLOCK on siw0 and rxe0), bounded in time, and prints its figures.
# Usage (inside the VM only): guest_faults_suite.sh <bazel-bin> [gtest arguments]
set -uo pipefail
if [ "${SOFTDAT_VM:-}" != 1 ]; then
  echo "guest_faults_suite.sh: not inside the softdat VM; use testing/faults/vm_faults_suite.sh" >&2
  exit 2
fi
bin=$1; shift
test=$bin/testing/faults/guest_faults_test
work=$SOFTDAT_VM_WORK/faults
mkdir -p "$work/tmp"
log=$work/guest_faults_test.log
start=$SECONDS
TEST_SRCDIR=$test.runfiles TEST_TMPDIR=$work/tmp timeout 900 "$test" "$@" >"$log" 2>&1
rc=$?
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]|^figure|^  (passive|active)' "$log"
if [ $rc != 0 ]; then
  echo "== FAIL guest_faults_test (exit $rc, $((SECONDS - start)) s); the end of its log:"
  tail -n 60 "$log" | sed 's/^/   | /'
else
  echo "== PASS guest_faults_test ($((SECONDS - start)) s)"
fi
exit $rc
