// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Per-connection order: completions follow the MSN order whatever the placement order;
// dat_ep_recv_query's count and span; flush on disconnect; MSN wraparound.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "srq/srq_pool.h"
#include "srq/test_util.h"

namespace softdat::srq {
namespace {

using testing::Complete;
using testing::FlushEndpoint;
using testing::MakeWindow;
using testing::MakePool;
using testing::PostTagged;
using TakeResult = SrqPool::TakeResult;

// A caller's mistake inside the provider, not a consumer argument: no parameter is named.
constexpr Status kMisuse(Code::kInvalidParameter);

struct Query {
  DAT_COUNT n = -1;
  DAT_COUNT span = -1;
};

Query RecvQuery(const SrqPool& pool, const MsnWindow& ep) {
  Query query;
  EXPECT_TRUE(pool.RecvQuery(ep, &query.n, &query.span).ok());
  return query;
}

// Completes `msn` with a length that names it, returning the completions it made deliverable.
std::vector<RecvCompletion> Complete(SrqPool& pool, MsnWindow& ep, std::uint32_t msn) {
  std::vector<RecvCompletion> out(ep.window());
  std::size_t delivered = 0;
  EXPECT_TRUE(Complete(pool, ep, msn, msn % 100, DAT_DTO_SUCCESS, out, delivered).ok());
  out.resize(delivered);
  return out;
}

std::vector<std::uint32_t> Msns(const std::vector<RecvCompletion>& completions) {
  std::vector<std::uint32_t> msns;
  for (const RecvCompletion& completion : completions) msns.push_back(completion.msn);
  return msns;
}

TEST(SrqMsnOrder, CompletionsFollowMsnOrderPerEndpoint) {
  auto pool = MakePool(16);
  auto ep = MakeWindow(*pool, 8, 19);
  for (std::uint64_t tag = 100; tag < 105; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  // Arrival order 19, 22, 23, then 20, 21; buffers are taken in arrival order.
  std::map<std::uint32_t, std::uint64_t> cookie_of;
  for (std::uint32_t msn : {19u, 22u, 23u, 20u, 21u}) {
    RecvBuffer buffer{};
    ASSERT_EQ(pool->Take(*ep, msn, buffer), TakeResult::kTaken);
    cookie_of[msn] = buffer.cookie.as_64;
  }
  EXPECT_TRUE(Complete(*pool, *ep, 22).empty());
  EXPECT_TRUE(Complete(*pool, *ep, 23).empty());
  EXPECT_EQ(Msns(Complete(*pool, *ep, 19)), std::vector<std::uint32_t>{19});
  EXPECT_TRUE(Complete(*pool, *ep, 21).empty());
  const std::vector<RecvCompletion> rest = Complete(*pool, *ep, 20);
  EXPECT_EQ(Msns(rest), (std::vector<std::uint32_t>{20, 21, 22, 23}));
  for (const RecvCompletion& completion : rest) {
    EXPECT_EQ(completion.cookie.as_64, cookie_of[completion.msn]);
    EXPECT_EQ(completion.transferred_length, completion.msn % 100);
    EXPECT_EQ(completion.status, DAT_DTO_SUCCESS);
  }
  EXPECT_EQ(RecvQuery(*pool, *ep).n, 0);
  EXPECT_EQ(RecvQuery(*pool, *ep).span, 0);
}

TEST(SrqMsnOrder, ConnectionsAreIndependent) {
  auto pool = MakePool(16);
  auto a = MakeWindow(*pool, 8, 1);
  auto b = MakeWindow(*pool, 8, 1);
  for (std::uint64_t tag = 0; tag < 4; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*a, 1, buffer), TakeResult::kTaken);
  ASSERT_EQ(pool->Take(*b, 1, buffer), TakeResult::kTaken);
  ASSERT_EQ(pool->Take(*b, 2, buffer), TakeResult::kTaken);
  // B's messages complete while A's MSN 1 is still open: A does not hold B back.
  EXPECT_EQ(Msns(Complete(*pool, *b, 2)), std::vector<std::uint32_t>{});
  EXPECT_EQ(Msns(Complete(*pool, *b, 1)), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(RecvQuery(*pool, *a).n, 1);
  EXPECT_EQ(Msns(Complete(*pool, *a, 1)), std::vector<std::uint32_t>{1});
}

TEST(SrqMsnOrder, CompletionErrorStatusIsCarriedInOrder) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool, 4, 1);
  ASSERT_TRUE(PostTagged(*pool, 1).ok());
  ASSERT_TRUE(PostTagged(*pool, 2).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  ASSERT_EQ(pool->Take(*ep, 2, buffer), TakeResult::kTaken);
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  ASSERT_TRUE(Complete(*pool, *ep, 2, 0, DAT_DTO_ERR_LOCAL_LENGTH, out, delivered).ok());
  ASSERT_TRUE(Complete(*pool, *ep, 1, 7, DAT_DTO_SUCCESS, out, delivered).ok());
  ASSERT_EQ(delivered, 2u);
  EXPECT_EQ(out[0].status, DAT_DTO_SUCCESS);
  EXPECT_EQ(out[1].status, DAT_DTO_ERR_LOCAL_LENGTH);
}

TEST(SrqMsnOrder, CompleteRefusalsChangeNothing) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool, 4, 1);
  ASSERT_TRUE(PostTagged(*pool, 1, 50).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 99;
  EXPECT_EQ(Complete(*pool, *ep, 2, 0, DAT_DTO_SUCCESS, out, delivered), kMisuse);  // not held
  EXPECT_EQ(Complete(*pool, *ep, 1, 51, DAT_DTO_SUCCESS, out, delivered), kMisuse);
  std::unique_ptr<MsnWindow> stranger;
  ASSERT_TRUE(MsnWindow::Create(4, 1, stranger).ok());
  EXPECT_EQ(Complete(*pool, *stranger, 1, 0, DAT_DTO_SUCCESS, out, delivered), kMisuse);
  EXPECT_EQ(delivered, 99u);  // output untouched
  EXPECT_EQ(RecvQuery(*pool, *ep).n, 1);
  ASSERT_TRUE(Complete(*pool, *ep, 1, 50, DAT_DTO_SUCCESS, out, delivered).ok());
  EXPECT_EQ(delivered, 1u);
  EXPECT_EQ(Complete(*pool, *ep, 1, 50, DAT_DTO_SUCCESS, out, delivered), kMisuse);  // twice
}

TEST(SrqRecvQuery, RecvQueryMsnGaps19_22_23) {
  auto pool = MakePool(16);
  auto ep = MakeWindow(*pool, 16, 19);  // 18 is the latest completed
  for (std::uint64_t tag = 0; tag < 3; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  RecvBuffer buffer{};
  for (std::uint32_t msn : {19u, 22u, 23u})
    ASSERT_EQ(pool->Take(*ep, msn, buffer), TakeResult::kTaken);
  const Query query = RecvQuery(*pool, *ep);
  EXPECT_EQ(query.n, 3);
  EXPECT_EQ(query.span, 5);
  // Completing 19 moves the latest completed to 19: two buffers in a span of four.
  EXPECT_EQ(Msns(Complete(*pool, *ep, 19)), std::vector<std::uint32_t>{19});
  EXPECT_EQ(RecvQuery(*pool, *ep).n, 2);
  EXPECT_EQ(RecvQuery(*pool, *ep).span, 4);
  // A placed message still waiting for 20 and 21 has no completion yet: still counted.
  EXPECT_TRUE(Complete(*pool, *ep, 23).empty());
  EXPECT_EQ(RecvQuery(*pool, *ep).n, 2);
  EXPECT_EQ(RecvQuery(*pool, *ep).span, 4);
}

TEST(SrqRecvQuery, RecvQueryAcceptsNullOutputsAndRefusesStrangers) {
  auto pool = MakePool(4);
  auto ep = MakeWindow(*pool);
  DAT_COUNT n = -1;
  EXPECT_TRUE(pool->RecvQuery(*ep, &n, nullptr).ok());
  EXPECT_EQ(n, 0);
  DAT_COUNT span = -1;
  EXPECT_TRUE(pool->RecvQuery(*ep, nullptr, &span).ok());
  EXPECT_EQ(span, 0);
  std::unique_ptr<MsnWindow> stranger;
  ASSERT_TRUE(MsnWindow::Create(4, 1, stranger).ok());
  n = -1;
  EXPECT_EQ(pool->RecvQuery(*stranger, &n, &span), kMisuse);
  EXPECT_EQ(n, -1);
}

// Random arrivals and completions against a model: n and span match it, and n <= span always.
TEST(SrqRecvQuery, RecvQueryNeverNAboveSpan) {
  constexpr std::uint32_t kWindow = 16;
  auto pool = MakePool(64, 1);
  auto ep = MakeWindow(*pool, kWindow, 1);
  std::mt19937 random(12345);
  std::set<std::uint32_t> held;      // taken, completion not generated (placed or not)
  std::set<std::uint32_t> unplaced;  // taken, not placed
  std::uint32_t last_delivered = 0;
  std::uint32_t latest_allocated = 0;
  std::uint32_t delivered_total = 0;
  for (int step = 0; step < 20000; ++step) {
    while (PostTagged(*pool, step).ok()) {}
    if (random() % 2 == 0) {
      const std::uint32_t msn = last_delivered + 1 + random() % kWindow;
      RecvBuffer buffer{};
      const TakeResult result = pool->Take(*ep, msn, buffer);
      const bool placed = held.count(msn) != 0 && unplaced.count(msn) == 0;
      ASSERT_EQ(result, placed ? TakeResult::kRefused : TakeResult::kTaken) << msn;
      if (result == TakeResult::kTaken && held.insert(msn).second) {
        unplaced.insert(msn);
        latest_allocated = std::max(latest_allocated, msn);
      }
    } else if (!unplaced.empty()) {
      auto it = unplaced.begin();
      std::advance(it, random() % unplaced.size());
      const std::uint32_t msn = *it;
      unplaced.erase(it);
      for (const RecvCompletion& completion : Complete(*pool, *ep, msn)) {
        ASSERT_EQ(completion.msn, last_delivered + 1);
        last_delivered = completion.msn;
        held.erase(completion.msn);
        ASSERT_TRUE(pool->Reaped(completion.slot).ok());
        ++delivered_total;
      }
    }
    const Query query = RecvQuery(*pool, *ep);
    ASSERT_EQ(query.n, static_cast<DAT_COUNT>(held.size()));
    ASSERT_EQ(query.span, static_cast<DAT_COUNT>(latest_allocated - last_delivered));
    ASSERT_LE(query.n, query.span);
    ASSERT_LE(query.span, static_cast<DAT_COUNT>(kWindow));
  }
  EXPECT_GT(delivered_total, 1000u);  // the walk really moved through many windows
}

TEST(SrqFlush, FlushKeepsCompletedFlushesHeldLeavesPosted) {
  auto pool = MakePool(16, 1);
  auto ep = MakeWindow(*pool, 8, 1);
  auto other = MakeWindow(*pool, 8, 1);
  for (std::uint64_t tag = 1; tag <= 5; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  RecvBuffer buffer{};
  for (std::uint32_t msn : {1u, 2u, 3u, 5u})  // MSN 4 never arrived
    ASSERT_EQ(pool->Take(*ep, msn, buffer), TakeResult::kTaken);
  const std::vector<RecvCompletion> first = Complete(*pool, *ep, 1);  // delivered
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(Complete(*pool, *ep, 3).empty());  // received, waiting behind 2

  std::vector<RecvCompletion> out(ep->window());
  std::size_t delivered = 0;
  ASSERT_TRUE(FlushEndpoint(*pool, *ep, out, delivered).ok());
  ASSERT_EQ(delivered, 3u);
  // In MSN order; the completed one is not repeated; the gap is skipped.
  EXPECT_EQ(out[0].msn, 2u);
  EXPECT_EQ(out[0].status, DAT_DTO_ERR_FLUSHED);
  EXPECT_EQ(out[1].msn, 3u);
  EXPECT_EQ(out[1].status, DAT_DTO_SUCCESS);  // its message had completed reception
  EXPECT_EQ(out[1].transferred_length, 3u);
  EXPECT_EQ(out[2].msn, 5u);
  EXPECT_EQ(out[2].status, DAT_DTO_ERR_FLUSHED);
  EXPECT_EQ(out[2].cookie.as_64, 4u);  // arrival order took buffer 4 for MSN 5

  EXPECT_EQ(RecvQuery(*pool, *ep).n, 0);
  EXPECT_EQ(RecvQuery(*pool, *ep).span, 0);
  SrqPool::Snapshot query = pool->Query();
  EXPECT_EQ(query.available_dto_count, 1u);    // buffer 5 stays on the SRQ
  EXPECT_EQ(query.outstanding_dto_count, 5u);  // until the consumer reaps the rest
  // The flushed EP takes nothing more; the other EP gets the buffer left on the SRQ.
  EXPECT_EQ(pool->Take(*ep, 6, buffer), TakeResult::kRefused);
  EXPECT_EQ(pool->Take(*ep, 4, buffer), TakeResult::kRefused);
  ASSERT_EQ(pool->Take(*other, 1, buffer), TakeResult::kTaken);
  EXPECT_EQ(buffer.cookie.as_64, 5u);
  // Every completion, the earlier one included, stays reapable exactly once.
  EXPECT_TRUE(pool->Reaped(first[0].slot).ok());
  for (std::size_t i = 0; i < delivered; ++i) EXPECT_TRUE(pool->Reaped(out[i].slot).ok());
  EXPECT_EQ(pool->Query().outstanding_dto_count, 1u);
  // A second flush finds nothing.
  ASSERT_TRUE(FlushEndpoint(*pool, *ep, out, delivered).ok());
  EXPECT_EQ(delivered, 0u);
  EXPECT_EQ(RecvQuery(*pool, *other).n, 1);
}

TEST(SrqMsnOrder, MsnWraparound) {
  auto pool = MakePool(16);
  auto ep = MakeWindow(*pool, 8, 0xFFFFFFFEu);  // latest completed: 0xFFFFFFFD
  for (std::uint64_t tag = 0; tag < 6; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 0, buffer), TakeResult::kTaken);
  ASSERT_EQ(pool->Take(*ep, 1, buffer), TakeResult::kTaken);
  Query query = RecvQuery(*pool, *ep);
  EXPECT_EQ(query.n, 2);
  EXPECT_EQ(query.span, 4);  // 1 - 0xFFFFFFFD modulo 2^32
  EXPECT_EQ(pool->Take(*ep, 0xFFFFFFFDu, buffer), TakeResult::kRefused);  // behind
  EXPECT_EQ(pool->Take(*ep, 6, buffer), TakeResult::kWindowFull);  // window is FFFFFFFE..5
  ASSERT_EQ(pool->Take(*ep, 0xFFFFFFFFu, buffer), TakeResult::kTaken);
  query = RecvQuery(*pool, *ep);
  EXPECT_EQ(query.n, 3);
  EXPECT_EQ(query.span, 4);  // a lower MSN (across the wrap) does not move the latest
  ASSERT_EQ(pool->Take(*ep, 0xFFFFFFFEu, buffer), TakeResult::kTaken);
  EXPECT_TRUE(Complete(*pool, *ep, 1).empty());
  EXPECT_TRUE(Complete(*pool, *ep, 0).empty());
  EXPECT_TRUE(Complete(*pool, *ep, 0xFFFFFFFFu).empty());
  EXPECT_EQ(Msns(Complete(*pool, *ep, 0xFFFFFFFEu)),
            (std::vector<std::uint32_t>{0xFFFFFFFEu, 0xFFFFFFFFu, 0, 1}));
  query = RecvQuery(*pool, *ep);
  EXPECT_EQ(query.n, 0);
  EXPECT_EQ(query.span, 0);
  ASSERT_EQ(pool->Take(*ep, 6, buffer), TakeResult::kTaken);  // window now 2..9
  EXPECT_EQ(RecvQuery(*pool, *ep).span, 5);
}

}  // namespace
}  // namespace softdat::srq

namespace softdat::srq {
namespace {

using testing::MakeWindow;
using testing::MakePool;
using testing::PostTagged;

TEST(SrqPopCompletion, HandsOutOneAtATimeOnlyOnceEarlierMsnsArePlaced) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool, 8, 1);
  for (std::uint64_t tag = 1; tag <= 3; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  RecvBuffer buffer{};
  for (std::uint32_t msn : {1u, 2u, 3u}) ASSERT_EQ(pool->Take(*ep, msn, buffer), SrqPool::TakeResult::kTaken);
  ASSERT_TRUE(pool->Place(*ep, 3, 7, DAT_DTO_SUCCESS).ok());
  ASSERT_TRUE(pool->Place(*ep, 2, 6, DAT_DTO_SUCCESS).ok());
  RecvCompletion completion{};
  EXPECT_FALSE(pool->PopCompletion(*ep, completion)) << "MSN 1 is still open";
  ASSERT_TRUE(pool->Place(*ep, 1, 5, DAT_DTO_SUCCESS).ok());
  for (std::uint32_t msn : {1u, 2u, 3u}) {
    ASSERT_TRUE(pool->PopCompletion(*ep, completion));
    EXPECT_EQ(completion.msn, msn);
    EXPECT_EQ(completion.transferred_length, msn + 4);
  }
  EXPECT_FALSE(pool->PopCompletion(*ep, completion));
}

TEST(SrqPopCompletion, PlaceRefusesWhatItCannotAccountAndChangesNothing) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool, 8, 1);
  auto stranger = MakeWindow(*MakePool(8), 8, 1);
  ASSERT_TRUE(PostTagged(*pool, 1, 100).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), SrqPool::TakeResult::kTaken);
  EXPECT_EQ(pool->Place(*stranger, 1, 1, DAT_DTO_SUCCESS), kMisuse);
  EXPECT_EQ(pool->Place(*ep, 2, 1, DAT_DTO_SUCCESS), kMisuse);
  EXPECT_EQ(pool->Place(*ep, 1, 101, DAT_DTO_SUCCESS), kMisuse);
  RecvCompletion completion{};
  EXPECT_FALSE(pool->PopCompletion(*ep, completion));
  ASSERT_TRUE(pool->Place(*ep, 1, 100, DAT_DTO_SUCCESS).ok());
  EXPECT_TRUE(pool->PopCompletion(*ep, completion));
}

TEST(SrqPopCompletion, CloseFlushesHeldBuffersInMsnOrderAndTakesNoMore) {
  auto pool = MakePool(8);
  auto ep = MakeWindow(*pool, 8, 19);
  for (std::uint64_t tag = 1; tag <= 4; ++tag) ASSERT_TRUE(PostTagged(*pool, tag).ok());
  RecvBuffer buffer{};
  for (std::uint32_t msn : {19u, 22u, 23u}) ASSERT_EQ(pool->Take(*ep, msn, buffer), SrqPool::TakeResult::kTaken);
  ASSERT_TRUE(pool->Place(*ep, 22, 9, DAT_DTO_SUCCESS).ok());
  ASSERT_TRUE(pool->Close(*ep).ok());
  EXPECT_EQ(pool->Take(*ep, 20, buffer), SrqPool::TakeResult::kRefused);
  RecvCompletion completion{};
  std::vector<std::pair<std::uint32_t, DAT_DTO_COMPLETION_STATUS>> seen;
  while (pool->PopCompletion(*ep, completion)) seen.emplace_back(completion.msn, completion.status);
  const std::vector<std::pair<std::uint32_t, DAT_DTO_COMPLETION_STATUS>> expected = {
      {19, DAT_DTO_ERR_FLUSHED}, {22, DAT_DTO_SUCCESS}, {23, DAT_DTO_ERR_FLUSHED}};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(pool->Query().available_dto_count, 1u) << "the untaken buffer stays on the SRQ";
}

}  // namespace
}  // namespace softdat::srq

namespace softdat::srq {
namespace {

TEST(SrqPopCompletion, MessageNotesReachTheCompletionAndFlushedOnesHaveNone) {
  auto pool = testing::MakePool(4);
  auto ep = testing::MakeWindow(*pool, 4, 1);
  ASSERT_TRUE(testing::PostTagged(*pool, 1).ok());
  ASSERT_TRUE(testing::PostTagged(*pool, 2).ok());
  RecvBuffer buffer{};
  ASSERT_EQ(pool->Take(*ep, 1, buffer), SrqPool::TakeResult::kTaken);
  ASSERT_EQ(pool->Take(*ep, 2, buffer), SrqPool::TakeResult::kTaken);
  ASSERT_TRUE(pool->Place(*ep, 1, 9, DAT_DTO_SUCCESS, RecvNotes{true, false, 0, {}}).ok());
  ASSERT_TRUE(pool->Close(*ep).ok());
  RecvCompletion completion{};
  ASSERT_TRUE(pool->PopCompletion(*ep, completion));
  EXPECT_TRUE(completion.notes.solicited);
  ASSERT_TRUE(pool->PopCompletion(*ep, completion));
  EXPECT_EQ(completion.status, DAT_DTO_ERR_FLUSHED);
  EXPECT_FALSE(completion.notes.solicited);
}

}  // namespace
}  // namespace softdat::srq
