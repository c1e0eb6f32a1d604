#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Every source file of the tree opens with softdat's SPDX line (within its first three lines: a
# shebang, or a man page's comment syntax, may come first): C, C++ and Python sources, shell
# scripts, build files, the linker script, and the extensionless scripts of tools/ and .ci/.
# The tree is the checkout the test's data links into: `git ls-files` there, or, in a copy
# without .git (a source tarball), every file but Bazel's output links.
set -euo pipefail
root=$(dirname "$(realpath "$1")")
line='SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only'
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard)
else
  files=$(find . -path './bazel-*' -prune -o -path './.git' -prune -o -type f -print | sed 's|^\./||')
fi
checked=0 missing=()
while IFS= read -r file; do
  [[ -f $file ]] || continue  # deleted in the work tree, not yet committed
  case $file in
    testing/fuzz/corpus/*|*/testdata/*) continue ;;  # data, not source
    *.cc|*.h|*.c|*.py|*.sh|*.bzl|*.bazel|*.BUILD|*.lds|BUILD|*/BUILD|WORKSPACE|*/WORKSPACE|.bazelrc) ;;
    *)
      # An extensionless executable script (tools/dev, tools/bench/compare, .ci/run).
      [[ $file != *.* || $file == .ci/* ]] && [[ -x $file ]] && head -c 2 "$file" | grep -q '^#!' || continue ;;
  esac
  checked=$((checked + 1))
  head -n 3 "$file" | grep -qF "$line" || missing+=("$file")
done <<<"$files"
[[ $checked -gt 300 ]] || { echo "FAIL: only $checked source files found under $root"; exit 1; }
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "FAIL: ${#missing[@]} source files lack '$line' in their first three lines:"
  printf '  %s\n' "${missing[@]}"
  exit 1
fi
echo "PASS: $checked source files carry the SPDX line"
