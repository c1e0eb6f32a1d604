// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The one place DAT argument positions are written down: each DAT call softdat implements, with
// its parameters in order, named as the man pages name them (base/status.h's Detail::kParam*).
// Code below dat/ says which parameter was wrong; ToDatReturn turns that into the position in
// the call being served.
#pragma once

#include <vector>

#include "base/status.h"

namespace softdat::dat {

// The 1-based position of `param` in DAT call `call` ("dat_ep_connect"), or 0 when the call is
// unknown or has no such parameter.
int ArgumentPosition(const char* call, Detail param);

// Every call named in the table (tests go through them all).
std::vector<const char*> KnownCalls();

}  // namespace softdat::dat
