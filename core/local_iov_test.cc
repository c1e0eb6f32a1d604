// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// CheckLocalIov: the privilege, PZ and bounds checks, and its cache of the last LMR, which must
// answer exactly as the table does, including after the LMR is freed, invalidated or replaced.
#include "core/local_iov.h"

#include <gtest/gtest.h>

#include "core/memory_table.h"

namespace softdat::core {
namespace {

const Pz* const kPz = reinterpret_cast<const Pz*>(0x10);
const Pz* const kOtherPz = reinterpret_cast<const Pz*>(0x20);

WindowView Lmr(std::uint32_t key, std::uint64_t address, std::uint64_t length,
               DAT_MEM_PRIV_FLAGS privileges = DAT_MEM_PRIV_ALL_FLAG, const Pz* pz = kPz) {
  WindowView view;
  view.key = key;
  view.address = address;
  view.length = length;
  view.privileges = privileges;
  view.pz = pz;
  view.is_lmr = true;
  return view;
}

// One segment through CheckLocalIov, with or without `cache`.
Status Check(const MemoryTable& table, std::uint32_t key, std::uint64_t address, std::uint64_t length,
             LocalIovCache* cache, LocalUse use = LocalUse::kTransmit, const Pz* pz = kPz) {
  DAT_LMR_TRIPLET triplet{};
  triplet.virtual_address = address;
  triplet.segment_length = length;
  triplet.lmr_context = key;
  Segment out[1];
  CheckedIov checked;
  return CheckLocalIov(table, pz, {&triplet, 1}, use, Detail::kParamLocalIov, out, checked, cache);
}

class LocalIovTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(table_.Reserve(first_).ok());
    ASSERT_TRUE(table_.Reserve(second_).ok());
    table_.Publish(Lmr(first_, 0x1000, 64));
    table_.Publish(Lmr(second_, 0x2000, 64, DAT_MEM_PRIV_LOCAL_READ_FLAG));
  }

  MemoryTable table_{8};
  std::uint32_t first_ = 0;
  std::uint32_t second_ = 0;
};

TEST_F(LocalIovTest, TheCacheAnswersAsTheTableDoes) {
  LocalIovCache cache;
  for (int round = 0; round < 3; ++round) {
    for (LocalIovCache* c : {static_cast<LocalIovCache*>(nullptr), &cache}) {
      EXPECT_TRUE(Check(table_, first_, 0x1000, 64, c).ok());
      EXPECT_EQ(Check(table_, first_, 0x1000, 65, c), Status(Code::kInvalidParameter, Detail::kParamLocalIov));
      EXPECT_EQ(Check(table_, first_, 0x1000, 8, c, LocalUse::kTransmit, kOtherPz),
                Status(Code::kProtectionViolation, Detail::kProtectionRead));
      EXPECT_TRUE(Check(table_, second_, 0x2000, 8, c).ok());
      EXPECT_EQ(Check(table_, second_, 0x2000, 8, c, LocalUse::kReceive),
                Status(Code::kPrivilegesViolation, Detail::kPrivilegesWrite))
          << "read-only LMR as a receive buffer";
      EXPECT_EQ(Check(table_, 0, 0x2000, 8, c), Status(Code::kPrivilegesViolation, Detail::kPrivilegesRead));
    }
  }
}

TEST_F(LocalIovTest, AFreedLmrIsRefusedThoughTheCacheHeldIt) {
  LocalIovCache cache;
  ASSERT_TRUE(Check(table_, first_, 0x1000, 8, &cache).ok());
  ASSERT_EQ(cache.key, first_);
  table_.Release(first_);
  EXPECT_EQ(Check(table_, first_, 0x1000, 8, &cache), Status(Code::kPrivilegesViolation, Detail::kPrivilegesRead));
}

TEST_F(LocalIovTest, AnInvalidatedWindowIsRefusedThoughTheCacheHeldIt) {
  LocalIovCache cache;
  ASSERT_TRUE(Check(table_, first_, 0x1000, 8, &cache).ok());
  ASSERT_TRUE(table_.Invalidate(first_, [](const WindowView&) { return true; }));
  EXPECT_EQ(Check(table_, first_, 0x1000, 8, &cache), Status(Code::kPrivilegesViolation, Detail::kPrivilegesRead));
}

TEST_F(LocalIovTest, AKeyPublishedAgainIsCheckedAgainstItsNewBounds) {
  // A device reissues a freed key (device_keys tables): the cache must not keep the old region.
  MemoryTable device(4, /*device_keys=*/true);
  constexpr std::uint32_t kKey = 0x1234;
  ASSERT_TRUE(device.ReserveDeviceKey(kKey).ok());
  device.Publish(Lmr(kKey, 0x1000, 4096));
  LocalIovCache cache;
  ASSERT_TRUE(Check(device, kKey, 0x1800, 64, &cache).ok());
  device.Release(kKey);
  ASSERT_TRUE(device.ReserveDeviceKey(kKey).ok());
  device.Publish(Lmr(kKey, 0x1000, 1024));
  EXPECT_EQ(Check(device, kKey, 0x1800, 64, &cache), Status(Code::kInvalidParameter, Detail::kParamLocalIov));
  EXPECT_TRUE(Check(device, kKey, 0x1000, 64, &cache).ok());
}

TEST_F(LocalIovTest, AnyOtherWriteToTheTableEmptiesTheCacheSafely) {
  // An RMR bound elsewhere writes the table too: the next check reads the table again, and
  // still answers right.
  LocalIovCache cache;
  ASSERT_TRUE(Check(table_, first_, 0x1000, 8, &cache).ok());
  const std::uint64_t writes = cache.writes;
  std::uint32_t rmr = 0;
  ASSERT_TRUE(table_.Reserve(rmr).ok());
  WindowView window = Lmr(rmr, 0x3000, 8);
  window.is_lmr = false;
  table_.Publish(window);
  EXPECT_TRUE(Check(table_, first_, 0x1000, 8, &cache).ok());
  EXPECT_NE(cache.writes, writes) << "refilled after the write";
  EXPECT_EQ(Check(table_, rmr, 0x3000, 8, &cache), Status(Code::kPrivilegesViolation, Detail::kPrivilegesRead))
      << "an RMR's context is no local buffer";
}

TEST(SharedLocalIovCache, OneCallAtATimeHasTheCacheTheOthersReadTheTable) {
  SharedLocalIovCache shared;
  {
    const SharedLocalIovCache::Use first(shared);
    ASSERT_NE(first.get(), nullptr);
    const SharedLocalIovCache::Use second(shared);
    EXPECT_EQ(second.get(), nullptr) << "in use: the second caller goes without";
  }
  const SharedLocalIovCache::Use again(shared);
  EXPECT_NE(again.get(), nullptr) << "given back when the first call ended";
}

}  // namespace
}  // namespace softdat::core
