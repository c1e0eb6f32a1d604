// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Handle objects: the DAT_PROVIDER* is the first word, kinds are checked, freed handles read kFreed.
#include "core/handle.h"

#include <gtest/gtest.h>

namespace softdat::core {
namespace {

struct FakeEp : HandleHeader {
  static constexpr HandleKind kKind = HandleKind::kEp;
  int value = 7;
};

struct FakeLmr : HandleHeader {
  static constexpr HandleKind kKind = HandleKind::kLmr;
};

TEST(Handle, ProviderPointerIsTheFirstWord) {
  DAT_PROVIDER provider{};
  FakeEp* ep = NewHandle<FakeEp>(&provider);
  EXPECT_EQ(DAT_HANDLE_TO_PROVIDER(static_cast<DAT_HANDLE>(ep)), &provider);
  DeleteHandle(ep);
}

TEST(Handle, WrongKindAndFreedAreRejected) {
  DAT_PROVIDER provider{};
  FakeEp* ep = NewHandle<FakeEp>(&provider);
  EXPECT_EQ(HandleAs<FakeEp>(ep), ep);
  EXPECT_EQ(HandleAs<FakeLmr>(ep), nullptr);
  EXPECT_EQ(HandleAs<FakeEp>(nullptr), nullptr);
  EXPECT_EQ(HandleAs<FakeEp>(reinterpret_cast<char*>(ep) + 1), nullptr);
  DeleteHandle(ep);
  EXPECT_EQ(HandleAs<FakeEp>(ep), nullptr);
  EXPECT_EQ(KindOf(ep), HandleKind::kFreed);
}

TEST(Handle, StorageIsReused) {
  DAT_PROVIDER provider{};
  FakeEp* first = NewHandle<FakeEp>(&provider);
  DeleteHandle(first);
  FakeEp* second = NewHandle<FakeEp>(&provider);
  EXPECT_EQ(first, second);
  EXPECT_EQ(second->value, 7);
  DeleteHandle(second);
}

}  // namespace
}  // namespace softdat::core
