// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// PZ and LMR through the stock libdat2 registry: create, query, free, refusals, and handles that
// are freed or of the wrong type.
#include <dat2/udat.h>
#include <gtest/gtest.h>

#include <vector>

namespace softdat::testing {
namespace {

class RegistryMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ia_open(const_cast<char*>("softdat-tcp"), 8, &async_evd, &ia_), DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(ia_, &pz_), DAT_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS); }

  DAT_RETURN Register(void* address, DAT_VLEN length, DAT_MEM_PRIV_FLAGS privileges,
                      DAT_LMR_HANDLE* lmr, DAT_LMR_CONTEXT* context) {
    DAT_REGION_DESCRIPTION region;
    region.for_va = address;
    DAT_RMR_CONTEXT rmr_context;
    DAT_VLEN registered_length;
    DAT_VADDR registered_address;
    return dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, region, length, pz_, privileges, DAT_VA_TYPE_VA,
                          lmr, context, &rmr_context, &registered_length, &registered_address);
  }

  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
};

TEST_F(RegistryMemoryTest, PzQueryReportsTheConsumersIaHandle) {
  DAT_PZ_PARAM param;
  ASSERT_EQ(dat_pz_query(pz_, DAT_PZ_FIELD_ALL, &param), DAT_SUCCESS);
  EXPECT_EQ(param.ia_handle, ia_) << "must be libdat2's wrapped handle, usable by the consumer";
}

TEST_F(RegistryMemoryTest, LmrCreateQueryFree) {
  std::vector<char> buffer(4096);
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT context = 0;
  ASSERT_EQ(Register(buffer.data(), buffer.size(), DAT_MEM_PRIV_ALL_FLAG, &lmr, &context), DAT_SUCCESS);
  EXPECT_NE(context, 0u);
  DAT_LMR_PARAM param;
  ASSERT_EQ(dat_lmr_query(lmr, DAT_LMR_FIELD_ALL, &param), DAT_SUCCESS);
  EXPECT_EQ(param.ia_handle, ia_);
  EXPECT_EQ(param.pz_handle, pz_);
  EXPECT_EQ(param.length, buffer.size());
  EXPECT_EQ(param.lmr_context, context);
  EXPECT_EQ(param.mem_priv, DAT_MEM_PRIV_ALL_FLAG);
  EXPECT_EQ(param.registered_address, reinterpret_cast<DAT_VADDR>(buffer.data()));
  EXPECT_EQ(dat_lmr_free(lmr), DAT_SUCCESS);
}

TEST_F(RegistryMemoryTest, PzFreeRefusedWhileLmrUsesIt) {
  std::vector<char> buffer(64);
  DAT_LMR_HANDLE lmr;
  DAT_LMR_CONTEXT context;
  ASSERT_EQ(Register(buffer.data(), buffer.size(), DAT_MEM_PRIV_LOCAL_WRITE_FLAG, &lmr, &context),
            DAT_SUCCESS);
  const DAT_RETURN refused = dat_pz_free(pz_);
  EXPECT_EQ(DAT_GET_TYPE(refused), DAT_INVALID_STATE);
  EXPECT_EQ(DAT_GET_SUBTYPE(refused), DAT_INVALID_STATE_PZ_IN_USE);
  ASSERT_EQ(dat_lmr_free(lmr), DAT_SUCCESS);
  DAT_PZ_HANDLE pz = pz_;
  ASSERT_EQ(dat_pz_create(ia_, &pz_), DAT_SUCCESS);
  EXPECT_EQ(dat_pz_free(pz), DAT_SUCCESS);
}

TEST_F(RegistryMemoryTest, LmrCreateRefusesBadArguments) {
  std::vector<char> buffer(64);
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT context;
  EXPECT_EQ(DAT_GET_TYPE(Register(nullptr, 64, DAT_MEM_PRIV_ALL_FLAG, &lmr, &context)),
            DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(Register(buffer.data(), 0, DAT_MEM_PRIV_ALL_FLAG, &lmr, &context)),
            DAT_INVALID_PARAMETER);
  EXPECT_EQ(DAT_GET_TYPE(Register(buffer.data(), 64, static_cast<DAT_MEM_PRIV_FLAGS>(0x4000), &lmr,
                                  &context)),
            DAT_INVALID_PARAMETER);
  EXPECT_EQ(lmr, DAT_HANDLE_NULL) << "a refused call must leave its output alone";
}

TEST_F(RegistryMemoryTest, FreedOrWrongTypeHandleIsInvalidHandleWithSubtype) {
  std::vector<char> buffer(64);
  DAT_LMR_HANDLE lmr;
  DAT_LMR_CONTEXT context;
  ASSERT_EQ(Register(buffer.data(), buffer.size(), DAT_MEM_PRIV_ALL_FLAG, &lmr, &context), DAT_SUCCESS);
  ASSERT_EQ(dat_lmr_free(lmr), DAT_SUCCESS);
  DAT_RETURN again = dat_lmr_free(lmr);
  EXPECT_EQ(DAT_GET_TYPE(again), DAT_INVALID_HANDLE);
  EXPECT_EQ(DAT_GET_SUBTYPE(again), DAT_INVALID_HANDLE_LMR);
  DAT_RETURN wrong = dat_lmr_free(reinterpret_cast<DAT_LMR_HANDLE>(pz_));
  EXPECT_EQ(DAT_GET_SUBTYPE(wrong), DAT_INVALID_HANDLE_LMR);
  DAT_PZ_PARAM param;
  DAT_RETURN wrong_pz = dat_pz_query(reinterpret_cast<DAT_PZ_HANDLE>(lmr), DAT_PZ_FIELD_ALL, &param);
  EXPECT_EQ(DAT_GET_SUBTYPE(wrong_pz), DAT_INVALID_HANDLE_PZ);
}

TEST_F(RegistryMemoryTest, GracefulCloseRefusedWhileObjectsExist) {
  DAT_RETURN refused = dat_ia_close(ia_, DAT_CLOSE_GRACEFUL_FLAG);
  EXPECT_EQ(DAT_GET_TYPE(refused), DAT_INVALID_STATE);
  EXPECT_EQ(DAT_GET_SUBTYPE(refused), DAT_INVALID_STATE_IA_IN_USE);
  ASSERT_EQ(dat_pz_free(pz_), DAT_SUCCESS);
  ASSERT_EQ(dat_pz_create(ia_, &pz_), DAT_SUCCESS);  // TearDown closes abruptly with it
}

}  // namespace
}  // namespace softdat::testing
