// The EP high-watermark rule every receive source shares (dat_ep_set_watermark): the soft
// watermark raises one event per setting, the hard one breaks a live connection once.
#include <gtest/gtest.h>

#include <memory>

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

}  // namespace
}  // namespace softdat::srq
