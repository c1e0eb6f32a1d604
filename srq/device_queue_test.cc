// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The pool in the device receive model (SrqPool::AttachDevice): buffers go down to the device
// under their slot, a refused one is withdrawn, the low watermark is the device's limit event
// armed once per dat_srq_set_lw, and a resize past the device queue grows it first.
#include <gtest/gtest.h>

#include <vector>

#include "srq/srq_pool.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Cookie;
using testing::CountingListener;
using testing::MakePool;
using testing::PostTagged;

// A device queue that records what the pool asks of it and answers as told.
class FakeDeviceQueue final : public DeviceQueue {
 public:
  Status PostRecv(std::uint32_t slot, std::span<const RecvSegment>) override {
    if (!post_result.ok()) return post_result;
    posted.push_back(slot);
    return Status::Ok();
  }
  Status ArmLimit(std::uint32_t limit) override {
    arms.push_back(limit);
    return arm_result;
  }
  Status Grow(std::uint32_t new_size) override {
    if (!grow_result.ok()) return grow_result;
    size_ = new_size;
    return Status::Ok();
  }
  bool has_limit_event() const override { return limit_event; }
  std::uint32_t max_size() const override { return 100; }
  std::uint32_t size() const override { return size_; }

  Status post_result = Status::Ok();
  Status arm_result = Status::Ok();
  Status grow_result = Status::Ok();
  bool limit_event = true;
  std::vector<std::uint32_t> posted;
  std::vector<std::uint32_t> arms;
  std::uint32_t size_ = 8;
};

class DeviceQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = MakePool(8, 4, &listener_);
    pool_->AttachDevice(&device_);
  }
  CountingListener listener_;
  FakeDeviceQueue device_;
  std::unique_ptr<SrqPool> pool_;
};

TEST_F(DeviceQueueTest, PostsGoDownUnderTheirSlot) {
  std::uint32_t slot = 0;
  const RecvSegment segment = testing::Segment(1);
  ASSERT_TRUE(pool_->Post(Cookie(1), {&segment, 1}, &slot).ok());
  EXPECT_EQ(device_.posted, std::vector<std::uint32_t>{slot});
}

TEST_F(DeviceQueueTest, ABufferTheDeviceRefusesIsNotOutstanding) {
  device_.post_result = Status(Code::kInsufficientResources);
  EXPECT_EQ(PostTagged(*pool_, 1).code(), Code::kInsufficientResources);
  EXPECT_EQ(pool_->Query().outstanding_dto_count, 0u);
}

TEST_F(DeviceQueueTest, SoftwareTakesAreRefused) {
  auto window = testing::MakeWindow(*pool_);
  ASSERT_TRUE(PostTagged(*pool_, 1).ok());
  RecvBuffer buffer{};
  EXPECT_EQ(pool_->Take(*window, 1, buffer), SrqPool::TakeResult::kRefused);
}

TEST_F(DeviceQueueTest, LowWatermarkArmsTheDeviceAndFiresOncePerArming) {
  for (std::uint64_t tag = 1; tag <= 4; ++tag) ASSERT_TRUE(PostTagged(*pool_, tag).ok());
  ASSERT_TRUE(pool_->SetLowWatermark(2).ok());
  EXPECT_EQ(device_.arms, std::vector<std::uint32_t>{2});
  EXPECT_EQ(listener_.count(), 0);
  pool_->OnDeviceLimitReached();
  EXPECT_EQ(listener_.count(), 1);
  pool_->OnDeviceLimitReached();
  EXPECT_EQ(listener_.count(), 1) << "a second device event without a new arming is stale";
}

TEST_F(DeviceQueueTest, AlreadyBelowFiresAtOnceAndLeavesTheDeviceDisarmed) {
  ASSERT_TRUE(PostTagged(*pool_, 1).ok());
  ASSERT_TRUE(pool_->SetLowWatermark(3).ok());
  EXPECT_EQ(device_.arms, std::vector<std::uint32_t>{0});
  EXPECT_EQ(listener_.count(), 1);
}

TEST_F(DeviceQueueTest, ADeviceRefusingTheLimitAsCrossedFiresAtOnce) {
  for (std::uint64_t tag = 1; tag <= 4; ++tag) ASSERT_TRUE(PostTagged(*pool_, tag).ok());
  device_.arm_result = Status(Code::kInvalidParameter);  // rxe: it holds fewer already
  ASSERT_TRUE(pool_->SetLowWatermark(2).ok());
  EXPECT_EQ(listener_.count(), 1);
  pool_->OnDeviceLimitReached();
  EXPECT_EQ(listener_.count(), 1);
}

TEST_F(DeviceQueueTest, ADeviceWithoutALimitEventRefusesTheLowWatermark) {
  device_.limit_event = false;
  EXPECT_EQ(pool_->SetLowWatermark(2).code(), Code::kModelNotSupported);
  EXPECT_TRUE(device_.arms.empty());
}

TEST_F(DeviceQueueTest, GrowingPastTheDeviceQueueGrowsItFirst) {
  ASSERT_TRUE(pool_->Resize(16).ok());
  EXPECT_EQ(device_.size(), 16u);
  ASSERT_TRUE(pool_->Resize(4).ok());
  EXPECT_EQ(device_.size(), 16u) << "shrinking leaves the device queue";
  ASSERT_TRUE(pool_->Resize(200).ok());
  EXPECT_EQ(device_.size(), 100u) << "never past the device's maximum";
}

TEST_F(DeviceQueueTest, ADeviceThatCannotGrowRefusesTheResizeAndNothingChanges) {
  device_.grow_result = Status(Code::kModelNotSupported);
  EXPECT_EQ(pool_->Resize(16).code(), Code::kModelNotSupported);
  EXPECT_EQ(pool_->Query().max_recv_dtos, 8u);
  EXPECT_TRUE(pool_->Resize(8).ok()) << "within the device queue needs no growth";
}

}  // namespace
}  // namespace softdat::srq
