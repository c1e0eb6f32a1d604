// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The argument checks an EP makes before anything moves: the completion flags of a receive, a
// request and a window bind (each against the EP's completion flags attributes), and the private
// data of a connect, an accept and a reject. Each refusal must carry its own subtype.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <ostream>

#include "core/rmr.h"
#include "testing/fake_device/device_test_fixture.h"

namespace softdat {

// gtest finds this through ADL: a refused Status prints as "<code>/<detail>" in a failure.
inline void PrintTo(const Status& status, std::ostream* os) {
  *os << CodeName(status.code()) << "/" << static_cast<int>(status.detail());
}

namespace core::device_testing {
namespace {

using EpArgumentChecksTest = DeviceTest;

const Status kBadFlags(Code::kInvalidParameter, Detail::kParamCompletionFlags);
const Status kBadPrivateDataSize(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
const Status kBadPrivateData(Code::kInvalidParameter, Detail::kParamPrivateData);

DAT_COMPLETION_FLAGS Flags(std::uint32_t bits) { return static_cast<DAT_COMPLETION_FLAGS>(bits); }

TEST_F(EpArgumentChecksTest, AReceiveTakesOnlyTheUnsignalledFlagAndOnlyWhereTheAttributeEnablesIt) {
  Ep* ep = MakeEp();
  const DAT_LMR_TRIPLET triplet = Slot(0);
  EXPECT_EQ(ep->PostRecv(1, &triplet, Cookie(1), DAT_COMPLETION_SUPPRESS_FLAG), kBadFlags);
  EXPECT_EQ(ep->PostRecv(1, &triplet, Cookie(1), DAT_COMPLETION_SOLICITED_WAIT_FLAG), kBadFlags);
  EXPECT_EQ(ep->PostRecv(1, &triplet, Cookie(1), DAT_COMPLETION_UNSIGNALLED_FLAG), kBadFlags)
      << "the EP's recv_completion_flags do not enable unsignalled completions";
  EXPECT_TRUE(ep->PostRecv(1, &triplet, Cookie(1), DAT_COMPLETION_DEFAULT_FLAG).ok());

  // An EP whose recv_completion_flags attribute enables them takes them.
  DAT_EP_PARAM param{};
  ep->Query(DAT_EP_FIELD_EP_ATTR_ALL, param);
  DAT_EP_ATTR attr = param.ep_attr;
  attr.recv_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
  Ep* unsignalled = nullptr;
  ASSERT_TRUE(Ep::Create(ia_, pz_, recv_evd_, request_evd_, connect_evd_, nullptr, &attr, &unsignalled).ok());
  const DAT_LMR_TRIPLET other = Slot(1);
  EXPECT_TRUE(unsignalled->PostRecv(1, &other, Cookie(2), DAT_COMPLETION_UNSIGNALLED_FLAG).ok());
}

TEST_F(EpArgumentChecksTest, ARequestTakesSolicitedWaitOnlyOnASendAndUnsignalledOnlyWhereEnabled) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  const DAT_LMR_TRIPLET local = Slot(2, 8);
  DAT_RMR_TRIPLET remote{};
  remote.rmr_context = rmr_context_;
  remote.virtual_address = reinterpret_cast<DAT_VADDR>(SlotData(3));
  remote.segment_length = 8;
  EXPECT_EQ(client->PostSend(1, &local, Cookie(1), DAT_COMPLETION_EVD_THRESHOLD_FLAG, false, 0), kBadFlags);
  EXPECT_EQ(client->PostSend(1, &local, Cookie(1), DAT_COMPLETION_UNSIGNALLED_FLAG, false, 0), kBadFlags)
      << "the EP's request_completion_flags do not enable unsignalled completions";
  EXPECT_EQ(client->PostRdma(DAT_DTO_RDMA_WRITE, 1, &local, Cookie(1), &remote, DAT_COMPLETION_SOLICITED_WAIT_FLAG),
            kBadFlags);
  EXPECT_EQ(client->PostRdma(DAT_DTO_RDMA_READ, 1, &local, Cookie(1), &remote, DAT_COMPLETION_SOLICITED_WAIT_FLAG),
            kBadFlags);
  // Every flag a request may carry is taken where it applies.
  ASSERT_TRUE(PostRecv(server, 4, 9).ok());
  EXPECT_TRUE(client
                  ->PostSend(1, &local, Cookie(2),
                             Flags(DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_SUPPRESS_FLAG |
                                   DAT_COMPLETION_BARRIER_FENCE_FLAG),
                             false, 0)
                  .ok());
  EXPECT_TRUE(client
                  ->PostRdma(DAT_DTO_RDMA_WRITE, 1, &local, Cookie(3), &remote,
                             Flags(DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG))
                  .ok());
  Settle();
}

TEST_F(EpArgumentChecksTest, ABindTakesNeitherSolicitedWaitNorUnsignalledUnlessEnabled) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  // Memory windows are core's software keys: allowed here as on a transport without device keys.
  fake().mutable_capabilities().device_memory_keys = false;
  Rmr* rmr = nullptr;
  ASSERT_TRUE(Rmr::Create(pz_, &rmr).ok());
  const DAT_LMR_TRIPLET unbind{};  // length 0: an unbind, which needs no LMR
  DAT_RMR_CONTEXT context = 0;
  const DAT_RMR_COOKIE cookie{};
  EXPECT_EQ(rmr->Bind(nullptr, unbind, 0, DAT_VA_TYPE_VA, client, cookie, DAT_COMPLETION_SOLICITED_WAIT_FLAG, context),
            kBadFlags);
  EXPECT_EQ(rmr->Bind(nullptr, unbind, 0, DAT_VA_TYPE_VA, client, cookie, DAT_COMPLETION_UNSIGNALLED_FLAG, context),
            kBadFlags);
  EXPECT_TRUE(rmr->Bind(nullptr, unbind, 0, DAT_VA_TYPE_VA, client, cookie,
                        Flags(DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG), context)
                  .ok());
  Settle();
}

TEST_F(EpArgumentChecksTest, AConnectRefusesPrivateDataOutsideTheTransportsRoomOrWithoutAPointer) {
  Ep* ep = MakeEp();
  sockaddr_in address = ia_->address();
  const auto* remote = reinterpret_cast<const sockaddr*>(&address);
  const DAT_COUNT room = static_cast<DAT_COUNT>(ia_->capabilities().max_private_data);
  std::array<std::uint8_t, 1024> data{};
  EXPECT_EQ(ep->Connect(remote, 4999, DAT_TIMEOUT_INFINITE, -1, data.data()), kBadPrivateDataSize);
  EXPECT_EQ(ep->Connect(remote, 4999, DAT_TIMEOUT_INFINITE, room + 1, data.data()), kBadPrivateDataSize);
  EXPECT_EQ(ep->Connect(remote, 4999, DAT_TIMEOUT_INFINITE, 8, nullptr), kBadPrivateData);
  EXPECT_EQ(ep->state(), DAT_EP_STATE_UNCONNECTED) << "a refused connect leaves the EP as it was";
}

TEST_F(EpArgumentChecksTest, AnAcceptAndARejectRefusePrivateDataOutsideTheTransportsRoomOrWithoutAPointer) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Psp* psp = nullptr;
  ASSERT_TRUE(Psp::Create(ia_, 4998, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp).ok());
  sockaddr_in address = ia_->address();
  ASSERT_TRUE(client->Connect(reinterpret_cast<sockaddr*>(&address), 4998, DAT_TIMEOUT_INFINITE, 0, nullptr).ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(cr_evd_, event));
  ASSERT_EQ(event.event_number, DAT_CONNECTION_REQUEST_EVENT);
  Cr* cr = HandleAs<Cr>(event.event_data.cr_arrival_event_data.cr_handle);
  ASSERT_NE(cr, nullptr);
  const DAT_COUNT room = static_cast<DAT_COUNT>(ia_->capabilities().max_private_data);
  std::array<std::uint8_t, 1024> data{};
  // Each refusal leaves the request unanswered (the CR lives on for the next try).
  EXPECT_EQ(Cr::Accept(cr, server, -1, data.data()), kBadPrivateDataSize);
  EXPECT_EQ(Cr::Accept(cr, server, room + 1, data.data()), kBadPrivateDataSize);
  EXPECT_EQ(Cr::Accept(cr, server, 8, nullptr), kBadPrivateData);
  EXPECT_EQ(Cr::Reject(cr, -1, data.data()), kBadPrivateDataSize);
  EXPECT_EQ(Cr::Reject(cr, room + 1, data.data()), kBadPrivateDataSize);
  EXPECT_EQ(Cr::Reject(cr, 8, nullptr), kBadPrivateData);
  ASSERT_EQ(HandleAs<Cr>(cr), cr);
  EXPECT_TRUE(Cr::Reject(cr, room, data.data()).ok()) << "the full room is allowed";
  ASSERT_TRUE(Psp::Free(psp).ok());
}

}  // namespace
}  // namespace core::device_testing
}  // namespace softdat
