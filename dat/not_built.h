// The default for a DAT_PROVIDER slot whose semantics are not built yet: it logs the call once
// per slot and returns DAT_NOT_IMPLEMENTED. Every such slot is named in provider_table.cc, so the
// list of what is missing is one grep away.
#pragma once

#include <dat2/udat.h>

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "base/log.h"

namespace softdat::dat {

template <std::size_t N>
struct SlotName {
  char text[N];
  constexpr SlotName(const char (&name)[N]) { std::copy_n(name, N, text); }
};

template <class Fn, SlotName Name>
struct NotBuilt;

template <class... Args, SlotName Name>
struct NotBuilt<DAT_RETURN (*)(Args...), Name> {
  static DAT_RETURN Call(Args...) noexcept {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true, std::memory_order_relaxed))
      SOFTDAT_LOG(kWarn, "%s: not implemented in this build of softdat", Name.text);
    return DAT_NOT_IMPLEMENTED;
  }
};

}  // namespace softdat::dat

// Fills `table.slot` with the DAT_NOT_IMPLEMENTED default, named after the DAT call.
#define SOFTDAT_SLOT_NOT_BUILT(table, slot, dat_call) \
  (table).slot = &::softdat::dat::NotBuilt<decltype((table).slot), dat_call>::Call
