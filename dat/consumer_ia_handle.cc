// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Finds libdat2's wrapped handle for one of our IAs by asking libdat2 to unwrap candidate indices
// (its wrapped handles are small integers), once per IA.
#include "dat/consumer_ia_handle.h"

#include <cstdint>

// Exported by libdat2 but absent from its headers; weak so that tests without libdat2 link.
extern "C" DAT_RETURN dats_get_ia_handle(DAT_IA_HANDLE handle, DAT_IA_HANDLE* ia_handle)
    __attribute__((weak));

namespace softdat::dat {
namespace {

// libdat2 grows its table by small steps; open IAs per process are few.
constexpr std::uintptr_t kMaxWrappedIndex = 4096;

}  // namespace

DAT_IA_HANDLE ConsumerIaHandle(core::Ia* ia) {
  DAT_IA_HANDLE cached = ia->consumer_handle().load(std::memory_order_acquire);
  if (cached != nullptr) return cached;
  if (dats_get_ia_handle == nullptr) return ia;  // not loaded by libdat2
  for (std::uintptr_t index = 0; index < kMaxWrappedIndex; ++index) {
    DAT_IA_HANDLE candidate = reinterpret_cast<DAT_IA_HANDLE>(index);
    DAT_IA_HANDLE unwrapped = nullptr;
    if (dats_get_ia_handle(candidate, &unwrapped) == DAT_SUCCESS && unwrapped == ia) {
      ia->consumer_handle().store(candidate, std::memory_order_release);
      return candidate;
    }
  }
  return ia;
}

}  // namespace softdat::dat
