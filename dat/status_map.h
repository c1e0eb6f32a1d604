// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The one place where softdat's internal Status becomes a DAT_RETURN, and the guard every entry
// point runs its body under so that no C++ exception crosses the C ABI.
#pragma once

#include <dat2/udat.h>

#include <new>

#include "base/deferred_calls.h"
#include "base/log.h"
#include "base/status.h"

namespace softdat::dat {

// `call` names the DAT call being served ("dat_ep_connect"): a parameter detail becomes the
// subtype of that parameter's position in it (dat/argument_positions.h).
DAT_RETURN MapStatus(Status status, const char* call);

// MapStatus, with success and a bare empty queue answered inline: a consumer spinning on
// dat_evd_dequeue maps an empty queue on every call (a profile of the spin showed the table
// lookups at about 5% of it).
inline DAT_RETURN ToDatReturn(Status status, const char* call) {
  if (status.ok()) return DAT_SUCCESS;
  if (status == Status(Code::kQueueEmpty)) return DAT_QUEUE_EMPTY;
  return MapStatus(status, call);
}

// Runs `body` (returning Status) and maps the result; an allocation failure becomes
// DAT_INSUFFICIENT_RESOURCES, any other exception DAT_INTERNAL_ERROR, each with a log line.
// On the way out it is a safe point (base/deferred_calls.h): CNO proxy agents that the call
// triggered run there, after every softdat lock is released.
template <class Body>
DAT_RETURN Guarded(const char* call, Body&& body) noexcept {
  try {
    const DAT_RETURN result = ToDatReturn(body(), call);
    RunDeferredCalls();
    return result;
  } catch (const std::bad_alloc&) {
    SOFTDAT_LOG(kError, "%s: out of memory", call);
    return ToDatReturn(Status(Code::kInsufficientResources, Detail::kMemory), call);
  } catch (...) {
    SOFTDAT_LOG(kError, "%s: unexpected internal exception", call);
    return DAT_INTERNAL_ERROR;
  }
}

}  // namespace softdat::dat
