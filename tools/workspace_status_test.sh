#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tools/workspace_status.sh names the commit of the checkout it is in, and "unknown" for a tree
# that is no checkout of its own: a source tarball unpacked on its own, or inside another git
# repository (whose commit is not the tree's).
#   workspace_status_test.sh WORKSPACE_STATUS_SH
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
script=$(realpath "$1")
work=$TEST_TMPDIR
git() { command git -c user.name=test -c user.email=test@example.invalid -c init.defaultBranch=main "$@"; }

# A tarball's tree: no .git anywhere above it.
mkdir -p "$work/tarball/tools"
cp "$script" "$work/tarball/tools/"
[[ $("$work/tarball/tools/workspace_status.sh") == "STABLE_SOFTDAT_COMMIT unknown" ]] || fail "tarball: $("$work/tarball/tools/workspace_status.sh")"

# The same tree unpacked inside another repository.
git init -q "$work/home"
git -C "$work/home" commit -q --allow-empty -m other
mkdir -p "$work/home/src/softdat/tools"
cp "$script" "$work/home/src/softdat/tools/"
[[ $("$work/home/src/softdat/tools/workspace_status.sh") == "STABLE_SOFTDAT_COMMIT unknown" ]] ||
  fail "inside another repository: $("$work/home/src/softdat/tools/workspace_status.sh")"

# A checkout: its own commit.
git init -q "$work/checkout"
mkdir -p "$work/checkout/tools"
cp "$script" "$work/checkout/tools/"
git -C "$work/checkout" add tools
git -C "$work/checkout" commit -q -m first
expected="STABLE_SOFTDAT_COMMIT $(git -C "$work/checkout" rev-parse --short=12 HEAD)"
[[ $("$work/checkout/tools/workspace_status.sh") == "$expected" ]] || fail "checkout: $("$work/checkout/tools/workspace_status.sh")"
echo "PASS: the checkout's commit, and unknown for a tree that is not one"
