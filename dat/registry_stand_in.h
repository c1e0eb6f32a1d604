// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// For tests and fuzzers that call softdat's DAT_PROVIDER table without libdat2: this library
// defines the registry calls dat_provider_init makes (libdat2 exports them), so linking it
// replaces libdat2 — never link both.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

namespace softdat::dat {

// Runs dat_provider_init for `ia_name` with `ia_params`, as libdat2 does for a dat.conf line,
// and returns the table it registered (null if none).
const DAT_PROVIDER* RegisterWithoutLibdat2(const char* ia_name, const char* ia_params);

}  // namespace softdat::dat
