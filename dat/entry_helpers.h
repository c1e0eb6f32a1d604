// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The steps DAT entry points share, each in the order an entry point checks: first the handle the
// call acts on (DAT_INVALID_HANDLE, with the subtype the entry names, when it is not a live object
// of that kind), then the entry's own argument checks, then one core call, its status mapped.
#pragma once

#include <dat2/udat.h>

#include "base/status.h"
#include "core/handle.h"
#include "dat/consumer_ia_handle.h"
#include "dat/raw_bits.h"
#include "dat/status_map.h"

namespace softdat::dat {

// Guarded(call) around `body(object)` once `handle` is a live Object; otherwise DAT_INVALID_HANDLE
// with `bad_handle` as its subtype, and `body` does not run.
template <class Object, class Body>
DAT_RETURN GuardedOn(const char* call, const void* handle, Detail bad_handle, Body&& body) noexcept {
  return Guarded(call, [&]() -> Status {
    Object* object = core::HandleAs<Object>(handle);
    if (object == nullptr) return Status(Code::kInvalidHandle, bad_handle);
    return body(*object);
  });
}

// An optional handle argument: DAT_HANDLE_NULL gives nullptr; anything else must be a live Object
// (false when it is not).
template <class Object>
bool ResolveOptional(const void* handle, Object*& out) {
  out = nullptr;
  if (handle == DAT_HANDLE_NULL) return true;
  out = core::HandleAs<Object>(handle);
  return out != nullptr;
}

// dat_<object>_query of an object that reports its IA: the handle, then the param pointer
// (DAT_INVALID_PARAMETER); the object fills the fields of the mask bits its type holds, and the
// IA handle field gets the handle the consumer holds, not core's. The mask comes by reference: a
// copy would read the consumer's bits as the enum type, which may not hold them (raw_bits.h).
template <class Object, class Mask, class Param, class Field>
DAT_RETURN QueryEntry(const char* call, const void* handle, Detail bad_handle, const Mask& mask, Param* param,
                      Field ia_field) noexcept {
  return GuardedOn<Object>(call, handle, bad_handle, [&](const Object& object) -> Status {
    if (param == nullptr) return Status(Code::kInvalidParameter, Detail::kParamParam);
    const auto known = KnownBits(mask);
    object.Query(known, *param);
    if (known & ia_field) param->ia_handle = ConsumerIaHandle(object.ia());
    return Status::Ok();
  });
}

// dat_<object>_free: the handle, then Object::Free.
template <class Object>
DAT_RETURN FreeEntry(const char* call, const void* handle, Detail bad_handle) noexcept {
  return GuardedOn<Object>(call, handle, bad_handle, [](Object& object) { return Object::Free(&object); });
}

// A create's last step: the new object's handle goes to the consumer's `out` only on success.
// `object` is the variable the create fills, read once the create has returned.
template <class Object, class Handle>
Status HandOut(Status status, Object* const& object, Handle* out) {
  if (status.ok()) *out = object;
  return status;
}

}  // namespace softdat::dat
