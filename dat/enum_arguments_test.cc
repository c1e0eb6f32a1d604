// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Enum-typed arguments with bits no DAT value has, as a C consumer can pass them (through
// c_consumer_calls.c): each entry point refuses them with DAT_INVALID_PARAMETER naming the
// argument, and never reads them as the enum type first (C++ makes that undefined: under
// --config=ubsan it aborted, the dat_api fuzzer's first find). Mask arguments keep working
// whatever extra bits they carry.
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <vector>

#include "dat/c_consumer_calls.h"
#include "dat/registry_stand_in.h"

namespace {

constexpr unsigned kNoSuchBits = 0x40000000;

const DAT_PROVIDER* registered = nullptr;

DAT_RETURN Invalid(DAT_RETURN argument) { return DAT_INVALID_PARAMETER | argument; }

class EnumArgumentsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registered = softdat::dat::RegisterWithoutLibdat2("softdat-enum-test", "tcp 127.0.0.1 progress=poll");
  }
  void SetUp() override {
    ASSERT_NE(registered, nullptr);
    p_ = registered;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    ASSERT_EQ(p_->ia_open_func(const_cast<DAT_NAME_PTR>("softdat-enum-test"), 8, &async, &ia_), DAT_SUCCESS);
    ASSERT_EQ(p_->pz_create_func(ia_, &pz_), DAT_SUCCESS);
    ASSERT_EQ(c_evd_create(p_, ia_, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, &dto_), DAT_SUCCESS);
    ASSERT_EQ(c_evd_create(p_, ia_, DAT_EVD_CONNECTION_FLAG, &connect_), DAT_SUCCESS);
    ASSERT_EQ(c_evd_create(p_, ia_, DAT_EVD_CR_FLAG, &cr_), DAT_SUCCESS);
    ASSERT_EQ(c_lmr_create(p_, ia_, DAT_MEM_TYPE_VIRTUAL, memory_.data(), memory_.size(), pz_, DAT_VA_TYPE_VA, &lmr_),
              DAT_SUCCESS);
    ASSERT_EQ(c_ep_create(p_, ia_, pz_, dto_, connect_, DAT_SERVICE_TYPE_RC, DAT_COMPLETION_DEFAULT_FLAG, &ep_),
              DAT_SUCCESS);
    DAT_LMR_PARAM param;
    ASSERT_EQ(p_->lmr_query_func(lmr_, DAT_LMR_FIELD_LMR_CONTEXT, &param), DAT_SUCCESS);
    iov_.lmr_context = param.lmr_context;
    iov_.virtual_address = reinterpret_cast<DAT_VADDR>(memory_.data());
    iov_.segment_length = 64;
  }
  void TearDown() override {
    if (ia_ != nullptr) {
      EXPECT_EQ(c_ia_close(p_, ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }
  }

  const DAT_PROVIDER* p_ = nullptr;
  DAT_IA_HANDLE ia_ = nullptr;
  DAT_PZ_HANDLE pz_ = nullptr;
  DAT_EVD_HANDLE dto_ = nullptr, connect_ = nullptr, cr_ = nullptr;
  DAT_LMR_HANDLE lmr_ = nullptr;
  DAT_EP_HANDLE ep_ = nullptr;
  std::vector<unsigned char> memory_ = std::vector<unsigned char>(4096);
  DAT_LMR_TRIPLET iov_{};
};

TEST_F(EnumArgumentsTest, CloseFlags) {
  EXPECT_EQ(c_ia_close(p_, ia_, 0x100001), Invalid(DAT_INVALID_ARG2));
  EXPECT_EQ(c_ep_disconnect(p_, ep_, kNoSuchBits), Invalid(DAT_INVALID_ARG2));
}

TEST_F(EnumArgumentsTest, EvdAndPspFlags) {
  DAT_EVD_HANDLE evd = nullptr;
  EXPECT_EQ(c_evd_create(p_, ia_, DAT_EVD_DTO_FLAG | kNoSuchBits, &evd), Invalid(DAT_INVALID_ARG4));
  DAT_CONN_QUAL port = 0;
  DAT_PSP_HANDLE psp = nullptr;
  EXPECT_EQ(c_psp_create_any(p_, ia_, cr_, kNoSuchBits, &port, &psp), Invalid(DAT_INVALID_ARG4));
}

TEST_F(EnumArgumentsTest, MemoryTypeAndVaType) {
  DAT_LMR_HANDLE lmr = nullptr;
  EXPECT_EQ(c_lmr_create(p_, ia_, kNoSuchBits, memory_.data(), 64, pz_, DAT_VA_TYPE_VA, &lmr),
            Invalid(DAT_INVALID_ARG2));
  EXPECT_EQ(c_lmr_create(p_, ia_, DAT_MEM_TYPE_VIRTUAL, memory_.data(), 64, pz_, kNoSuchBits, &lmr),
            Invalid(DAT_INVALID_ARG7));
  DAT_RMR_HANDLE rmr = nullptr;
  ASSERT_EQ(p_->rmr_create_func(pz_, &rmr), DAT_SUCCESS);
  DAT_RMR_CONTEXT context = 0;
  EXPECT_EQ(c_rmr_bind(p_, rmr, lmr_, &iov_, kNoSuchBits, ep_, DAT_COMPLETION_DEFAULT_FLAG, &context),
            Invalid(DAT_INVALID_ARG5));
  EXPECT_EQ(c_rmr_bind(p_, rmr, lmr_, &iov_, DAT_VA_TYPE_VA, ep_, kNoSuchBits, &context), Invalid(DAT_INVALID_ARG8));
}

TEST_F(EnumArgumentsTest, CompletionAndInvalidateFlags) {
  EXPECT_EQ(c_ep_post_send(p_, ep_, &iov_, kNoSuchBits), Invalid(DAT_INVALID_ARG5));
  EXPECT_EQ(c_ep_post_send_with_invalidate(p_, ep_, &iov_, 2), Invalid(DAT_INVALID_ARG6));
}

TEST_F(EnumArgumentsTest, ConnectFlags) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(c_ep_connect(p_, ep_, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&address), 1, kNoSuchBits),
            Invalid(DAT_INVALID_ARG8));
}

TEST_F(EnumArgumentsTest, EpAttributes) {
  DAT_EP_HANDLE ep = nullptr;
  EXPECT_EQ(c_ep_create(p_, ia_, pz_, dto_, connect_, kNoSuchBits, DAT_COMPLETION_DEFAULT_FLAG, &ep),
            Invalid(DAT_INVALID_ARG6));
  EXPECT_EQ(c_ep_create(p_, ia_, pz_, dto_, connect_, DAT_SERVICE_TYPE_RC, kNoSuchBits, &ep),
            Invalid(DAT_INVALID_ARG6));
}

// Regression (dat_api fuzzer, clang's UBSan): the extension ops made the enum of the flags'
// variadic int before checking its bits. Refused before the EP is looked at (it is not connected).
TEST_F(EnumArgumentsTest, AnExtensionPostWithFlagBitsNoDatValueHasIsRefused) {
  DAT_RMR_TRIPLET remote{};
  const DAT_RETURN bad_flags = c_ib_post_rdma_write_immed(p_, ep_, &iov_, &remote, kNoSuchBits);
  EXPECT_EQ(DAT_GET_TYPE(bad_flags), DAT_INVALID_PARAMETER);
  // Valid flags pass that check: the empty remote triplet is what is refused then, as another
  // argument.
  const DAT_RETURN good_flags = c_ib_post_rdma_write_immed(p_, ep_, &iov_, &remote, DAT_COMPLETION_DEFAULT_FLAG);
  EXPECT_EQ(DAT_GET_TYPE(good_flags), DAT_INVALID_PARAMETER);
  EXPECT_NE(bad_flags, good_flags);
}

// Masks name fields; bits that name none are ignored, as before.
TEST_F(EnumArgumentsTest, MaskBitsBeyondTheFieldsAreIgnored) {
  DAT_PZ_PARAM param{};
  ASSERT_EQ(c_pz_query(p_, pz_, 0xFFFFFFFF, &param), DAT_SUCCESS);
  EXPECT_NE(param.ia_handle, nullptr);
}

// Regression (dat_api fuzzer, clang's UBSan): the query entries copied the mask as the enum type
// before dropping the bits it cannot hold. The fuzzer's LMR mask, and an EVD mask the same way.
TEST_F(EnumArgumentsTest, EveryQueryIgnoresMaskBitsBeyondItsFields) {
  DAT_LMR_PARAM lmr{};
  ASSERT_EQ(c_lmr_query(p_, lmr_, 151085413u | DAT_LMR_FIELD_LMR_CONTEXT, &lmr), DAT_SUCCESS);
  EXPECT_EQ(lmr.lmr_context, iov_.lmr_context);
  DAT_EVD_PARAM evd{};
  ASSERT_EQ(c_evd_query(p_, dto_, kNoSuchBits | DAT_EVD_FIELD_IA_HANDLE, &evd), DAT_SUCCESS);
  EXPECT_NE(evd.ia_handle, nullptr);
}

// Regression (dat_api fuzzer): dat_evd_post_se read the consumer's event number as the enum.
TEST_F(EnumArgumentsTest, ASoftwareEventWithAnEventNumberNoDatValueHasIsRefused) {
  DAT_EVD_HANDLE software = DAT_HANDLE_NULL;
  ASSERT_EQ(c_evd_create(p_, ia_, DAT_EVD_SOFTWARE_FLAG, &software), DAT_SUCCESS);
  DAT_EVENT event{};
  const unsigned bits = 1245441;  // the fuzzer's value
  std::memcpy(&event.event_number, &bits, sizeof bits);
  EXPECT_EQ(p_->evd_post_se_func(software, &event), Invalid(DAT_INVALID_ARG2));
  event.event_number = DAT_SOFTWARE_EVENT;
  EXPECT_EQ(p_->evd_post_se_func(software, &event), DAT_SUCCESS);
  EXPECT_EQ(p_->evd_free_func(software), DAT_SUCCESS);
}

}  // namespace
