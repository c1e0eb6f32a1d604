// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// See registry_stand_in.h.
#include "dat/registry_stand_in.h"

#include <cstring>

namespace {

const DAT_PROVIDER* last_registered = nullptr;

}  // namespace

extern "C" DAT_RETURN dat_registry_add_provider(const DAT_PROVIDER* provider, const DAT_PROVIDER_INFO*) {
  last_registered = provider;
  return DAT_SUCCESS;
}

extern "C" DAT_RETURN dat_registry_remove_provider(const DAT_PROVIDER*, const DAT_PROVIDER_INFO*) {
  return DAT_SUCCESS;
}

extern "C" void dat_provider_init(const DAT_PROVIDER_INFO* info, const char* ia_params);

namespace softdat::dat {

const DAT_PROVIDER* RegisterWithoutLibdat2(const char* ia_name, const char* ia_params) {
  DAT_PROVIDER_INFO info{};
  std::strncpy(info.ia_name, ia_name, DAT_NAME_MAX_LENGTH - 1);
  info.dapl_version_major = 2;
  last_registered = nullptr;
  dat_provider_init(&info, ia_params);
  return last_registered;
}

}  // namespace softdat::dat
