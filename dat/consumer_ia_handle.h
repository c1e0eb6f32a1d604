// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The IA handle as the consumer knows it. libdat2 wraps every IA handle (an index into its own
// table) and unwraps it before calling us, so a query that reports an ia_handle must give back the
// wrapped value, or the consumer's next call with it fails.
#pragma once

#include <dat2/udat.h>

#include "core/ia.h"

namespace softdat::dat {

DAT_IA_HANDLE ConsumerIaHandle(core::Ia* ia);

}  // namespace softdat::dat
