// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT_PROVIDER slots of features softdat does not offer, answered the way DAT says an
// unsupported model is answered: DAT_MODEL_NOT_SUPPORTED, with one log line per slot naming the
// feature. (Distinct from DAT_NOT_IMPLEMENTED, which would mean "not built yet".)
#pragma once

#include <dat2/udat.h>

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "base/log.h"

namespace softdat::dat {

// A string literal as a template argument, so each slot gets its own once-only log flag.
template <std::size_t N>
struct SlotName {
  char text[N];
  constexpr SlotName(const char (&name)[N]) { std::copy_n(name, N, text); }
};

template <class Fn, SlotName Name>
struct Unsupported;

template <class... Args, SlotName Name>
struct Unsupported<DAT_RETURN (*)(Args...), Name> {
  static DAT_RETURN Call(Args...) noexcept {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true, std::memory_order_relaxed))
      SOFTDAT_LOG(kInfo, "%s", Name.text);
    return DAT_MODEL_NOT_SUPPORTED;
  }
};

}  // namespace softdat::dat

// Fills `table.slot` with a DAT_MODEL_NOT_SUPPORTED answer that logs `why` once.
#define SOFTDAT_SLOT_UNSUPPORTED(table, slot, why) \
  (table).slot = &::softdat::dat::Unsupported<decltype((table).slot), why>::Call
