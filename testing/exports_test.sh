#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The provider library exports exactly what libdat2 looks up: dat_provider_init, dat_provider_fini
# and dapl_extensions (the IB extension calls made by IA name, dat_ib_open_query).
set -euo pipefail
lib="$1"
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWDBVR]$/ {print $3}' | sort)
expected=$'dapl_extensions\ndat_provider_fini\ndat_provider_init'
if [[ "$exported" != "$expected" ]]; then
  echo "FAIL: $lib exports:"; echo "$exported"; exit 1
fi
echo "PASS: $lib exports only dapl_extensions, dat_provider_init and dat_provider_fini"
