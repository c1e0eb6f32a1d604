// The DAT_PROVIDER table: every slot filled, unsupported features answer DAT_MODEL_NOT_SUPPORTED,
// bad handles are refused; and the status mapping keeps type and subtype.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "dat/provider_entry.h"
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
  EXPECT_EQ(ToDatReturn(Status::Ok()), DAT_SUCCESS);
  EXPECT_EQ(ToDatReturn(Status(Code::kInvalidState, Detail::kSrqInUse)),
            DatReturn(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE));
  EXPECT_EQ(ToDatReturn(Status(Code::kInvalidParameter, Detail::kArg3)),
            DatReturn(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
  EXPECT_EQ(ToDatReturn(Status(Code::kInsufficientResources)), DAT_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(ToDatReturn(Status(Code::kInvalidHandle, Detail::kArg1)),
            DatReturn(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1));
}

TEST(StatusMap, GuardedTurnsExceptionsIntoStatuses) {
  EXPECT_EQ(DAT_GET_TYPE(Guarded("test", []() -> Status { throw std::bad_alloc(); })),
            DAT_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(Guarded("test", []() -> Status { throw 42; }), DAT_INTERNAL_ERROR);
}

}  // namespace
}  // namespace softdat::dat
