// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The published key table: a peer's read-only view sees what the owner publishes and revokes,
// with the checks in core's order; the view cannot write (the seal); a malformed table is refused;
// and the access rule: a revocation waits for a peer's access in flight (until its access word
// moves, or the bound passes and the peer's connection is told to break), never for one that
// has not started.
#include "transport/shm/key_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "transport/shm/layout.h"

namespace softdat::transport::shm {
namespace {

constexpr std::uint32_t kKey = (5u << 8) | 3;  // slot 5, generation 3
constexpr Binding kEndpoint{7, 42};

KeyGrant Grant(std::uint32_t key = kKey) {
  KeyGrant grant;
  grant.key = key;
  grant.address = 0x10000;
  grant.length = 0x1000;
  grant.access = kRemoteRead | kRemoteWrite;
  grant.pz = kEndpoint.pz;
  return grant;
}

struct Tables {
  Tables() {
    EXPECT_TRUE(KeyTable::Create(16, false, owner).ok());
    EXPECT_TRUE(KeyTableView::Open(owner->fd(), view).ok());
  }
  std::unique_ptr<KeyTable> owner;
  std::unique_ptr<KeyTableView> view;
};

TEST(KeyTable, AViewSeesWhatIsPublishedAndRevoked) {
  Tables t;
  EXPECT_EQ(t.view->capacity(), 16u);
  EXPECT_EQ(t.view->Check(kKey, 0x10000, 16, RemoteAccess::kWrite, kEndpoint), RemoteCheck::kInvalidKey);
  ASSERT_TRUE(t.owner->Publish(Grant()));
  EXPECT_EQ(t.view->Check(kKey, 0x10000, 0x1000, RemoteAccess::kWrite, kEndpoint), RemoteCheck::kOk);
  EXPECT_EQ(t.view->Check(kKey, 0x10800, 0x800, RemoteAccess::kRead, kEndpoint), RemoteCheck::kOk);
  EXPECT_TRUE(t.owner->Revoke(kKey));
  EXPECT_EQ(t.view->Check(kKey, 0x10000, 16, RemoteAccess::kWrite, kEndpoint), RemoteCheck::kInvalidKey);
  EXPECT_FALSE(t.owner->Revoke(kKey)) << "revoked already";
}

TEST(KeyTable, ChecksComeInCoresOrder) {
  Tables t;
  KeyGrant read_only = Grant();
  read_only.access = kRemoteRead;
  ASSERT_TRUE(t.owner->Publish(read_only));
  KeyGrant bound = Grant((6u << 8) | 1);
  bound.endpoint = 99;  // an RMR bound to another endpoint
  ASSERT_TRUE(t.owner->Publish(bound));
  const std::uint32_t stale = (5u << 8) | 2;  // the slot's earlier generation
  EXPECT_EQ(t.view->Check(stale, 0x10000, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kInvalidKey);
  EXPECT_EQ(t.view->Check((200u << 8) | 1, 0x10000, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kInvalidKey)
      << "a slot past the table";
  EXPECT_EQ(t.view->Check(0, 0x10000, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kInvalidKey);
  EXPECT_EQ(t.view->Check(kKey, 0x10000, 16, RemoteAccess::kRead, Binding{8, 42}), RemoteCheck::kNotAssociated)
      << "another PZ";
  EXPECT_EQ(t.view->Check(bound.key, 0x10000, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kNotAssociated)
      << "bound to another endpoint";
  EXPECT_EQ(t.view->Check(bound.key, 0x10000, 16, RemoteAccess::kRead, Binding{7, 99}), RemoteCheck::kOk);
  EXPECT_EQ(t.view->Check(kKey, 0x10000, 16, RemoteAccess::kWrite, kEndpoint), RemoteCheck::kAccessRights);
  EXPECT_EQ(t.view->Check(kKey, 0xffff, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kBounds);
  EXPECT_EQ(t.view->Check(kKey, 0x10ff1, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kBounds);
  EXPECT_EQ(t.view->Check(kKey, 0x10000, 0x1001, RemoteAccess::kRead, kEndpoint), RemoteCheck::kBounds);
  EXPECT_EQ(t.view->Check(kKey, ~0ull - 4, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kBounds) << "wraps";
}

TEST(KeyTable, APeerCanOnlyMapItReadOnly) {
  Tables t;
  void* writable = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, t.owner->fd(), 0);
  EXPECT_EQ(writable, MAP_FAILED) << "F_SEAL_FUTURE_WRITE";
  const std::uint8_t byte = 1;
  EXPECT_EQ(::pwrite(t.owner->fd(), &byte, 1, 0), -1);
  EXPECT_NE(::ftruncate(t.owner->fd(), 0), 0) << "sealed against shrinking";
}

TEST(KeyTable, AMalformedTableIsRefused) {
  // A memfd that is not sealed.
  UniqueFd plain(::memfd_create("plain", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(plain.get(), 8192), 0);
  std::unique_ptr<KeyTableView> view;
  EXPECT_FALSE(KeyTableView::Open(plain.get(), view).ok());
  // Sealed, but its header is not a table's.
  UniqueFd fd;
  Mapping mapping;
  ASSERT_TRUE(CreateSharedMemory("fake", 8192, true, fd, mapping).ok());
  EXPECT_FALSE(KeyTableView::Open(fd.get(), view).ok());
  // A header claiming more slots than the file holds.
  std::memcpy(mapping.data(), "sdkstab1", 8);
  const std::uint32_t version_and_capacity[2] = {1, 1000};
  std::memcpy(mapping.data() + 8, version_and_capacity, sizeof version_and_capacity);
  EXPECT_FALSE(KeyTableView::Open(fd.get(), view).ok());
}

// A stand-in for a connection whose peer accesses the table's memory.
class Watch final : public AccessWatch {
 public:
  const std::uint64_t* access_word() const override {
    fenced.store(true);
    return &word;
  }
  void OnFenceTimeout() override { timed_out.store(true); }
  std::uint64_t word = 0;
  mutable std::atomic<bool> fenced{false};  // a revocation looked at the word
  std::atomic<bool> timed_out{false};
};

// With no bound to speak of, a revocation returns once the peer's access word moves (and only
// then: the test would hang otherwise). That it waits at all is the next test's.
TEST(KeyTable, ARevocationReturnsOnceTheAccessInFlightRetires) {
  Tables t;
  Watch watch;
  t.owner->AddWatch(&watch);
  t.owner->set_fence_bound(std::chrono::hours(1));
  ASSERT_TRUE(t.owner->Publish(Grant()));
  StoreRelease(&watch.word, std::uint64_t{1});  // the peer announced an access
  std::atomic<bool> retired{false};
  std::thread peer([&] {
    // The peer's copy ends once the revocation is under way.
    while (!watch.fenced.load()) std::this_thread::yield();
    retired.store(true);
    StoreRelease(&watch.word, std::uint64_t{2});
  });
  EXPECT_TRUE(t.owner->Revoke(kKey));
  EXPECT_TRUE(retired.load()) << "Revoke returned while the access was in flight";
  EXPECT_FALSE(watch.timed_out.load());
  peer.join();
  t.owner->RemoveWatch(&watch);
}

TEST(KeyTable, ARevocationDoesNotWaitWhenNoAccessIsInFlight) {
  Tables t;
  Watch watch;
  watch.word = 6;  // even: several accesses came and went
  t.owner->AddWatch(&watch);
  t.owner->set_fence_bound(std::chrono::hours(1));  // a wait would hang the test (bounded by its timeout)
  ASSERT_TRUE(t.owner->Publish(Grant()));
  EXPECT_TRUE(t.owner->Revoke(kKey));
  EXPECT_FALSE(watch.timed_out.load());
  t.owner->RemoveWatch(&watch);
}

// A peer whose access never retires (its word odd for good), watched by the table with a short
// bound, while `revoke` runs: whether the watch was told to break.
bool TimesOut(Tables& t, const std::function<void()>& revoke) {
  Watch watch;
  watch.word = 3;
  t.owner->AddWatch(&watch);
  t.owner->set_fence_bound(std::chrono::milliseconds(10));
  revoke();
  t.owner->RemoveWatch(&watch);
  return watch.timed_out.load();
}

// An access that never retires: the revocation waits the whole bound, then tells the watch.
TEST(KeyTable, APeerHoldingAnAccessPastTheBoundIsToldToBreak) {
  Tables t;
  ASSERT_TRUE(t.owner->Publish(Grant()));
  EXPECT_TRUE(TimesOut(t, [&] { EXPECT_TRUE(t.owner->Revoke(kKey)); }));
}

TEST(KeyTable, RepublishingASlotIsARevocationToo) {
  Tables t;
  EXPECT_FALSE(TimesOut(t, [&] { ASSERT_TRUE(t.owner->Publish(Grant())); })) << "a fresh slot revokes nothing";
  EXPECT_TRUE(TimesOut(t, [&] { ASSERT_TRUE(t.owner->Publish(Grant((5u << 8) | 4))); }))
      << "the slot's next generation replaces what it granted";
  EXPECT_EQ(t.view->Check(kKey, 0x10000, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kInvalidKey);
  EXPECT_EQ(t.view->Check((5u << 8) | 4, 0x10000, 16, RemoteAccess::kRead, kEndpoint), RemoteCheck::kOk);
}

// A reader racing a writer always sees a whole entry: the key it asks for with its own range, or
// nothing (never one entry's key with another's range).
TEST(KeyTable, AReaderRacingTheWriterSeesWholeEntries) {
  Tables t;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint32_t generation = 1; !stop.load(); generation = generation % 255 + 1) {
      KeyGrant grant = Grant((5u << 8) | generation);
      grant.address = 0x10000ull * generation;  // each generation its own range
      t.owner->Publish(grant);
    }
  });
  int granted = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t generation = 1 + i % 255;
    const RemoteCheck check =
        t.view->Check((5u << 8) | generation, 0x10000ull * generation, 0x1000, RemoteAccess::kRead, kEndpoint);
    ASSERT_TRUE(check == RemoteCheck::kOk || check == RemoteCheck::kInvalidKey) << static_cast<int>(check);
    granted += check == RemoteCheck::kOk;
  }
  stop.store(true);
  writer.join();
  (void)granted;
}

TEST(KeyTable, TheSleepEpochIsOddOnlyBetweenBeginAndEndSleep) {
  Tables t;
  EXPECT_EQ(t.view->SleepEpoch() & 1, 0u);
  t.owner->BeginSleep();
  const std::uint64_t asleep = t.view->SleepEpoch();
  EXPECT_EQ(asleep & 1, 1u);
  t.owner->EndSleep();
  EXPECT_EQ(t.view->SleepEpoch(), asleep + 1);
  t.owner->BeginSleep();
  EXPECT_NE(t.view->SleepEpoch(), asleep) << "each sleep its own epoch";
  t.owner->EndSleep();
}

// A doorbell read by another thread than the sleeper's renews the sleep: a new odd epoch while
// it sleeps, nothing while it is awake; the sleeper's EndSleep still ends it.
TEST(KeyTable, RenewingASleepGivesItANewOddEpochAndLeavesAnAwakeTableAlone) {
  Tables t;
  t.owner->RenewSleep();
  const std::uint64_t awake = t.view->SleepEpoch();
  EXPECT_EQ(awake & 1, 0u) << "renewing an awake table leaves it awake";
  t.owner->BeginSleep();
  const std::uint64_t asleep = t.view->SleepEpoch();
  t.owner->RenewSleep();
  const std::uint64_t renewed = t.view->SleepEpoch();
  EXPECT_EQ(renewed & 1, 1u);
  EXPECT_NE(renewed, asleep);
  t.owner->EndSleep();
  EXPECT_EQ(t.view->SleepEpoch() & 1, 0u);
  EXPECT_NE(t.view->SleepEpoch(), awake);
}

}  // namespace
}  // namespace softdat::transport::shm
