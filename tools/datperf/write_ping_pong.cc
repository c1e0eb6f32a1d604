// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// write_lat's posting and spinning (write_ping_pong.h).
#include "tools/datperf/write_ping_pong.h"

#include <time.h>

#include "tools/datperf/dat_env.h"
#include "tools/datperf/protocol.h"

namespace softdat::datperf {
namespace {

// A signaled completion not reaped within this long means the provider lost it.
constexpr std::uint64_t kReapBoundNs = 30'000'000'000ull;

}  // namespace

std::uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

bool WritePingPong::Post(const DAT_LMR_TRIPLET& local, const DAT_RMR_TRIPLET& remote, std::uint64_t round,
                         std::string& error) {
  const bool signaled = round % kWriteSignalEvery == kWriteSignalEvery - 1;
  const DAT_COMPLETION_FLAGS flags = signaled ? DAT_COMPLETION_DEFAULT_FLAG : DAT_COMPLETION_SUPPRESS_FLAG;
  DAT_DTO_COOKIE cookie{};
  cookie.as_64 = round;
  DAT_RETURN status = dat_ep_post_rdma_write(ep_, 1, const_cast<DAT_LMR_TRIPLET*>(&local), cookie,
                                             const_cast<DAT_RMR_TRIPLET*>(&remote), flags);
  if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_rdma_write", status), false;
  signaled_ += signaled ? 1 : 0;
  if (notify_ == Notify::kSend) {
    status = dat_ep_post_send(ep_, 0, nullptr, cookie, flags);
    if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_send (notification)", status), false;
    signaled_ += signaled ? 1 : 0;
  }
  return signaled_ == 0 || Reap(error);
}

bool WritePingPong::Reap(std::string& error) {
  SpinBound bound(kReapBoundNs / 1000);
  DAT_EVENT event;
  for (std::uint32_t spins = 0; signaled_ > 0; ++spins) {
    const DAT_RETURN status = dat_evd_dequeue(request_evd_, &event);
    if (status == DAT_SUCCESS) {
      if (event.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS)
        return error = "a Write or notification completed with status " +
                       std::to_string(event.event_data.dto_completion_event_data.status), false;
      --signaled_;
    } else if (DAT_GET_TYPE(status) != DAT_QUEUE_EMPTY) {
      return error = DatError("reaping a Write's completion", status), false;
    } else if ((spins & 1023) == 1023 && bound.Passed()) {
      return error = "a signaled Write did not complete within 30 s", false;
    }
  }
  return true;
}

WritePingPong::Landed WritePingPong::Await(const std::uint8_t* mailbox, std::uint8_t tag, std::uint64_t give_up_ns) {
  DAT_EVENT event;
  for (std::uint32_t spins = 0;; ++spins) {
    // An acquire load: the provider placed the bytes before this one (in order, as an RNIC
    // places a Write), and the caller reads them after.
    const std::uint8_t seen = __atomic_load_n(mailbox, __ATOMIC_ACQUIRE);
    if (seen == tag) return Landed::kTag;
    if (seen == kEndTag) return Landed::kEnd;
    if (spin_ == Spin::kDequeue && dat_evd_dequeue(request_evd_, &event) == DAT_SUCCESS && signaled_ > 0) --signaled_;
    if ((spins & 4095) == 4095 && MonotonicNs() > give_up_ns) return Landed::kTimedOut;
  }
}

}  // namespace softdat::datperf
