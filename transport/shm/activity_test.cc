// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The activity table (activity.h): a peer's mark is the IA's to take, once; what a poll gives
// back is taken again; a peer maps only a sealed memfd of exactly the table's size.
#include "transport/shm/activity.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

namespace softdat::transport::shm {
namespace {

TEST(Activity, APeersMarkIsTakenOnce) {
  std::unique_ptr<ActivityTable> table;
  ASSERT_TRUE(ActivityTable::Create(table).ok());
  std::unique_ptr<ActivityView> view;
  ASSERT_TRUE(ActivityView::Open(table->fd(), view).ok());
  EXPECT_EQ(table->Peek(0), 0u);
  view->Mark(3);
  view->Mark(3);
  view->Mark(64 + 1);
  view->Mark(kActivitySlots - 1);
  EXPECT_EQ(table->Peek(0), 1u << 3);
  EXPECT_EQ(table->Take(0), 1u << 3);
  EXPECT_EQ(table->Take(0), 0u) << "taken once";
  EXPECT_EQ(table->Take(1), 1u << 1);
  EXPECT_EQ(table->Take(kActivityWords - 1), std::uint64_t{1} << 63);
  table->Give(1, 0x30);
  EXPECT_EQ(table->Take(1), 0x30u) << "given back, taken again";
}

TEST(Activity, OnlyASealedTableOfTheRightSizeIsMapped) {
  std::unique_ptr<ActivityView> view;
  const int unsealed = ::memfd_create("not-a-table", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(::ftruncate(unsealed, kActivityBytes), 0);
  EXPECT_FALSE(ActivityView::Open(unsealed, view).ok()) << "unsealed: it could shrink under us";
  ::close(unsealed);
  UniqueFd fd;
  Mapping mapping;
  ASSERT_TRUE(CreateSharedMemory("too-small", kActivityBytes / 2, false, fd, mapping).ok());
  EXPECT_FALSE(ActivityView::Open(fd.get(), view).ok());
}

}  // namespace
}  // namespace softdat::transport::shm
