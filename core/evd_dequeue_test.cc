// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_evd_dequeue drives the transport's progress: when its queue is empty (a consumer spinning
// on dequeue moves its own transport), and, though events are queued, when the transport says
// Work it holds back is due (Transport::ProgressDue).
#include <gtest/gtest.h>

#include "testing/fake_device/device_test_fixture.h"

namespace softdat::core::device_testing {
namespace {

class EvdDequeueTest : public DeviceTest {
 protected:
  // Two Send completions queued on request_evd_, the device idle.
  void QueueTwoCompletions() {
    Ep* server = MakeEp();
    Ep* client = MakeEp();
    ASSERT_TRUE(PostRecv(server, 0, 1).ok());
    ASSERT_TRUE(PostRecv(server, 1, 2).ok());
    Connect(client, server);
    ASSERT_TRUE(Send(client, 8, "one", 81).ok());
    ASSERT_TRUE(Send(client, 9, "two", 82).ok());
    Settle();
  }
};

TEST_F(EvdDequeueTest, DequeueOfAQueuedEventLeavesTheTransportAloneUnlessItSaysWorkIsDue) {
  QueueTwoCompletions();
  DAT_EVENT event{};
  std::size_t calls = fake().progress_calls();
  ASSERT_TRUE(request_evd_->Dequeue(event).ok());
  EXPECT_EQ(Dto(event).user_cookie.as_64, 81u);
  EXPECT_EQ(fake().progress_calls(), calls) << "an event was queued and nothing was due: no progress call";

  fake().behaviour().progress_due = true;
  calls = fake().progress_calls();
  ASSERT_TRUE(request_evd_->Dequeue(event).ok());
  EXPECT_EQ(Dto(event).user_cookie.as_64, 82u) << "the event queued first is still the one returned";
  EXPECT_EQ(fake().progress_calls(), calls + 1) << "the transport said Work was due: one progress call";
}

TEST_F(EvdDequeueTest, DequeueOfAnEmptyQueueMovesTheTransportOnce) {
  QueueTwoCompletions();
  DAT_EVENT event{};
  ASSERT_TRUE(request_evd_->Dequeue(event).ok());
  ASSERT_TRUE(request_evd_->Dequeue(event).ok());
  const std::size_t calls = fake().progress_calls();
  EXPECT_EQ(request_evd_->Dequeue(event).code(), Code::kQueueEmpty);
  EXPECT_EQ(fake().progress_calls(), calls + 1);
}

}  // namespace
}  // namespace softdat::core::device_testing
