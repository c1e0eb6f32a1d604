#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# verbs_transport_test fails, rather than skips, when SOFTDAT_VERBS_DEVICE names a device that
# cannot be opened: the device was asked for by name. Runs one fixture test and the test that opens
# its devices itself, over a device name no host has.
set -uo pipefail
test_binary="$1"
# Without Bazel's XML_OUTPUT_FILE: the inner binary's deliberate failures are not this test's
# report (tools/dev test counts the failures in each test.xml).
output=$(env -u XML_OUTPUT_FILE -u GTEST_OUTPUT SOFTDAT_VERBS_DEVICE="softdat_absent0 1" "$test_binary" \
  --gtest_filter='VerbsTransportTest.DeviceAttributesAreTheDevicesOwn:VerbsAsyncEventsTest.*' 2>&1)
rc=$?
fail=0
if ((rc == 0)); then echo "FAIL: the test passed over an absent device"; fail=1; fi
if grep -q '^\[  SKIPPED \]' <<<"$output"; then echo "FAIL: a test skipped over an absent device"; fail=1; fi
failed=$(grep -c '^\[  FAILED  \] Verbs.*ms)$' <<<"$output")
if ((failed != 2)); then echo "FAIL: $failed tests failed, not the 2 run"; fail=1; fi
if ! grep -q 'SOFTDAT_VERBS_DEVICE names softdat_absent0 port 1, which cannot be opened' <<<"$output"; then
  echo "FAIL: no message naming the device"; fail=1
fi
if ((fail != 0)); then
  echo "--- its output:"; echo "$output"; exit 1
fi
echo "PASS: an absent SOFTDAT_VERBS_DEVICE fails both tests and names the device"
