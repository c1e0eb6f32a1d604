// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The ledger's own checks: a message survives the round trip and any flipped bit, cut or
// misplacement is caught; completions are counted exactly once; leftovers are reported.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "testing/ledger/dto_ledger.h"
#include "testing/ledger/message.h"

namespace softdat::testing {
namespace {

DAT_DTO_COMPLETION_EVENT_DATA Completion(DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS status) {
  DAT_DTO_COMPLETION_EVENT_DATA completion{};
  completion.user_cookie = cookie;
  completion.status = status;
  return completion;
}

TEST(Message, RoundTrips) {
  std::vector<std::uint8_t> bytes(1000);
  FillMessage(bytes, 7, 42, 99);
  MessageHeader header;
  ASSERT_EQ(CheckMessage(bytes, bytes.size(), header), MessageCheck::kOk);
  EXPECT_EQ(header.stream, 7u);
  EXPECT_EQ(header.sequence, 42u);
  EXPECT_EQ(header.extra, 99u);
  EXPECT_EQ(header.length, 1000u);
}

TEST(Message, EveryFlippedBitIsCaught) {
  std::vector<std::uint8_t> bytes(200);
  FillMessage(bytes, 1, 1);
  for (std::size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::vector<std::uint8_t> flipped = bytes;
    flipped[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    MessageHeader header;
    const MessageCheck check = CheckMessage(flipped, flipped.size(), header);
    // The extra field (bytes 24..31) is the workload's own and not covered.
    if (bit / 8 >= 24 && bit / 8 < 32) continue;
    EXPECT_NE(check, MessageCheck::kOk) << "bit " << bit;
  }
}

TEST(Message, ShortDeliveryAndAnotherMessagesBodyAreCaught) {
  std::vector<std::uint8_t> bytes(512);
  FillMessage(bytes, 3, 5);
  MessageHeader header;
  EXPECT_EQ(CheckMessage(bytes, 511, header), MessageCheck::kShort);
  EXPECT_EQ(CheckMessage(bytes, 10, header), MessageCheck::kShort);
  std::vector<std::uint8_t> other(512);
  FillMessage(other, 3, 6);
  // Message 6's body under message 5's header, CRC patched: still not message 5.
  std::vector<std::uint8_t> spliced = bytes;
  std::copy(other.begin() + sizeof(MessageHeader), other.end(), spliced.begin() + sizeof(MessageHeader));
  MessageHeader patched;
  std::memcpy(&patched, spliced.data(), sizeof patched);
  std::memcpy(&header, other.data(), sizeof header);
  patched.body_crc = header.body_crc;
  std::memcpy(spliced.data(), &patched, sizeof patched);
  EXPECT_EQ(CheckMessage(spliced, spliced.size(), header), MessageCheck::kBadPattern);
  std::vector<std::uint8_t> zeros(512, 0);
  EXPECT_EQ(CheckMessage(zeros, zeros.size(), header), MessageCheck::kBadMagic);
}

TEST(DtoLedger, EachCompletionCountsOnceAndLeftoversAreReported) {
  DtoLedger ledger;
  const DAT_DTO_COOKIE a = ledger.Post(DtoKind::kSend, 10);
  const DAT_DTO_COOKIE b = ledger.Post(DtoKind::kRdmaRead, 10);
  const DAT_DTO_COOKIE c = ledger.Post(DtoKind::kSrqRecv, 10);
  EXPECT_TRUE(ledger.Complete(Completion(a, DAT_DTO_SUCCESS)));
  EXPECT_FALSE(ledger.Complete(Completion(a, DAT_DTO_ERR_FLUSHED))) << "a second completion";
  DtoKind kind;
  EXPECT_TRUE(ledger.Complete(Completion(b, DAT_DTO_ERR_FLUSHED), &kind));
  EXPECT_EQ(kind, DtoKind::kRdmaRead);
  DAT_DTO_COOKIE never;
  never.as_64 = 1000;
  EXPECT_FALSE(ledger.Complete(Completion(never, DAT_DTO_SUCCESS)));
  EXPECT_EQ(ledger.Violations(false).size(), 2u);
  EXPECT_EQ(ledger.Violations(true).size(), 2u) << "an SRQ buffer on the SRQ is not the connection's";
  const DAT_DTO_COOKIE d = ledger.Post(DtoKind::kRdmaWrite, 10);
  const std::vector<std::string> over = ledger.Violations(true);
  ASSERT_EQ(over.size(), 3u);
  EXPECT_NE(over.back().find("rdma-write#4"), std::string::npos) << over.back();
  EXPECT_TRUE(ledger.Complete(Completion(d, DAT_DTO_ERR_FLUSHED)));
  EXPECT_TRUE(ledger.Complete(Completion(c, DAT_DTO_SUCCESS)));
  const LedgerCounts counts = ledger.counts();
  EXPECT_EQ(counts.posted, 4u);
  EXPECT_EQ(counts.succeeded, 2u);
  EXPECT_EQ(counts.flushed, 2u);
  EXPECT_EQ(counts.outstanding, 0u);
  EXPECT_EQ(counts.srq_posted, 1u);
  EXPECT_EQ(counts.srq_completed, 1u);
}

TEST(DtoLedger, TagsComeBackAndACompletedCookieIsStillASecondCompletion) {
  DtoLedger ledger;
  const DAT_DTO_COOKIE a = ledger.Post(DtoKind::kSrqRecv, 10, 7);
  const DAT_DTO_COOKIE b = ledger.Post(DtoKind::kSend, 10, 9);
  std::uint32_t tag = 0;
  EXPECT_TRUE(ledger.Complete(Completion(a, DAT_DTO_SUCCESS), nullptr, &tag));
  EXPECT_EQ(tag, 7u);
  EXPECT_TRUE(ledger.Complete(Completion(b, DAT_DTO_SUCCESS), nullptr, &tag));
  EXPECT_EQ(tag, 9u);
  // Only outstanding DTOs are kept; completing one again is still caught.
  EXPECT_FALSE(ledger.Complete(Completion(a, DAT_DTO_SUCCESS)));
  ASSERT_EQ(ledger.Violations(false).size(), 1u);
  EXPECT_NE(ledger.Violations(false)[0].find("second completion"), std::string::npos);
}

TEST(DtoLedger, UnpostedIsForgottenAndCorruptDeliveryIsAViolation) {
  DtoLedger ledger;
  const DAT_DTO_COOKIE a = ledger.Post(DtoKind::kSend, 10);
  ledger.Unpost(a);
  EXPECT_FALSE(ledger.Complete(Completion(a, DAT_DTO_SUCCESS)));
  EXPECT_EQ(ledger.counts().posted, 0u);
  ledger.Delivered(true);
  ledger.Delivered(false, "send 7: bad CRC");
  const std::vector<std::string> found = ledger.Violations(true);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_NE(found[1].find("bad CRC"), std::string::npos);
}

}  // namespace
}  // namespace softdat::testing
