#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# iwarp-dump on captured traffic (testdata/, see its README): each capture's output must be the
# expected text, line for line. Args: the iwarp-dump binary, then the testdata files.
set -euo pipefail
dump=$1; shift
status=0
check() {  # check EXPECTED_FILE IWARP_DUMP_ARGS...
  local expected=$1; shift
  if diff -u "$expected" <("$dump" "$@"); then
    echo "PASS iwarp-dump $*"
  else
    echo "FAIL iwarp-dump $* (expected $expected)"; status=1
  fi
}
dir=$(dirname "$1")
check "$dir/softdat-tcp-loopback.expected" "$dir/softdat-tcp-loopback.pcap"
check "$dir/softdat-tcp-server-stream.expected" --payload=16 "$dir/softdat-tcp-server-stream.bin"
check "$dir/siw-initiator.expected" "$dir/siw-initiator.pcap"
check "$dir/siw-responder.expected" "$dir/siw-responder.pcap"
# Usage errors and unreadable input.
if "$dump" >/dev/null 2>&1; then echo "FAIL no file given yet exit 0"; status=1; fi
if "$dump" /nonexistent/file >/dev/null 2>&1; then echo "FAIL unreadable file yet exit 0"; status=1; fi
exit $status
