// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DAT entry points that post data transfer operations to an endpoint.
#include "base/log.h"
#include "core/ep.h"
#include "dat/entry.h"
#include "dat/entry_helpers.h"
#include "dat/raw_bits.h"

namespace softdat::dat {
namespace {

// dat_ep_post_rdma_read and _write: the handle, then the flags' bits, then the EP's post. The
// flags come by reference: a copy would read the consumer's bits as the enum (raw_bits.h).
DAT_RETURN PostRdmaEntry(const char* call, DAT_DTOS operation, DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments,
                         DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE user_cookie, const DAT_RMR_TRIPLET* remote_iov,
                         const DAT_COMPLETION_FLAGS& flags) noexcept {
  return GuardedOn<core::Ep>(call, ep_handle, Detail::kEp, [&](core::Ep& ep) -> Status {
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
    return ep.PostRdma(operation, num_segments, local_iov, user_cookie, remote_iov, flags);
  });
}

}  // namespace

DAT_RETURN EpPostRecv(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                      DAT_DTO_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags) noexcept {
  return GuardedOn<core::Ep>("dat_ep_post_recv", ep_handle, Detail::kEp, [&](core::Ep& ep) -> Status {
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
    return ep.PostRecv(num_segments, local_iov, user_cookie, flags);
  });
}

DAT_RETURN EpPostSend(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                      DAT_DTO_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags) noexcept {
  return GuardedOn<core::Ep>("dat_ep_post_send", ep_handle, Detail::kEp, [&](core::Ep& ep) -> Status {
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
    return ep.PostSend(num_segments, local_iov, user_cookie, flags, false, 0);
  });
}

DAT_RETURN EpPostSendWithInvalidate(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                                    DAT_DTO_COOKIE user_cookie, DAT_COMPLETION_FLAGS flags,
                                    DAT_BOOLEAN invalidate_flag, DAT_RMR_CONTEXT rmr_context) noexcept {
  return GuardedOn<core::Ep>("dat_ep_post_send_with_invalidate", ep_handle, Detail::kEp, [&](core::Ep& ep) -> Status {
    if (!Fits(flags)) return Status(Code::kInvalidParameter, Detail::kParamCompletionFlags);
    if (!Fits(invalidate_flag)) return Status(Code::kInvalidParameter, Detail::kParamInvalidateFlag);
    return ep.PostSend(num_segments, local_iov, user_cookie, flags, invalidate_flag != DAT_FALSE, rmr_context);
  });
}

DAT_RETURN EpPostRdmaRead(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                          DAT_DTO_COOKIE user_cookie, const DAT_RMR_TRIPLET* remote_iov,
                          DAT_COMPLETION_FLAGS flags) noexcept {
  return PostRdmaEntry("dat_ep_post_rdma_read", DAT_DTO_RDMA_READ, ep_handle, num_segments, local_iov, user_cookie,
                       remote_iov, flags);
}

DAT_RETURN EpPostRdmaWrite(DAT_EP_HANDLE ep_handle, DAT_COUNT num_segments, DAT_LMR_TRIPLET* local_iov,
                           DAT_DTO_COOKIE user_cookie, const DAT_RMR_TRIPLET* remote_iov,
                           DAT_COMPLETION_FLAGS flags) noexcept {
  return PostRdmaEntry("dat_ep_post_rdma_write", DAT_DTO_RDMA_WRITE, ep_handle, num_segments, local_iov, user_cookie,
                       remote_iov, flags);
}

// Reading into a local RMR (an iWARP-only DAT 2.0 call) needs the sink named by an STag, which
// softdat's transports do not expose for local use: refused as an unsupported model.
DAT_RETURN EpPostRdmaReadToRmr(DAT_EP_HANDLE ep_handle, const DAT_RMR_TRIPLET*, DAT_DTO_COOKIE,
                               const DAT_RMR_TRIPLET*, DAT_COMPLETION_FLAGS) noexcept {
  return GuardedOn<core::Ep>("dat_ep_post_rdma_read_to_rmr", ep_handle, Detail::kEp, [](core::Ep&) -> Status {
    SOFTDAT_LOG(kWarn, "dat_ep_post_rdma_read_to_rmr: not supported; use dat_ep_post_rdma_read into an LMR");
    return Status(Code::kModelNotSupported);
  });
}

}  // namespace softdat::dat
