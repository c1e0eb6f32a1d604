// What an IA reports through dat_ia_query: IA and provider attributes. Every value is what this
// build really does, so a consumer that sizes itself from them never meets a surprise.
#pragma once

#include <dat2/udat.h>

namespace softdat::core {

class Ia;

// The name and version softdat reports as its provider (provider_name, provider_version_*).
inline constexpr const char kProviderName[] = "softdat";
inline constexpr DAT_UINT32 kProviderVersionMajor = 0;
inline constexpr DAT_UINT32 kProviderVersionMinor = 1;

void FillIaAttr(const Ia& ia, DAT_IA_ATTR& attr);
void FillProviderAttr(const Ia& ia, DAT_PROVIDER_ATTR& attr);

}  // namespace softdat::core
