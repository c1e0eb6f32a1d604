// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_provider_init / dat_provider_fini: the only two symbols the library exports (see
// provider.lds). libdat2 calls init once per dat.conf line naming this library, when a consumer
// first opens that IA name; the registry functions resolve to the consumer's libdat2.
#include "base/mutex.h"
#include "dat/provider_entry.h"
#include "dat/provider_table.h"

#include <cstring>
#include <mutex>

#include "base/dat_names.h"
#include "base/log.h"

namespace softdat::dat {
namespace {

constexpr int kMaxProviders = 32;

struct Providers {
  softdat::Mutex mutex;
  ProviderEntry entries[kMaxProviders];
};

Providers& GetProviders() {
  static Providers* providers = new Providers;  // tables must outlive every late handle call
  return *providers;
}

}  // namespace

ProviderEntry* FindProvider(const char* ia_name) {
  if (ia_name == nullptr) return nullptr;
  Providers& providers = GetProviders();
  std::lock_guard lock(providers.mutex);
  for (ProviderEntry& entry : providers.entries) {
    if (entry.registered && std::strncmp(entry.ia_name, ia_name, DAT_NAME_MAX_LENGTH) == 0)
      return &entry;
  }
  return nullptr;
}

}  // namespace softdat::dat

extern "C" {

void dat_provider_init(const DAT_PROVIDER_INFO* info, const char* ia_params) {
  using softdat::dat::ProviderEntry;
  if (info == nullptr) return;
  auto& providers = softdat::dat::GetProviders();
  std::lock_guard lock(providers.mutex);
  ProviderEntry* slot = nullptr;
  for (ProviderEntry& entry : providers.entries) {
    if (entry.registered && std::strncmp(entry.ia_name, info->ia_name, DAT_NAME_MAX_LENGTH) == 0) {
      return;  // already registered under this name
    }
    if (!entry.registered && slot == nullptr) slot = &entry;
  }
  if (slot == nullptr) {
    SOFTDAT_LOG(kError, "dat_provider_init(%s): more than %d IA names in dat.conf", info->ia_name,
                softdat::dat::kMaxProviders);
    return;
  }
  try {
    // strnlen + memcpy, not strncpy: GCC's -O2 stringop-truncation warning broke --config=opt.
    const std::size_t length = strnlen(info->ia_name, DAT_NAME_MAX_LENGTH - 1);
    std::memcpy(slot->ia_name, info->ia_name, length);
    slot->ia_name[length] = '\0';
    slot->params = ia_params != nullptr ? ia_params : "";
    softdat::dat::FillProviderTable(slot->table);
    slot->table.device_name = slot->ia_name;
  } catch (...) {
    SOFTDAT_LOG(kError, "dat_provider_init(%s): out of memory", info->ia_name);
    return;
  }
  DAT_RETURN status = dat_registry_add_provider(&slot->table, info);
  if (status != DAT_SUCCESS) {
    SOFTDAT_LOG(kError, "dat_provider_init(%s): registry refused the provider (%s)", info->ia_name,
                softdat::DatReturnText(static_cast<std::uint32_t>(status)).text);
    return;
  }
  slot->registered = true;
  SOFTDAT_LOG(kInfo, "dat_provider_init(%s): registered, params \"%s\"", info->ia_name,
              slot->params.c_str());
}

void dat_provider_fini(const DAT_PROVIDER_INFO* info) {
  using softdat::dat::ProviderEntry;
  if (info == nullptr) return;
  auto& providers = softdat::dat::GetProviders();
  std::lock_guard lock(providers.mutex);
  for (ProviderEntry& entry : providers.entries) {
    if (!entry.registered || std::strncmp(entry.ia_name, info->ia_name, DAT_NAME_MAX_LENGTH) != 0)
      continue;
    (void)dat_registry_remove_provider(&entry.table, info);
    entry.registered = false;
  }
}

}  // extern "C"
