// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT_PROVIDER table: every slot filled, unsupported features answer DAT_MODEL_NOT_SUPPORTED,
// bad handles are refused; and the status mapping keeps type and subtype.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "dat/argument_positions.h"
#include "dat/provider_table.h"
#include "dat/status_map.h"

namespace softdat::dat {
namespace {

DAT_RETURN DatReturn(DAT_RETURN type, DAT_RETURN subtype) { return type | subtype; }

TEST(ProviderTable, AllSeventyNineSlotsAreFilled) {
  DAT_PROVIDER table;
  FillProviderTable(table);
  constexpr size_t kSlots = (sizeof(DAT_PROVIDER) - offsetof(DAT_PROVIDER, ia_open_func)) / sizeof(void*);
  ASSERT_EQ(kSlots, 79u);
  void* words[kSlots];
  std::memcpy(words, &table.ia_open_func, sizeof words);
  for (size_t i = 0; i < kSlots; ++i) EXPECT_NE(words[i], nullptr) << "slot " << i;
  EXPECT_NE(reinterpret_cast<void*>(table.handle_extendedop_func), nullptr);
}

TEST(ProviderTable, UnsupportedFeatureSaysModelNotSupported) {
  DAT_PROVIDER table;
  FillProviderTable(table);
  EXPECT_EQ(table.csp_free_func(nullptr), DAT_MODEL_NOT_SUPPORTED);
  EXPECT_EQ(DAT_GET_TYPE(table.cr_handoff_func(nullptr, 0)), DAT_INVALID_HANDLE) << "built, and checks its handle";
}

TEST(ProviderTable, BuiltSlotRejectsBadHandle) {
  DAT_PROVIDER table;
  FillProviderTable(table);
  alignas(16) unsigned char garbage[64] = {};
  EXPECT_EQ(table.ia_close_func(garbage, DAT_CLOSE_ABRUPT_FLAG),
            DatReturn(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA));
  EXPECT_EQ(table.ia_close_func(nullptr, DAT_CLOSE_ABRUPT_FLAG),
            DatReturn(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA));
  DAT_HANDLE_TYPE type;
  EXPECT_EQ(DAT_GET_TYPE(table.get_handle_type_func(garbage, &type)), DAT_INVALID_HANDLE);
}

TEST(StatusMap, TypeAndSubtype) {
  EXPECT_EQ(ToDatReturn(Status::Ok(), "dat_srq_free"), DAT_SUCCESS);
  EXPECT_EQ(ToDatReturn(Status(Code::kInvalidState, Detail::kEpDisconnected), "dat_ep_post_send"),
            DatReturn(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED));
  // libdat2's dat_strerror names no SRQ state subtype: the type alone (status_map_test checks all).
  EXPECT_EQ(ToDatReturn(Status(Code::kInvalidState, Detail::kSrqInUse), "dat_srq_free"), DAT_INVALID_STATE);
  EXPECT_EQ(ToDatReturn(Status(Code::kInsufficientResources), "dat_srq_post_recv"), DAT_INSUFFICIENT_RESOURCES);
}

// A parameter named by the code below dat/ becomes its position in the call being served: the
// same name is a different argument in different calls.
TEST(StatusMap, ParametersBecomeThePositionInTheCallServed) {
  const Status attributes(Code::kInvalidParameter, Detail::kParamAttributes);
  EXPECT_EQ(ToDatReturn(attributes, "dat_ep_create"), DatReturn(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6));
  EXPECT_EQ(ToDatReturn(attributes, "dat_ep_create_with_srq"), DatReturn(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7));
  EXPECT_EQ(ToDatReturn(attributes, "dat_ep_modify"), DatReturn(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3))
      << "the attributes travel inside dat_ep_modify's param";
  EXPECT_EQ(ToDatReturn(attributes, "dat_srq_create"), DatReturn(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  const Status flags(Code::kInvalidParameter, Detail::kParamCompletionFlags);
  EXPECT_EQ(ToDatReturn(flags, "dat_ep_post_send"), DatReturn(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));
  EXPECT_EQ(ToDatReturn(flags, "dat_ep_post_rdma_write"), DatReturn(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6));
  EXPECT_EQ(ToDatReturn(flags, "dat_rmr_bind"), DatReturn(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8));
  EXPECT_EQ(ToDatReturn(Status(Code::kInvalidHandle, Detail::kParamHandle), "dat_evd_wait"),
            DatReturn(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1));
}

TEST(StatusMap, AParameterTheCallDoesNotHaveGivesNoSubtype) {
  EXPECT_EQ(ToDatReturn(Status(Code::kInvalidParameter, Detail::kParamThreshold), "dat_srq_resize"),
            DAT_INVALID_PARAMETER);
}

// Every parameter name the code uses appears in at least one signature, and every position is
// within DAT_INVALID_ARG10.
TEST(ArgumentPositions, SignaturesStayWithinTenArguments) {
  EXPECT_EQ(ArgumentPosition("dat_lmr_create", Detail::kParamRegisteredAddress), 12)
      << "dat_lmr_create has twelve; only its first ten can be named by a subtype";
  EXPECT_EQ(ArgumentPosition("dat_no_such_call", Detail::kParamHandle), 0);
}

TEST(StatusMap, GuardedTurnsExceptionsIntoStatuses) {
  EXPECT_EQ(DAT_GET_TYPE(Guarded("test", []() -> Status { throw std::bad_alloc(); })),
            DAT_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(Guarded("test", []() -> Status { throw 42; }), DAT_INTERNAL_ERROR);
}

}  // namespace
}  // namespace softdat::dat
