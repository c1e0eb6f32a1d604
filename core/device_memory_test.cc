// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// LMRs and RMRs on a device transport: the device registers the memory and issues the keys, posts
// hand the device its local key, and memory windows are not offered.
#include <gtest/gtest.h>

#include "testing/fake_device/device_test_fixture.h"
#include "core/rmr.h"

namespace softdat::core::device_testing {
namespace {

TEST_F(DeviceTest, DeviceLmrReturnsTheDeviceKeys) {
  // The fake's keys are 0x1.../0x2...: never what the IA's own key table would issue.
  EXPECT_EQ(lmr_context_ & 0xF0000000u, 0x10000000u);
  EXPECT_EQ(rmr_context_ & 0xF0000000u, 0x20000000u);
  EXPECT_NE(lmr_context_, rmr_context_);
  DAT_LMR_PARAM param{};
  lmr_->Query(static_cast<DAT_LMR_PARAM_MASK>(DAT_LMR_FIELD_LMR_CONTEXT | DAT_LMR_FIELD_RMR_CONTEXT), param);
  EXPECT_EQ(param.lmr_context, lmr_context_);
  EXPECT_EQ(param.rmr_context, rmr_context_);
}

TEST_F(DeviceTest, DeviceLmrRegistrationLivesAsLongAsTheLmr) {
  EXPECT_EQ(fake().registered_regions(), 1u);
  ASSERT_TRUE(Lmr::Free(lmr_).ok());
  lmr_ = nullptr;
  EXPECT_EQ(fake().registered_regions(), 0u);
}

TEST_F(DeviceTest, DeviceLmrContextStillChecksLocalPosts) {
  Ep* ep = MakeEp();
  DAT_LMR_TRIPLET outside = Slot(0);
  outside.virtual_address = reinterpret_cast<DAT_VADDR>(buffer_.data()) + kBufferSize;  // past the LMR
  EXPECT_EQ(ep->PostRecv(1, &outside, Cookie(1), DAT_COMPLETION_DEFAULT_FLAG).code(), Code::kInvalidParameter);
  DAT_LMR_TRIPLET remote_key = Slot(0);
  remote_key.lmr_context = rmr_context_;  // the rkey is no local key
  EXPECT_EQ(ep->PostRecv(1, &remote_key, Cookie(1), DAT_COMPLETION_DEFAULT_FLAG).code(),
            Code::kPrivilegesViolation);
  EXPECT_TRUE(PostRecv(ep, 0, 1).ok());
}

TEST_F(DeviceTest, DeviceSegmentsCarryTheLocalKey) {
  // The fake device refuses any segment whose key is not one of its lkeys covering the range, so
  // a Send that arrives intact proves both sides handed it the LMR's lkey.
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 7).ok());
  Connect(client, server);
  ASSERT_TRUE(Send(client, 1, "keyed").ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(Dto(event).status, DAT_DTO_SUCCESS);
  EXPECT_STREQ(SlotData(0), "keyed");
}

TEST_F(DeviceTest, DeviceRdmaWriteNamesTheRemoteKeyNotTheLocalOne) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  std::strcpy(SlotData(1), "written");
  const DAT_LMR_TRIPLET local = Slot(1, 8);
  DAT_RMR_TRIPLET remote{};
  remote.virtual_address = reinterpret_cast<DAT_VADDR>(SlotData(2));
  remote.segment_length = 8;
  remote.rmr_context = rmr_context_;
  ASSERT_TRUE(client->PostRdma(DAT_DTO_RDMA_WRITE, 1, &local, Cookie(1), &remote, DAT_COMPLETION_DEFAULT_FLAG).ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(request_evd_, event));
  EXPECT_EQ(Dto(event).status, DAT_DTO_SUCCESS);
  EXPECT_STREQ(SlotData(2), "written");
  remote.rmr_context = lmr_context_;
  ASSERT_TRUE(client->PostRdma(DAT_DTO_RDMA_WRITE, 1, &local, Cookie(2), &remote, DAT_COMPLETION_DEFAULT_FLAG).ok());
  ASSERT_TRUE(Next(request_evd_, event));
  EXPECT_EQ(Dto(event).status, DAT_DTO_ERR_REMOTE_ACCESS);
}

TEST_F(DeviceTest, DeviceRmrCreateIsModelNotSupported) {
  Rmr* rmr = nullptr;
  EXPECT_EQ(Rmr::Create(pz_, &rmr).code(), Code::kModelNotSupported);
  EXPECT_EQ(rmr, nullptr);
  DAT_IA_ATTR attr{};
  ASSERT_TRUE(ia_->Query(nullptr, DAT_IA_FIELD_IA_MAX_RMRS, &attr, 0, nullptr).ok());
  EXPECT_EQ(attr.max_rmrs, 0);  // and the IA says so
}

}  // namespace
}  // namespace softdat::core::device_testing
