// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Handle storage: per-size free lists under one mutex. Handles are created and freed on the
// control path only (never per DTO), so one lock is simpler than per-class pools and fast enough.
#include "base/mutex.h"
#include "core/handle.h"

#include <cstdlib>
#include <mutex>

namespace softdat::core {
namespace {

constexpr std::size_t kGranule = 64;
constexpr std::size_t kClasses = kMaxHandleObjectSize / kGranule + 1;

struct FreeNode {
  HandleHeader header;  // keeps the kFreed tag readable while the slot is free
  FreeNode* next;
};

struct Pools {
  softdat::Mutex mutex;
  FreeNode* heads[kClasses] = {};
};

Pools& GetPools() {
  static Pools* pools = new Pools;  // never destroyed: handles may be checked during exit
  return *pools;
}

std::size_t ClassOf(std::size_t size) { return (size + kGranule - 1) / kGranule; }

}  // namespace

void* AllocateHandleStorage(std::size_t size) {
  if (size < sizeof(FreeNode)) size = sizeof(FreeNode);
  const std::size_t cls = ClassOf(size);
  {
    Pools& pools = GetPools();
    std::lock_guard lock(pools.mutex);
    if (FreeNode* node = pools.heads[cls]) {
      pools.heads[cls] = node->next;
      return node;
    }
  }
  void* storage = std::aligned_alloc(kGranule, ClassOf(size) * kGranule);
  if (storage == nullptr) throw std::bad_alloc();
  return storage;
}

void ReleaseHandleStorage(void* storage, std::size_t size) {
  if (size < sizeof(FreeNode)) size = sizeof(FreeNode);
  const std::size_t cls = ClassOf(size);
  auto* node = static_cast<FreeNode*>(storage);
  Pools& pools = GetPools();
  std::lock_guard lock(pools.mutex);
  node->next = pools.heads[cls];
  pools.heads[cls] = node;
}

HandleKind KindOf(const void* handle) {
  if (handle == nullptr || reinterpret_cast<std::uintptr_t>(handle) % alignof(HandleHeader) != 0)
    return HandleKind::kFreed;
  return static_cast<const HandleHeader*>(handle)->kind.load(std::memory_order_acquire);
}

}  // namespace softdat::core
