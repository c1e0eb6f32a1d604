// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// MemoryTable: keys name what was published, stale and guessed keys name nothing, and lookups
// racing a rebind always see one whole window.
#include "core/memory_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

namespace softdat::core {
namespace {

WindowView View(std::uint32_t key, std::uint64_t address, std::uint64_t length) {
  WindowView view;
  view.key = key;
  view.address = address;
  view.length = length;
  view.privileges = DAT_MEM_PRIV_ALL_FLAG;
  view.is_lmr = true;
  return view;
}

TEST(MemoryTable, PublishedKeyFindsItsWindowUntilReleased) {
  MemoryTable table(4);
  std::uint32_t key = 0;
  ASSERT_TRUE(table.Reserve(key).ok());
  EXPECT_NE(key, 0u);
  EXPECT_EQ(table.Find(key).key, 0u) << "reserved but not published";
  table.Publish(View(key, 0x1000, 64));
  const WindowView found = table.Find(key);
  EXPECT_EQ(found.key, key);
  EXPECT_EQ(found.address, 0x1000u);
  EXPECT_TRUE(found.Contains(0x1000 + 63, 1));
  EXPECT_FALSE(found.Contains(0x1000 + 63, 2));
  table.Release(key);
  EXPECT_EQ(table.Find(key).key, 0u);
}

TEST(MemoryTable, ReusedSlotGetsANewGenerationSoTheOldKeyIsDead) {
  MemoryTable table(1);
  std::uint32_t first = 0;
  ASSERT_TRUE(table.Reserve(first).ok());
  table.Publish(View(first, 0x1000, 64));
  table.Release(first);
  std::uint32_t second = 0;
  ASSERT_TRUE(table.Reserve(second).ok());
  table.Publish(View(second, 0x2000, 64));
  EXPECT_EQ(first >> 8, second >> 8);
  EXPECT_NE(first, second);
  EXPECT_EQ(table.Find(first).key, 0u);
  EXPECT_EQ(table.Find(second).address, 0x2000u);
}

TEST(MemoryTable, FullTableAndGuessedKeysAreRefused) {
  MemoryTable table(2);
  std::uint32_t key = 0;
  ASSERT_TRUE(table.Reserve(key).ok());
  ASSERT_TRUE(table.Reserve(key).ok());
  EXPECT_EQ(table.Reserve(key), Status(Code::kInsufficientResources, Detail::kMemoryRegion));
  for (std::uint32_t guess : {0u, 1u, 0xFFu, 0x100u, 0xFFFFFFFFu}) EXPECT_EQ(table.Find(guess).key, 0u) << guess;
}

TEST(MemoryTable, ReadersRacingRepublishSeeWholeWindows) {
  MemoryTable table(1);
  std::uint32_t key = 0;
  ASSERT_TRUE(table.Reserve(key).ok());
  table.Publish(View(key, 0, 0));
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const WindowView view = table.Find(key);
      // Every published window has length == address: a mix of two would break it.
      if (view.key != 0 && view.length != view.address) torn.fetch_add(1);
    }
  });
  for (std::uint64_t i = 1; i <= 200000; ++i) table.Publish(View(key, i, i));
  stop.store(true);
  reader.join();
  EXPECT_EQ(torn.load(), 0);
}

TEST(MemoryTable, DeviceKeyFindsItsWindowUntilReleased) {
  MemoryTable table(2, /*device_keys=*/true);
  constexpr std::uint32_t kDeviceKey = 0x12345605;  // its slot bits lie far beyond the table
  ASSERT_TRUE(table.ReserveDeviceKey(kDeviceKey).ok());
  table.Publish(View(kDeviceKey, 0x2000, 32));
  EXPECT_EQ(table.Find(kDeviceKey).address, 0x2000u);
  EXPECT_EQ(table.Find(kDeviceKey + 1).key, 0u);
  table.Release(kDeviceKey);
  EXPECT_EQ(table.Find(kDeviceKey).key, 0u);
  // The slot is free again: the table holds two more.
  EXPECT_TRUE(table.ReserveDeviceKey(1).ok());
  EXPECT_TRUE(table.ReserveDeviceKey(2).ok());
  EXPECT_EQ(table.ReserveDeviceKey(3), Status(Code::kInsufficientResources, Detail::kMemoryRegion));
}

TEST(MemoryTable, DeviceKeyGivenTwiceIsRefused) {
  MemoryTable table(4, /*device_keys=*/true);
  ASSERT_TRUE(table.ReserveDeviceKey(0x77).ok());
  EXPECT_EQ(table.ReserveDeviceKey(0x77).code(), Code::kInvalidParameter);
}

// A device key's lookup goes through a hint of where the key lived. A key the device gives again
// after its release lands in another slot; the stale hint must not hide it, nor find the old one.
TEST(MemoryTable, DeviceKeyGivenAgainInAnotherSlotIsFoundThere) {
  MemoryTable table(4, /*device_keys=*/true);
  constexpr std::uint32_t kKey = 0x0400a1;
  ASSERT_TRUE(table.ReserveDeviceKey(0x0100b2).ok());  // takes a slot, so the key's next one differs
  ASSERT_TRUE(table.ReserveDeviceKey(kKey).ok());
  table.Publish(View(kKey, 0x1000, 64));
  ASSERT_EQ(table.Find(kKey).address, 0x1000u);  // the hint now names the key's first slot
  table.Release(kKey);
  EXPECT_EQ(table.Find(kKey).key, 0u) << "released: the hint must not resurrect it";
  ASSERT_TRUE(table.ReserveDeviceKey(0x0200c3).ok());  // takes the freed slot back
  table.Publish(View(0x0200c3, 0x3000, 8));
  ASSERT_TRUE(table.ReserveDeviceKey(kKey).ok());
  table.Publish(View(kKey, 0x2000, 32));
  const WindowView found = table.Find(kKey);
  EXPECT_EQ(found.key, kKey);
  EXPECT_EQ(found.address, 0x2000u);
  EXPECT_EQ(table.Find(0x0200c3).address, 0x3000u) << "the old slot's new key";
}

// More keys than hints (1,024) and keys sharing a hint: each is still found, as itself.
TEST(MemoryTable, DeviceKeysSharingAHintAreEachFound) {
  constexpr std::uint32_t kKeys = 3000;
  MemoryTable table(kKeys, /*device_keys=*/true);
  for (std::uint32_t i = 1; i <= kKeys; ++i) {
    ASSERT_TRUE(table.ReserveDeviceKey(i * 0x101).ok());
    table.Publish(View(i * 0x101, std::uint64_t{i} << 12, 64));
  }
  for (int pass = 0; pass < 2; ++pass)
    for (std::uint32_t i = 1; i <= kKeys; ++i) {
      const WindowView found = table.Find(i * 0x101);
      ASSERT_EQ(found.key, i * 0x101);
      ASSERT_EQ(found.address, std::uint64_t{i} << 12);
    }
  EXPECT_EQ(table.Find(0x101 * (kKeys + 1)).key, 0u);
}

// Posts look device keys up while the control path registers and releases others: every lookup
// sees its own key's window or nothing, never another key's (TSan checks the hint's accesses).
TEST(MemoryTable, DeviceKeyLookupsRacingRegistrationsSeeOnlyTheirOwnWindow) {
  MemoryTable table(8, /*device_keys=*/true);
  constexpr std::uint32_t kStable = 0x5501;
  ASSERT_TRUE(table.ReserveDeviceKey(kStable).ok());
  table.Publish(View(kStable, std::uint64_t{kStable} << 12, 64));
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::atomic<int> stable_missed{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t)
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (table.Find(kStable).key != kStable) stable_missed.fetch_add(1);
        for (std::uint32_t key = 0x100; key < 0x104; ++key) {
          const WindowView found = table.Find(key);
          if (found.key != 0 && (found.key != key || found.address != std::uint64_t{key} << 12)) wrong.fetch_add(1);
        }
      }
    });
  // Freed slots are reused last-in first-out, so the four keys trade slots every round.
  for (int round = 0; round < 2000; ++round) {
    for (std::uint32_t key = 0x100; key < 0x104; ++key) {
      ASSERT_TRUE(table.ReserveDeviceKey(key).ok());
      table.Publish(View(key, std::uint64_t{key} << 12, 64));
    }
    for (std::uint32_t key = 0x100; key < 0x104; ++key) table.Release(key);
  }
  stop = true;
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(stable_missed.load(), 0);
}

// What the transport's key hook hears (core/ia.h forwards it): every key that starts granting,
// and every key that stops, the revocation before its slot can be reissued.
TEST(MemoryTable, ObserverHearsPublishReleaseAndInvalidateBeforeTheSlotIsReused) {
  struct Recorder final : KeyObserver {
    std::vector<std::pair<char, std::uint32_t>> heard;
    MemoryTable* table = nullptr;
    bool slot_free_at_revoke = false;
    void Published(const WindowView& view) override { heard.push_back({'P', view.key}); }
    void Revoked(std::uint32_t key) override {
      heard.push_back({'R', key});
      std::uint32_t other = 0;
      // A one-slot table: while the revocation runs, the slot must not be free.
      if (table->Reserve(other).ok()) slot_free_at_revoke = true;
    }
  } recorder;
  MemoryTable table(1);
  recorder.table = &table;
  table.set_observer(&recorder);
  std::uint32_t key = 0;
  ASSERT_TRUE(table.Reserve(key).ok());
  table.Publish(View(key, 0x1000, 64));
  table.Release(key);
  EXPECT_FALSE(recorder.slot_free_at_revoke);
  std::uint32_t rmr = 0;
  ASSERT_TRUE(table.Reserve(rmr).ok());
  WindowView window = View(rmr, 0x2000, 16);
  window.is_lmr = false;
  table.Publish(window);
  EXPECT_FALSE(table.Invalidate(rmr, [](const WindowView& v) { return v.is_lmr; })) << "refused: nothing heard";
  EXPECT_TRUE(table.Invalidate(rmr, [](const WindowView& v) { return !v.is_lmr; }));
  const std::vector<std::pair<char, std::uint32_t>> expected = {{'P', key}, {'R', key}, {'P', rmr}, {'R', rmr}};
  EXPECT_EQ(recorder.heard, expected);
}

}  // namespace
}  // namespace softdat::core
