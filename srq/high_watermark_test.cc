// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The EP high-watermark rule every receive source shares (dat_ep_set_watermark): the soft
// watermark raises one event per setting, the hard one breaks a live connection once.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <utility>

#include "srq/srq_account.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::MakePool;
using testing::PostTagged;

class HighWatermarkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = MakePool(16);
    ASSERT_TRUE(SrqAccount::Create(*pool_, nullptr, false, account_).ok());
    ASSERT_TRUE(account_->BeginConnection().ok());
  }
  // The account takes one more buffer for the next message.
  void TakeOne() {
    ASSERT_TRUE(PostTagged(*pool_, next_).ok());
    RecvBuffer buffer{};
    ASSERT_EQ(account_->TakeForMessage(next_++, buffer), ReceiveSource::TakeResult::kTaken);
  }

  std::unique_ptr<SrqPool> pool_;
  std::unique_ptr<SrqAccount> account_;
  std::uint32_t next_ = 1;
};

TEST_F(HighWatermarkTest, NegativeValuesOtherThanInfiniteAreRefused) {
  ReceiveSource::Crossing crossed;
  EXPECT_EQ(account_->SetHighWatermarks(-2, DAT_WATERMARK_INFINITE, true, crossed),
            Status(Code::kInvalidParameter, Detail::kParamSoftWatermark));
  EXPECT_EQ(account_->SetHighWatermarks(DAT_WATERMARK_INFINITE, -2, true, crossed),
            Status(Code::kInvalidParameter, Detail::kParamHardWatermark));
}

TEST_F(HighWatermarkTest, SoftFiresOncePerSettingWhenTheCountGoesAbove) {
  ReceiveSource::Crossing crossed;
  ASSERT_TRUE(account_->SetHighWatermarks(1, DAT_WATERMARK_INFINITE, true, crossed).ok());
  EXPECT_FALSE(crossed.soft);
  TakeOne();
  EXPECT_FALSE(account_->CheckHighWatermarks(true).soft) << "1 held is not above 1";
  TakeOne();
  EXPECT_TRUE(account_->CheckHighWatermarks(true).soft);
  TakeOne();
  EXPECT_FALSE(account_->CheckHighWatermarks(true).soft) << "once per setting";
  ASSERT_TRUE(account_->SetHighWatermarks(1, DAT_WATERMARK_INFINITE, true, crossed).ok());
  EXPECT_TRUE(crossed.soft) << "set below what is held: at once";
}

TEST_F(HighWatermarkTest, HardBreaksOnlyALiveConnectionAndOnlyOnce) {
  ReceiveSource::Crossing crossed;
  ASSERT_TRUE(account_->SetHighWatermarks(DAT_WATERMARK_INFINITE, 0, false, crossed).ok());
  TakeOne();
  EXPECT_FALSE(account_->CheckHighWatermarks(false).hard) << "no live connection to break";
  EXPECT_TRUE(account_->CheckHighWatermarks(true).hard);
  TakeOne();
  EXPECT_FALSE(account_->CheckHighWatermarks(true).hard) << "broken once per connection";
}

TEST_F(HighWatermarkTest, InfiniteDisarms) {
  ReceiveSource::Crossing crossed;
  ASSERT_TRUE(account_->SetHighWatermarks(0, 0, true, crossed).ok());
  ASSERT_TRUE(account_->SetHighWatermarks(DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE, true, crossed).ok());
  TakeOne();
  const ReceiveSource::Crossing now = account_->CheckHighWatermarks(true);
  EXPECT_FALSE(now.soft);
  EXPECT_FALSE(now.hard);
}

// Taking a buffer looks at the watermarks without a lock unless one is armed: armed while a soft
// watermark has not fired or a finite hard one has not tripped on this connection.
TEST_F(HighWatermarkTest, ArmedOnlyWhileAWatermarkCanStillBeCrossed) {
  EXPECT_FALSE(account_->watermarks_armed()) << "none set";
  ReceiveSource::Crossing crossed;
  ASSERT_TRUE(account_->SetHighWatermarks(1, DAT_WATERMARK_INFINITE, true, crossed).ok());
  EXPECT_TRUE(account_->watermarks_armed());
  TakeOne();
  TakeOne();
  EXPECT_TRUE(account_->CheckHighWatermarks(true).soft);
  EXPECT_FALSE(account_->watermarks_armed()) << "the soft one fired";
  ASSERT_TRUE(account_->SetHighWatermarks(DAT_WATERMARK_INFINITE, 5, true, crossed).ok());
  EXPECT_TRUE(account_->watermarks_armed());
  for (int i = 0; i < 4; ++i) TakeOne();
  EXPECT_TRUE(account_->CheckHighWatermarks(true).hard);
  EXPECT_FALSE(account_->watermarks_armed()) << "the hard one tripped for this connection";
  ASSERT_TRUE(account_->SetHighWatermarks(2, 5, true, crossed).ok());
  EXPECT_TRUE(crossed.soft) << "6 held";
  EXPECT_FALSE(account_->watermarks_armed()) << "fired at once, and the hard one stays tripped";
  ASSERT_TRUE(account_->SetHighWatermarks(DAT_WATERMARK_INFINITE, DAT_WATERMARK_INFINITE, true, crossed).ok());
  EXPECT_FALSE(account_->watermarks_armed());
}

// A receive source whose count can be changed "by another thread" at the worst moment: right
// after dat_ep_set_watermark's look at the count, as if a buffer were taken just then.
class CountOnlySource : public ReceiveSource {
 public:
  Status Post(DAT_DTO_COOKIE, std::span<const RecvSegment>, DAT_COMPLETION_FLAGS, Posted&) override {
    return Status::Ok();
  }
  void Withdraw() override {}
  Status BeginConnection() override { return Status::Ok(); }
  void Close() override {}
  TakeResult TakeForMessage(std::uint32_t, RecvBuffer&) override { return TakeResult::kRefused; }
  TakeResult TakeDeviceChosen(std::uint64_t, std::uint32_t&, RecvBuffer&) override { return TakeResult::kRefused; }
  TakeResult CompleteDeviceChosen(std::uint64_t, std::uint64_t, DAT_DTO_COMPLETION_STATUS, const RecvNotes&,
                                  std::uint32_t&) override {
    return TakeResult::kRefused;
  }
  Status Place(std::uint32_t, std::uint64_t, DAT_DTO_COMPLETION_STATUS, const RecvNotes&) override {
    return Status::Ok();
  }
  bool PopCompletion(RecvCompletion&) override { return false; }
  std::uint32_t held() const override {
    const std::uint32_t seen = held_;
    if (take_after_next_look_) std::exchange(take_after_next_look_, nullptr)();
    return seen;
  }
  void RecvQuery(DAT_COUNT*, DAT_COUNT*) const override {}
  bool announces_flush() const override { return false; }
  void StopWaking() override {}

  mutable std::uint32_t held_ = 0;
  mutable std::function<void()> take_after_next_look_;
};

// A soft watermark set while a buffer is taken fires exactly once, even when the buffer is taken
// right after the setter counted: the taker, which looks without a lock, must then see the
// watermark armed (it is armed before the count is read).
TEST(HighWatermarkRace, ABufferTakenRightAfterTheSetterCountedStillFiresOnce) {
  CountOnlySource source;
  ReceiveSource::Crossing taker_saw;
  source.take_after_next_look_ = [&] {
    ++source.held_;  // the taker's take, then its look
    taker_saw = source.CheckHighWatermarks(true);
  };
  ReceiveSource::Crossing setter_saw;
  ASSERT_TRUE(source.SetHighWatermarks(0, DAT_WATERMARK_INFINITE, true, setter_saw).ok());
  EXPECT_TRUE(taker_saw.soft) << "the setter counted 0; the taker must find the watermark armed";
  EXPECT_FALSE(setter_saw.soft);
  EXPECT_FALSE(source.watermarks_armed());
  EXPECT_FALSE(source.CheckHighWatermarks(true).soft) << "once per setting";
}

// The same with the take done before the setter counts: the setter reports it.
TEST(HighWatermarkRace, ABufferTakenBeforeTheSetterCountsIsReportedByTheSetter) {
  CountOnlySource source;
  source.held_ = 1;
  ReceiveSource::Crossing crossed;
  ASSERT_TRUE(source.SetHighWatermarks(0, DAT_WATERMARK_INFINITE, true, crossed).ok());
  EXPECT_TRUE(crossed.soft);
  EXPECT_FALSE(source.CheckHighWatermarks(true).soft);
}

}  // namespace
}  // namespace softdat::srq
