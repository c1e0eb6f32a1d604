// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT_PROVIDER table every registered provider entry dispatches through.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

namespace softdat::dat {

// Every slot of the table: built calls and NOT_IMPLEMENTED defaults.
void FillProviderTable(DAT_PROVIDER& table);

}  // namespace softdat::dat
