// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// How softdat-verbs reads an rdma_cm reject and how much private data it lets a consumer send, on
// IB/RoCE and on iWARP. Pure functions: runs anywhere (the device-level behaviour is tested in the
// VM by verbs_transport_test and the interop suite).
#include "transport/verbs/private_data.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

namespace softdat::transport::verbs {
namespace {

TEST(PrivateDataTest, LimitsAreTheSmallestEachTransportCarries) {
  EXPECT_EQ(MaxPrivateData(IBV_TRANSPORT_IB), 56u);      // CM REQ 92 bytes less rdma_cm's 36
  EXPECT_EQ(MaxPrivateData(IBV_TRANSPORT_IWARP), 251u);  // see private_data.h: siw's 8-bit sum
}

TEST(PrivateDataTest, IbRejectReasonTellsTheConsumerFromTheProvider) {
  // A consumer's rdma_reject: reason 28 and the REJ's whole private-data field (148 bytes).
  EXPECT_EQ(ClassifyReject(IBV_TRANSPORT_IB, kRejectConsumer, 148), RejectedBy::kPeerConsumer);
  // Our unanswered request (rdma_reject_ece), and the CM's own rejects (8: no such service).
  EXPECT_EQ(ClassifyReject(IBV_TRANSPORT_IB, kRejectNoAnswer, 148), RejectedBy::kNonPeer);
  EXPECT_EQ(ClassifyReject(IBV_TRANSPORT_IB, 8, 148), RejectedBy::kNonPeer);
}

TEST(PrivateDataTest, IwarpRejectWithDataIsTheConsumer) {
  // siw reports an MPA reject and a connection closed before the Reply both as ECONNRESET; only
  // the private data tells them apart. Other RNICs say ECONNREFUSED for the reject.
  EXPECT_EQ(ClassifyReject(IBV_TRANSPORT_IWARP, -ECONNRESET, 3), RejectedBy::kPeerConsumer);
  EXPECT_EQ(ClassifyReject(IBV_TRANSPORT_IWARP, -ECONNREFUSED, 3), RejectedBy::kPeerConsumer);
  EXPECT_EQ(ClassifyReject(IBV_TRANSPORT_IWARP, -ECONNRESET, 0), RejectedBy::kNonPeer);
}

TEST(PrivateDataTest, AssignKeepsTheConsumersBytesOnly) {
  PrivateData data;
  const std::vector<std::uint8_t> bytes{1, 2, 3};
  data.Assign(bytes);
  ASSERT_EQ(data.length, 3);
  EXPECT_EQ(data.bytes[0], 1);
  EXPECT_EQ(data.bytes[2], 3);
  data.Assign({});
  EXPECT_EQ(data.length, 0);
}

}  // namespace
}  // namespace softdat::transport::verbs
