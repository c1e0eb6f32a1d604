// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The providers libdat2 registered with us: one per dat.conf line that names this library. Each
// holds the DAT_PROVIDER table libdat2 dispatches through and the IA params of its line.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <string>

namespace softdat::dat {

struct ProviderEntry {
  DAT_PROVIDER table{};
  char ia_name[DAT_NAME_MAX_LENGTH] = {};
  std::string params;
  bool registered = false;
};

// The registered entry for `ia_name`, or nullptr.
ProviderEntry* FindProvider(const char* ia_name);

}  // namespace softdat::dat
