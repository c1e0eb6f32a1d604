// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ibv_alloc_pd and ibv_reg_mr with the access MemoryAccess asks for.
#include "transport/verbs/verbs_memory.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace softdat::transport::verbs {

VerbsPd::~VerbsPd() {
  ibv_dereg_mr(empty_);
  ibv_dealloc_pd(pd_);
}

Status VerbsPd::Create(ibv_context* context, std::unique_ptr<ProtectionDomain>& out) {
  ibv_pd* pd = ibv_alloc_pd(context);
  if (pd == nullptr) return Status(Code::kInsufficientResources, Detail::kProtectionDomain);
  ibv_mr* empty = ibv_reg_mr(pd, empty_buffer_, sizeof empty_buffer_, IBV_ACCESS_LOCAL_WRITE);
  if (empty == nullptr) {
    ibv_dealloc_pd(pd);
    return Status(Code::kInsufficientResources, Detail::kMemoryRegion);
  }
  out = std::make_unique<VerbsPd>(pd, empty);
  return Status::Ok();
}

Status RegisterMemory(VerbsPd& pd, void* address, std::uint64_t length, MemoryAccess access,
                      std::unique_ptr<MemoryRegion>& out) {
  int flags = 0;
  if (access.local_write) flags |= IBV_ACCESS_LOCAL_WRITE;
  if (access.remote_read) flags |= IBV_ACCESS_REMOTE_READ;
  // Verbs refuses remote write without local write.
  if (access.remote_write) flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  // Only where the device has atomics (core asks only then); it needs local write too.
  if (access.remote_atomic) flags |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
  ibv_mr* mr = ibv_reg_mr(pd.pd(), address, length, flags);
  if (mr == nullptr) {
    const int error = errno;
    if (error == ENOMEM || error == EPERM || error == EAGAIN) {
      // Registration pins the pages: most often the pinned-memory limit, which the consumer sets.
      rlimit limit{};
      getrlimit(RLIMIT_MEMLOCK, &limit);
      SOFTDAT_LOG(kWarn,
                  "verbs: ibv_reg_mr of %llu bytes failed: %s (RLIMIT_MEMLOCK is %llu KiB: raise it with "
                  "ulimit -l, or memlock in limits.conf)",
                  static_cast<unsigned long long>(length), std::strerror(error),
                  limit.rlim_cur == RLIM_INFINITY ? ~0ull : static_cast<unsigned long long>(limit.rlim_cur / 1024));
    } else {
      SOFTDAT_LOG(kWarn, "verbs: ibv_reg_mr of %llu bytes failed: %s", static_cast<unsigned long long>(length),
                  std::strerror(error));
    }
    if (error == EINVAL || error == EFAULT) return Status(Code::kInvalidParameter);
    return Status(Code::kInsufficientResources, Detail::kMemoryRegion);
  }
  out = std::make_unique<VerbsMr>(mr);
  return Status::Ok();
}

}  // namespace softdat::transport::verbs
