#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The provider library exports exactly dat_provider_init and dat_provider_fini.
set -euo pipefail
lib="$1"
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWDBVR]$/ {print $3}' | sort)
expected=$'dat_provider_fini\ndat_provider_init'
if [[ "$exported" != "$expected" ]]; then
  echo "FAIL: $lib exports:"; echo "$exported"; exit 1
fi
echo "PASS: $lib exports only dat_provider_init and dat_provider_fini"
