#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# `tools/dev help` prints the script's whole header: every command it accepts, and the note on
# extra `bazel test` arguments (the last line once fell off a fixed line range).
set -euo pipefail
dev=$1
help=$("$dev" help)
grep -q "Extra arguments after \`test\` go to \`bazel test\`" <<<"$help" || {
  echo "tools/dev help lost the line on extra bazel test arguments:"; echo "$help"; exit 1; }
# Every command of the dispatch must be in the help.
commands=$(sed -n '/^case "\$command" in/,/^esac/p' "$dev" | grep -oE '^  [a-z][a-z|-]*\)' | tr -d ' )' | tr '|' '\n')
for command in $commands; do
  case $command in help|-h|--help) continue ;; esac
  grep -qE "tools/dev $command\b" <<<"$help" || { echo "tools/dev help does not mention '$command'"; exit 1; }
done
echo "tools/dev help: every command documented"
