// ibv_alloc_pd and ibv_reg_mr with the access MemoryAccess asks for.
#include "transport/verbs/verbs_memory.h"

#include <cerrno>

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
  ibv_mr* mr = ibv_reg_mr(pd.pd(), address, length, flags);
  if (mr == nullptr) {
    const int error = errno;
    SOFTDAT_LOG(kWarn, "verbs: ibv_reg_mr of %llu bytes failed: errno %d", static_cast<unsigned long long>(length),
                error);
    if (error == EINVAL || error == EFAULT) return Status(Code::kInvalidParameter);
    return Status(Code::kInsufficientResources, Detail::kMemoryRegion);
  }
  out = std::make_unique<VerbsMr>(mr);
  return Status::Ok();
}

}  // namespace softdat::transport::verbs
