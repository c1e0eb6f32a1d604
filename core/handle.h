// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The header every softdat DAT handle points at, and the arena the handle objects live in.
//
// libdat2 finds the provider of any handle by reading a DAT_PROVIDER* at its address
// (DAT_HANDLE_TO_PROVIDER), so that pointer must be the first word of every object we hand out.
// The kind tag after it lets dat/ reject a handle of the wrong type. Handle storage is never given
// back to the system: a freed object's tag reads kFreed, so a stale handle that reaches us gives
// DAT_INVALID_HANDLE instead of a read of unmapped memory.
#pragma once

#include <dat2/udat.h>
#include <dat2/dat_registry.h>  // DAT_PROVIDER

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace softdat::core {

enum class HandleKind : std::uint32_t {
  kFreed = 0x5df0dead,
  kIa = 0x5df00001,
  kEp,
  kLmr,
  kRmr,
  kPz,
  kPsp,
  kRsp,
  kCr,
  kCno,
  kEvd,
  kSrq,
  // Not DAT handles, but handed to consumers by the IB extension (dat_ib_extensions.h) and
  // checked when they come back: a UD address handle and a UD connection (CM) record.
  kAddressHandle,
  kDatagramCm,
};

struct HandleHeader {
  DAT_PROVIDER* provider = nullptr;  // must stay the first member: see above
  std::atomic<HandleKind> kind{HandleKind::kFreed};
  std::atomic<DAT_CONTEXT> consumer_context{};
};

// Handle objects keep large tables behind pointers; the arena pools sizes up to this.
inline constexpr std::size_t kMaxHandleObjectSize = 16384;

// Raw storage for handle objects: size-classed free lists; memory is reused, never unmapped.
void* AllocateHandleStorage(std::size_t size);
void ReleaseHandleStorage(void* storage, std::size_t size);

// Creates a T (a class whose first base is HandleHeader) tagged T::kKind for `provider`.
template <class T, class... Args>
T* NewHandle(DAT_PROVIDER* provider, Args&&... args) {
  static_assert(!std::is_polymorphic_v<T>, "a vtable pointer would displace the DAT_PROVIDER*");
  static_assert(std::is_base_of_v<HandleHeader, T>);
  static_assert(sizeof(T) <= kMaxHandleObjectSize);
  void* storage = AllocateHandleStorage(sizeof(T));
  T* object = new (storage) T(std::forward<Args>(args)...);
  object->provider = provider;
  object->kind.store(T::kKind, std::memory_order_release);
  return object;
}

// Destroys a handle object and stamps its storage kFreed.
template <class T>
void DeleteHandle(T* object) {
  void* storage = object;
  object->kind.store(HandleKind::kFreed, std::memory_order_release);
  object->~T();
  // The destructor ended the header's lifetime; stamp the raw word so later checks read kFreed.
  auto* header = static_cast<HandleHeader*>(storage);
  new (&header->kind) std::atomic<HandleKind>(HandleKind::kFreed);
  ReleaseHandleStorage(storage, sizeof(T));
}

// The object behind `handle` if it is a live T, else nullptr. Never dereferences beyond the
// header, and only after a null and alignment check.
template <class T>
T* HandleAs(const void* handle) {
  if (handle == nullptr || reinterpret_cast<std::uintptr_t>(handle) % alignof(HandleHeader) != 0)
    return nullptr;
  auto* header = static_cast<const HandleHeader*>(handle);
  if (header->kind.load(std::memory_order_acquire) != T::kKind) return nullptr;
  return static_cast<T*>(const_cast<HandleHeader*>(header));
}

// The live kind behind any handle (kFreed for a stale or foreign one).
HandleKind KindOf(const void* handle);

}  // namespace softdat::core
