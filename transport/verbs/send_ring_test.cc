// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// SendRing without a device: which posts are signalled, what one completion reports for the
// unsignalled entries before it, and what teardown takes as done.
#include "transport/verbs/send_ring.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace softdat::transport::verbs {
namespace {

struct Pushed {
  std::uint64_t seq;
  bool signalled;
};

Pushed Push(SendRing& ring, std::uint64_t id, bool wanted) {
  Pushed p{};
  EXPECT_TRUE(ring.Push(id, static_cast<std::uint32_t>(id * 10), wanted, p.seq, p.signalled));
  return p;
}

// (id, completed) in the order Complete reported them.
std::vector<std::pair<std::uint64_t, bool>> Complete(SendRing& ring, std::uint64_t seq) {
  std::vector<std::pair<std::uint64_t, bool>> out;
  EXPECT_TRUE(ring.Complete(static_cast<std::uint32_t>(seq), [&](const SendRing::Posted& p, bool completed) {
    EXPECT_EQ(p.length, p.id * 10);
    out.emplace_back(p.id, completed);
  }));
  return out;
}

TEST(SendRingTest, SuppressedPostsAreUnsignalledAndWantedOnesSignalled) {
  SendRing ring;
  ring.Allocate(16);
  EXPECT_FALSE(Push(ring, 1, false).signalled);
  EXPECT_FALSE(Push(ring, 2, false).signalled);
  EXPECT_TRUE(Push(ring, 3, true).signalled);
  EXPECT_TRUE(ring.signalled_outstanding());
}

TEST(SendRingTest, OneCompletionReportsTheUnsignalledEntriesBeforeItInOrder) {
  SendRing ring;
  ring.Allocate(16);
  Push(ring, 1, false);
  Push(ring, 2, false);
  const Pushed third = Push(ring, 3, true);
  Push(ring, 4, false);
  const std::vector<std::pair<std::uint64_t, bool>> want{{1, false}, {2, false}, {3, true}};
  EXPECT_EQ(Complete(ring, third.seq), want);
  EXPECT_FALSE(ring.signalled_outstanding());
  EXPECT_FALSE(ring.empty());  // 4: no CQE yet
}

TEST(SendRingTest, EveryIntervalthPostIsSignalledSoTheRingNeverFillsWithUnfreeableEntries) {
  SendRing ring;
  ring.Allocate(8);
  ASSERT_EQ(ring.interval(), 4u);
  std::vector<bool> signalled;
  for (std::uint64_t id = 1; id <= 8; ++id) signalled.push_back(Push(ring, id, false).signalled);
  EXPECT_EQ(signalled, (std::vector<bool>{false, false, false, true, false, false, false, true}));
  std::uint64_t seq;
  bool sig;
  EXPECT_FALSE(ring.Push(9, 90, false, seq, sig));  // full
  EXPECT_EQ(Complete(ring, 7).size(), 8u);           // the 8th (seq 7) frees all of them
  EXPECT_TRUE(ring.empty());
}

TEST(SendRingTest, ARingOfOneSignalsEveryPost) {
  SendRing ring;
  ring.Allocate(1);
  EXPECT_TRUE(Push(ring, 1, false).signalled);
}

TEST(SendRingTest, UnpushRestoresTheSignallingState) {
  SendRing ring;
  ring.Allocate(8);
  Push(ring, 1, false);
  Push(ring, 2, false);
  Push(ring, 3, false);
  std::uint64_t seq;
  bool sig;
  ASSERT_TRUE(ring.Push(4, 40, false, seq, sig));
  EXPECT_TRUE(sig);  // the interval's
  ring.Unpush();     // the post failed
  EXPECT_FALSE(ring.signalled_outstanding());
  EXPECT_TRUE(Push(ring, 4, false).signalled);  // still due
}

TEST(SendRingTest, ACompletionNamingNoOutstandingEntryIsRefused) {
  SendRing ring;
  ring.Allocate(8);
  Push(ring, 1, true);
  EXPECT_FALSE(ring.Complete(5, [](const SendRing::Posted&, bool) { ADD_FAILURE(); }));
  EXPECT_EQ(Complete(ring, 0).size(), 1u);
  EXPECT_FALSE(ring.Complete(0, [](const SendRing::Posted&, bool) { ADD_FAILURE(); }));  // already taken
}

TEST(SendRingTest, TeardownTakesTheUnsignalledEntriesOlderThanAnyUncompletedSignalledOne) {
  SendRing ring;
  ring.Allocate(16);
  Push(ring, 1, false);
  Push(ring, 2, false);
  Push(ring, 3, true);  // never completes: core flushes it and what follows
  Push(ring, 4, false);
  std::vector<std::uint64_t> done;
  ring.TakeDone([&](const SendRing::Posted& p) { done.push_back(p.id); });
  EXPECT_EQ(done, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_TRUE(ring.signalled_outstanding());
}

}  // namespace
}  // namespace softdat::transport::verbs
