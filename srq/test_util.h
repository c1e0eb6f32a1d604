// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Helpers shared by the srq/ tests: cookies, segments, a pool and accounts in one line, and a
// listener that counts low-watermark events.
#pragma once

#include <dat2/udat.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "srq/msn_window.h"
#include "srq/receive_source.h"
#include "srq/low_watermark_listener.h"
#include "srq/srq_pool.h"

namespace softdat::srq::testing {

inline DAT_DTO_COOKIE Cookie(std::uint64_t value) {
  DAT_DTO_COOKIE cookie{};
  cookie.as_64 = value;
  return cookie;
}

// A segment whose fields all derive from `tag`, so a test can tell which post it came from.
inline RecvSegment Segment(std::uint64_t tag, std::uint32_t length = 100) {
  return RecvSegment{0x10000 + tag * 0x1000, length, static_cast<std::uint32_t>(tag)};
}

inline std::unique_ptr<SrqPool> MakePool(std::uint32_t max_recv_dtos, std::uint32_t max_iov = 4,
                                         LowWatermarkListener* listener = nullptr) {
  std::unique_ptr<SrqPool> pool;
  EXPECT_TRUE(SrqPool::Create(max_recv_dtos, max_iov, listener, pool).ok());
  return pool;
}

// An MSN window for `pool`, already attached.
inline std::unique_ptr<MsnWindow> MakeWindow(SrqPool& pool, std::uint32_t window = 16,
                                             std::uint32_t first_msn = 1) {
  std::unique_ptr<MsnWindow> made;
  EXPECT_TRUE(MsnWindow::Create(window, first_msn, made).ok());
  EXPECT_TRUE(pool.Attach(*made).ok());
  return made;
}

// Place, then pop every completion that became deliverable into `out` (at least ep.window()
// entries), as a receive source does.
inline Status Complete(SrqPool& pool, MsnWindow& ep, std::uint32_t msn, std::uint64_t length,
                       DAT_DTO_COMPLETION_STATUS status, std::span<RecvCompletion> out,
                       std::size_t& delivered) {
  EXPECT_GE(out.size(), ep.window());
  if (Status placed = pool.Place(ep, msn, length, status); !placed.ok()) return placed;
  std::size_t count = 0;
  while (count < out.size() && pool.PopCompletion(ep, out[count])) ++count;
  delivered = count;
  return Status::Ok();
}

// Close, then pop every held buffer into `out`.
inline Status FlushEndpoint(SrqPool& pool, MsnWindow& ep, std::span<RecvCompletion> out,
                            std::size_t& delivered) {
  EXPECT_GE(out.size(), ep.window());
  if (Status closed = pool.Close(ep); !closed.ok()) return closed;
  std::size_t count = 0;
  while (count < out.size() && pool.PopCompletion(ep, out[count])) ++count;
  delivered = count;
  return Status::Ok();
}

// What a fused device completion's tests (CompleteDeviceChosen) expect of the completion that
// `source` hands out next.
inline ::testing::AssertionResult PopsCompletion(ReceiveSource& source, std::uint64_t cookie, std::uint64_t length,
                                                 DAT_DTO_COMPLETION_STATUS status, bool solicited) {
  RecvCompletion done{};
  if (!source.PopCompletion(done)) return ::testing::AssertionFailure() << "no completion";
  if (done.cookie.as_64 != cookie || done.transferred_length != length || done.status != status ||
      done.notes.solicited != solicited)
    return ::testing::AssertionFailure() << "completion of cookie " << done.cookie.as_64 << ", " << done.transferred_length
                                         << " bytes, status " << done.status << ", solicited " << done.notes.solicited;
  return ::testing::AssertionSuccess();
}

// Posts one single-segment buffer tagged `tag` (cookie == tag).
inline Status PostTagged(SrqPool& pool, std::uint64_t tag, std::uint32_t length = 100) {
  const RecvSegment segment = Segment(tag, length);
  return pool.Post(Cookie(tag), {&segment, 1});
}

class CountingListener : public LowWatermarkListener {
 public:
  void OnLowWatermark() override { calls.fetch_add(1, std::memory_order_relaxed); }
  int count() const { return calls.load(std::memory_order_relaxed); }
  std::atomic<int> calls{0};
};

}  // namespace softdat::srq::testing
