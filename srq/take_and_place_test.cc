// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ReceiveSource::TakeAndPlace, a message that arrived whole taken, copied and placed in one step,
// on both sources: the EP's own queue (one lock) and an SRQ account (the base class's three
// steps). The bytes land across the buffer's segments before its completion can be popped; a
// message longer than its buffer completes it with a local length error and writes nothing; no
// buffer, a closed source or a message already placed change nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "srq/ep_recv_queue.h"
#include "srq/srq_account.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Cookie;
using testing::MakePool;
using WholeResult = ReceiveSource::WholeResult;

enum class Kind { kEpQueue, kSrqAccount };

class TakeAndPlace : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::kEpQueue) {
      std::unique_ptr<EpRecvQueue> queue;
      ASSERT_TRUE(EpRecvQueue::Create(8, 4, queue).ok());
      source_ = std::move(queue);
    } else {
      pool_ = MakePool(8);
      std::unique_ptr<SrqAccount> account;
      ASSERT_TRUE(SrqAccount::Create(*pool_, nullptr, false, account).ok());
      source_ = std::move(account);
    }
    ASSERT_TRUE(source_->BeginConnection().ok());
  }

  // Posts a buffer of two segments over sink_: 5 bytes, then 20. Returns whether the post said a
  // message was waiting for it (the EP queue says; the SRQ wakes its waiter instead).
  bool PostBuffer(std::uint64_t cookie) {
    const RecvSegment segments[] = {{reinterpret_cast<std::uint64_t>(sink_.data()), 5, 1},
                                    {reinterpret_cast<std::uint64_t>(sink_.data() + 5), 20, 1}};
    if (pool_ != nullptr) {
      EXPECT_TRUE(pool_->Post(Cookie(cookie), segments).ok());
      return false;
    }
    ReceiveSource::Posted posted;
    EXPECT_TRUE(source_->Post(Cookie(cookie), segments, DAT_COMPLETION_DEFAULT_FLAG, posted).ok());
    return posted.resumes;
  }

  static std::vector<std::uint8_t> Message(std::size_t length) {
    std::vector<std::uint8_t> bytes(length);
    std::iota(bytes.begin(), bytes.end(), std::uint8_t{1});
    return bytes;
  }

  std::unique_ptr<SrqPool> pool_;
  std::unique_ptr<ReceiveSource> source_;
  std::vector<std::uint8_t> sink_ = std::vector<std::uint8_t>(25, 0);
};

TEST_P(TakeAndPlace, TheBytesLandAcrossTheSegmentsBeforeTheCompletionIsThere) {
  PostBuffer(7);
  const std::vector<std::uint8_t> message = Message(12);
  RecvNotes notes;
  notes.solicited = true;
  EXPECT_EQ(source_->TakeAndPlace(1, message, notes), WholeResult::kPlaced);
  EXPECT_TRUE(std::equal(message.begin(), message.end(), sink_.begin()));
  EXPECT_TRUE(std::all_of(sink_.begin() + 12, sink_.end(), [](std::uint8_t b) { return b == 0; }))
      << "bytes past the message were written";
  RecvCompletion done{};
  ASSERT_TRUE(source_->PopCompletion(done));
  EXPECT_EQ(done.cookie.as_64, 7u);
  EXPECT_EQ(done.transferred_length, 12u);
  EXPECT_EQ(done.status, DAT_DTO_SUCCESS);
  EXPECT_TRUE(done.notes.solicited);
  EXPECT_EQ(done.msn, 1u);
}

TEST_P(TakeAndPlace, AMessageFillingTheBufferExactlyFits) {
  PostBuffer(1);
  const std::vector<std::uint8_t> message = Message(25);
  EXPECT_EQ(source_->TakeAndPlace(1, message, {}), WholeResult::kPlaced);
  EXPECT_EQ(sink_, message);
}

TEST_P(TakeAndPlace, ALongerMessageCompletesItsBufferWithALocalLengthErrorAndWritesNothing) {
  PostBuffer(3);
  EXPECT_EQ(source_->TakeAndPlace(1, Message(26), {}), WholeResult::kTooLong);
  EXPECT_TRUE(std::all_of(sink_.begin(), sink_.end(), [](std::uint8_t b) { return b == 0; }));
  RecvCompletion done{};
  ASSERT_TRUE(source_->PopCompletion(done));
  EXPECT_EQ(done.cookie.as_64, 3u);
  EXPECT_EQ(done.status, DAT_DTO_ERR_LOCAL_LENGTH);
  EXPECT_EQ(done.transferred_length, 0u);
}

TEST_P(TakeAndPlace, WithoutABufferNothingChangesUntilOneIsPosted) {
  const std::vector<std::uint8_t> message = Message(4);
  EXPECT_EQ(source_->TakeAndPlace(1, message, {}), WholeResult::kNotReady);
  EXPECT_EQ(source_->held(), 0u);
  RecvCompletion done{};
  EXPECT_FALSE(source_->PopCompletion(done));
  const bool resumes = PostBuffer(1);
  if (GetParam() == Kind::kEpQueue) {
    EXPECT_TRUE(resumes) << "the post must say a message waits for it";
  }
  EXPECT_EQ(source_->TakeAndPlace(1, message, {}), WholeResult::kPlaced);
  EXPECT_TRUE(std::equal(message.begin(), message.end(), sink_.begin()));
}

TEST_P(TakeAndPlace, AClosedSourceRefusesAndWritesNothing) {
  PostBuffer(1);
  source_->Close();
  EXPECT_EQ(source_->TakeAndPlace(1, Message(4), {}), WholeResult::kRefused);
  EXPECT_TRUE(std::all_of(sink_.begin(), sink_.end(), [](std::uint8_t b) { return b == 0; }));
}

TEST_P(TakeAndPlace, AMessagePlacedAlreadyIsRefusedAndItsBytesStay) {
  PostBuffer(1);
  PostBuffer(2);
  const std::vector<std::uint8_t> first = Message(4);
  ASSERT_EQ(source_->TakeAndPlace(1, first, {}), WholeResult::kPlaced);
  const std::vector<std::uint8_t> again(4, 0xee);
  EXPECT_EQ(source_->TakeAndPlace(1, again, {}), WholeResult::kRefused);
  EXPECT_TRUE(std::equal(first.begin(), first.end(), sink_.begin()));
}

INSTANTIATE_TEST_SUITE_P(BothSources, TakeAndPlace, ::testing::Values(Kind::kEpQueue, Kind::kSrqAccount),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kEpQueue ? "EpQueue" : "SrqAccount";
                         });

}  // namespace
}  // namespace softdat::srq
