// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT IB extensions through core over the fake device: what each operation's completions
// carry (dat_ib_extensions.h 2.0.9, as OFED DAPL reports them), immediate data taking a receive
// (an SRQ's too), atomics and their protection, UD endpoints end to end, counters against a
// ledger, and an IA without an extension saying so and refusing it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/address_handle.h"
#include "core/dat_ib.h"
#include "testing/fake_device/device_test_fixture.h"
#include "core/ib_event.h"

namespace softdat::core::device_testing {
namespace {

using transport::WorkKind;

DAT_IB_EXTENSION_EVENT_DATA Ext(const DAT_EVENT& event) { return ExtensionData(event); }

std::string Attribute(const DAT_PROVIDER_ATTR& attr, const char* name) {
  for (DAT_COUNT i = 0; i < attr.num_provider_specific_attr; ++i)
    if (std::strcmp(attr.provider_specific_attr[i].name, name) == 0) return attr.provider_specific_attr[i].value;
  return "(absent)";
}

class ExtensionTest : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    // The atomic target: its own LMR with the atomic right (the fixture's has none).
    DAT_REGION_DESCRIPTION region{};
    region.for_va = atomic_.data();
    ASSERT_TRUE(Lmr::Create(ia_, DAT_MEM_TYPE_VIRTUAL, region, sizeof atomic_, pz_,
                            static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_ALL_FLAG | kPrivRemoteAtomic),
                            DAT_VA_TYPE_VA, &atomic_lmr_, &atomic_lmr_context_, &atomic_rmr_context_, nullptr,
                            nullptr)
                    .ok());
  }

  DAT_RMR_TRIPLET AtomicTarget(std::size_t word) {
    DAT_RMR_TRIPLET target{};
    target.rmr_context = atomic_rmr_context_;
    target.virtual_address = reinterpret_cast<DAT_VADDR>(&atomic_[word]);
    target.segment_length = 8;
    return target;
  }
  DAT_RMR_TRIPLET Remote(std::uint32_t slot, std::uint32_t length = kSlot) {
    DAT_RMR_TRIPLET remote{};
    remote.rmr_context = rmr_context_;
    remote.virtual_address = reinterpret_cast<DAT_VADDR>(SlotData(slot));
    remote.segment_length = length;
    return remote;
  }
  std::uint64_t Word(std::uint32_t slot) {
    std::uint64_t value;
    std::memcpy(&value, SlotData(slot), sizeof value);
    return value;
  }

  Ep* MakeUdEp() {
    DAT_EP_ATTR attr{};
    attr.service_type = static_cast<DAT_SERVICE_TYPE>(DAT_IB_SERVICE_TYPE_UD);
    attr.max_message_size = 512;
    attr.max_recv_dtos = 16;
    attr.max_request_dtos = 16;
    attr.max_recv_iov = 1;
    attr.max_request_iov = 1;
    Ep* ep = nullptr;
    EXPECT_TRUE(Ep::Create(ia_, pz_, recv_evd_, request_evd_, connect_evd_, nullptr, &attr, &ep).ok());
    return ep;
  }

  // Resolves `client` to `server` (both UD) through a PSP; returns the client's address handle
  // of the server and the server's of the client (from the two UD connection events).
  void ResolveUd(Ep* client, Ep* server, DAT_IB_ADDR_HANDLE& to_server, DAT_IB_ADDR_HANDLE& to_client) {
    Psp* psp = nullptr;
    ASSERT_TRUE(Psp::Create(ia_, next_port_, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp).ok());
    sockaddr_in address = ia_->address();
    const std::uint32_t hello = 0x11223344;
    ASSERT_TRUE(client->Connect(reinterpret_cast<sockaddr*>(&address), next_port_, DAT_TIMEOUT_INFINITE, 4, &hello)
                    .ok());
    ++next_port_;
    DAT_EVENT event;
    ASSERT_TRUE(Next(cr_evd_, event));
    ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_UD_CONNECTION_REQUEST_EVENT);
    Cr* cr = HandleAs<Cr>(event.event_data.cr_arrival_event_data.cr_handle);
    ASSERT_NE(cr, nullptr);
    const std::uint32_t answer = 0x55667788;
    ASSERT_TRUE(Cr::Accept(cr, server, 4, &answer).ok());
    bool active = false, passive = false;
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(Next(connect_evd_, event));
      ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED);
      const DAT_IB_EXTENSION_EVENT_DATA ext = Ext(event);
      const DAT_CONNECTION_EVENT_DATA& connection = event.event_data.connect_event_data;
      ASSERT_EQ(connection.private_data_size, 4);
      std::uint32_t data;
      std::memcpy(&data, connection.private_data, 4);
      if (ext.type == DAT_IB_UD_REMOTE_AH) {
        EXPECT_EQ(connection.ep_handle, client);
        EXPECT_EQ(data, answer);  // the accepting side's private data
        to_server = ext.remote_ah;
        active = true;
      } else {
        ASSERT_EQ(ext.type, DAT_IB_UD_PASSIVE_REMOTE_AH);
        EXPECT_EQ(connection.ep_handle, server);
        EXPECT_EQ(data, hello);  // the requester's
        to_client = ext.remote_ah;
        passive = true;
      }
      EXPECT_NE(ext.remote_ah.ah, nullptr);
      EXPECT_TRUE(static_cast<Ep*>(connection.ep_handle)->FreeDatagramCm(ext.context.as_ptr).ok());
    }
    EXPECT_TRUE(active && passive);
    ASSERT_TRUE(Psp::Free(psp).ok());
  }

  alignas(8) std::array<std::uint64_t, 4> atomic_{};
  Lmr* atomic_lmr_ = nullptr;
  DAT_LMR_CONTEXT atomic_lmr_context_ = 0;
  DAT_RMR_CONTEXT atomic_rmr_context_ = 0;
};

TEST_F(ExtensionTest, TheIaReportsTheIbExtensionAndEachOperation) {
  DAT_IA_ATTR ia_attr{};
  DAT_PROVIDER_ATTR provider_attr{};
  ASSERT_TRUE(ia_->Query(nullptr, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &provider_attr).ok());
  EXPECT_EQ(ia_attr.extension_supported, DAT_EXTENSION_IB);
  EXPECT_EQ(ia_attr.extension_version, DAT_IB_EXTENSION_VERSION);
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_FETCH_AND_ADD), "TRUE");
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_CMP_AND_SWAP), "TRUE");
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_IMMED_DATA), "TRUE");
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_UD), "TRUE");
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_COUNTERS), "TRUE");
}

TEST_F(ExtensionTest, WriteWithImmediateCompletesBothSidesAsOfedReportsThem) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  ASSERT_TRUE(PostRecv(server, 0, 70).ok());
  std::memset(SlotData(0), 'r', kSlot);  // the receive buffer: nothing is placed in it
  Connect(client, server);
  std::strcpy(SlotData(1), "written with immediate");
  const DAT_LMR_TRIPLET source = Slot(1, 100);
  const DAT_RMR_TRIPLET remote = Remote(2);
  ASSERT_TRUE(client->PostWriteImmediate(1, &source, Cookie(0x9999), &remote, 0x7777, DAT_COMPLETION_DEFAULT_FLAG).ok());

  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_DTO_EVENT);
  const DAT_DTO_COMPLETION_EVENT_DATA& received = event.event_data.dto_completion_event_data;
  EXPECT_EQ(received.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(received.ep_handle, server);
  EXPECT_EQ(received.user_cookie.as_64, 70u);
  EXPECT_EQ(static_cast<int>(received.operation), DAT_IB_DTO_RECV_IMMED);
  EXPECT_EQ(received.transfered_length, 100u);  // the Write's length
  EXPECT_EQ(Ext(event).type, DAT_IB_RDMA_WRITE_IMMED_DATA);
  EXPECT_EQ(Ext(event).status, DAT_OP_SUCCESS);
  EXPECT_EQ(Ext(event).val.immed.data, 0x7777u);
  EXPECT_STREQ(SlotData(2), "written with immediate");
  EXPECT_EQ(SlotData(0)[0], 'r');

  ASSERT_TRUE(Next(request_evd_, event));
  ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_DTO_EVENT);
  const DAT_DTO_COMPLETION_EVENT_DATA& sent = event.event_data.dto_completion_event_data;
  EXPECT_EQ(sent.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(sent.user_cookie.as_64, 0x9999u);
  EXPECT_EQ(static_cast<int>(sent.operation), DAT_IB_DTO_RDMA_WRITE_IMMED);
  EXPECT_EQ(sent.transfered_length, 100u);
  EXPECT_EQ(Ext(event).type, DAT_IB_RDMA_WRITE_IMMED);
}

TEST_F(ExtensionTest, WriteWithImmediateTakesAnSrqBufferAsASendDoes) {
  Srq* srq = MakeSrq(4);
  Ep* server = MakeEp(srq);
  Ep* client = MakeEp();
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(srq, i, 100 + i).ok());
  Connect(client, server);
  const DAT_LMR_TRIPLET source = Slot(5, 8);
  const DAT_RMR_TRIPLET remote = Remote(6);
  ASSERT_TRUE(client->PostWriteImmediate(1, &source, Cookie(1), &remote, 42, DAT_COMPLETION_DEFAULT_FLAG).ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(event.event_data.dto_completion_event_data.user_cookie.as_64, 100u);
  EXPECT_EQ(Ext(event).val.immed.data, 42u);
  DAT_SRQ_PARAM param{};
  srq->Query(DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT, param);
  EXPECT_EQ(param.available_dto_count, 2);  // one of three taken
}

TEST_F(ExtensionTest, FetchAddAndCompareSwapReturnTheOriginalValue) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  atomic_[1] = 0x10;
  const DAT_LMR_TRIPLET result = Slot(3, 8);
  const DAT_RMR_TRIPLET target = AtomicTarget(1);
  ASSERT_TRUE(client->PostAtomic(WorkKind::kFetchAdd, 0x100, 0, &result, Cookie(7), &target,
                                 DAT_COMPLETION_DEFAULT_FLAG)
                  .ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(request_evd_, event));
  ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_DTO_EVENT);
  EXPECT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(static_cast<int>(event.event_data.dto_completion_event_data.operation), DAT_IB_DTO_FETCH_ADD);
  EXPECT_EQ(event.event_data.dto_completion_event_data.transfered_length, 8u);
  EXPECT_EQ(Ext(event).type, DAT_IB_FETCH_AND_ADD);
  EXPECT_EQ(Word(3), 0x10u);
  EXPECT_EQ(atomic_[1], 0x110u);

  // A compare that fails swaps nothing and still returns what was there.
  ASSERT_TRUE(client->PostAtomic(WorkKind::kCompareSwap, 0x999, 0x5, &result, Cookie(8), &target,
                                 DAT_COMPLETION_DEFAULT_FLAG)
                  .ok());
  ASSERT_TRUE(Next(request_evd_, event));
  EXPECT_EQ(Ext(event).type, DAT_IB_CMP_AND_SWAP);
  EXPECT_EQ(Word(3), 0x110u);
  EXPECT_EQ(atomic_[1], 0x110u);
  ASSERT_TRUE(client->PostAtomic(WorkKind::kCompareSwap, 0x110, 0x5, &result, Cookie(9), &target,
                                 DAT_COMPLETION_DEFAULT_FLAG)
                  .ok());
  ASSERT_TRUE(Next(request_evd_, event));
  EXPECT_EQ(static_cast<int>(event.event_data.dto_completion_event_data.operation), DAT_IB_DTO_CMP_SWAP);
  EXPECT_EQ(Word(3), 0x110u);
  EXPECT_EQ(atomic_[1], 0x5u);
}

TEST_F(ExtensionTest, AnAtomicThatBreaksProtectionIsARemoteAccessError) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  const DAT_LMR_TRIPLET result = Slot(3, 8);
  DAT_RMR_TRIPLET no_right = Remote(4, 8);  // the fixture's LMR: every right but the atomic one
  DAT_RMR_TRIPLET misaligned = AtomicTarget(1);
  misaligned.virtual_address += 4;
  // A misaligned target is refused at the post, on every transport, as a device refuses it.
  EXPECT_EQ(client->PostAtomic(WorkKind::kFetchAdd, 1, 0, &result, Cookie(1), &misaligned, DAT_COMPLETION_DEFAULT_FLAG),
            Status(Code::kInvalidParameter, Detail::kParamRemoteBuffer));
  DAT_RMR_TRIPLET bad_key = AtomicTarget(1);
  bad_key.rmr_context ^= 0x100;
  DAT_RMR_TRIPLET outside = AtomicTarget(1);
  outside.virtual_address = reinterpret_cast<DAT_VADDR>(atomic_.data() + atomic_.size());
  for (const DAT_RMR_TRIPLET& target : {no_right, bad_key, outside}) {
    ASSERT_TRUE(client->PostAtomic(WorkKind::kFetchAdd, 1, 0, &result, Cookie(1), &target,
                                   DAT_COMPLETION_DEFAULT_FLAG)
                    .ok());
    DAT_EVENT event;
    ASSERT_TRUE(Next(request_evd_, event));
    ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_DTO_EVENT);
    EXPECT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_ERR_REMOTE_ACCESS);
    EXPECT_EQ(Ext(event).status, DAT_IB_OP_ERR);
  }
  EXPECT_EQ(atomic_[1], 0u);
}

TEST_F(ExtensionTest, AnAtomicNeedsEightLocalBytesInOneSegment) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  Connect(client, server);
  const DAT_LMR_TRIPLET short_result = Slot(3, 4);
  const DAT_RMR_TRIPLET target = AtomicTarget(0);
  EXPECT_EQ(client->PostAtomic(WorkKind::kFetchAdd, 1, 0, &short_result, Cookie(1), &target,
                               DAT_COMPLETION_DEFAULT_FLAG),
            Status(Code::kInvalidParameter, Detail::kParamLocalIov));
  EXPECT_EQ(client->PostAtomic(WorkKind::kFetchAdd, 1, 0, nullptr, Cookie(1), &target, DAT_COMPLETION_DEFAULT_FLAG),
            Status(Code::kInvalidParameter, Detail::kParamLocalIov));
}

TEST_F(ExtensionTest, UdEndpointsResolveEachOtherAndExchangeDatagrams) {
  Ep* server = MakeUdEp();
  Ep* client = MakeUdEp();
  ASSERT_NE(server, nullptr);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(PostRecv(server, 0, 50).ok());
  DAT_IB_ADDR_HANDLE to_server{}, to_client{};
  ResolveUd(client, server, to_server, to_client);
  DAT_EP_STATE state;
  client->GetStatus(state, nullptr, nullptr);
  EXPECT_EQ(state, DAT_EP_STATE_CONNECTED);

  std::strcpy(SlotData(1), "datagram");
  const DAT_LMR_TRIPLET payload = Slot(1, 9);
  ASSERT_TRUE(client->PostSendDatagram(1, &payload, &to_server, Cookie(3), DAT_COMPLETION_DEFAULT_FLAG).ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(recv_evd_, event));
  ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_DTO_EVENT);
  const DAT_DTO_COMPLETION_EVENT_DATA& received = event.event_data.dto_completion_event_data;
  EXPECT_EQ(received.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(static_cast<int>(received.operation), DAT_IB_DTO_RECV_UD);
  EXPECT_EQ(received.transfered_length, 40u + 9u);  // InfiniBand's GRH room, then the payload
  EXPECT_STREQ(SlotData(0) + 40, "datagram");
  EXPECT_EQ(Ext(event).type, DAT_IB_UD_RECV);
  EXPECT_EQ(Ext(event).remote_ah.qpn, to_client.qpn);  // the source, as the server's handle names it
  ASSERT_TRUE(Next(request_evd_, event));
  EXPECT_EQ(static_cast<int>(event.event_data.dto_completion_event_data.operation), DAT_IB_DTO_SEND_UD);
  EXPECT_EQ(Ext(event).type, DAT_IB_UD_SEND);

  // A freed address handle is refused, by the free and by a send.
  EXPECT_TRUE(client->FreeAddressHandle(&to_server).ok());
  EXPECT_EQ(client->FreeAddressHandle(&to_server), Status(Code::kInvalidParameter, Detail::kParamAddressHandle));
  EXPECT_EQ(client->PostSendDatagram(1, &payload, &to_server, Cookie(4), DAT_COMPLETION_DEFAULT_FLAG),
            Status(Code::kInvalidParameter, Detail::kParamAddressHandle));
  // ... and the server's handle stays its own to free.
  EXPECT_EQ(client->FreeAddressHandle(&to_client), Status(Code::kInvalidParameter, Detail::kParamAddressHandle));
  EXPECT_TRUE(server->FreeAddressHandle(&to_client).ok());
}

// An IA without UD EPs keeps no datagram listener (on tcp, a socket per PSP); its first UD EP
// makes every PSP listen for UD requests, those made before it too.
TEST_F(ExtensionTest, APspMadeBeforeTheFirstUdEpTakesUdRequestsOnceThereIsOne) {
  Psp* psp = nullptr;
  ASSERT_TRUE(Psp::Create(ia_, 4321, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp).ok());
  EXPECT_FALSE(ia_->datagrams_wanted());
  Ep* client = MakeUdEp();
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(ia_->datagrams_wanted());
  sockaddr_in address = ia_->address();
  ASSERT_TRUE(client->Connect(reinterpret_cast<sockaddr*>(&address), 4321, DAT_TIMEOUT_INFINITE, 0, nullptr).ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(cr_evd_, event));
  EXPECT_EQ(static_cast<int>(event.event_number), DAT_IB_UD_CONNECTION_REQUEST_EVENT);
  ASSERT_TRUE(Psp::Free(psp).ok());
}

TEST_F(ExtensionTest, ADatagramWithoutAReceiveIsDroppedAndCounted) {
  Ep* server = MakeUdEp();
  Ep* client = MakeUdEp();
  DAT_IB_ADDR_HANDLE to_server{}, to_client{};
  ResolveUd(client, server, to_server, to_client);
  const DAT_LMR_TRIPLET payload = Slot(1, 16);
  ASSERT_TRUE(client->PostSendDatagram(1, &payload, &to_server, Cookie(3), DAT_COMPLETION_DEFAULT_FLAG).ok());
  DAT_EVENT event;
  ASSERT_TRUE(Next(request_evd_, event));
  EXPECT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);  // loss is the service's
  EXPECT_FALSE(Next(recv_evd_, event));
  // The receive posted afterwards waits for the next datagram.
  ASSERT_TRUE(PostRecv(server, 0, 51).ok());
  ASSERT_TRUE(client->PostSendDatagram(1, &payload, &to_server, Cookie(4), DAT_COMPLETION_DEFAULT_FLAG).ok());
  ASSERT_TRUE(Next(recv_evd_, event));
  EXPECT_EQ(event.event_data.dto_completion_event_data.user_cookie.as_64, 51u);
}

TEST_F(ExtensionTest, UdEndpointsRefuseWhatTheyCannotDo) {
  Ep* ud = MakeUdEp();
  const DAT_LMR_TRIPLET payload = Slot(1, 16);
  EXPECT_EQ(ud->PostSend(1, &payload, Cookie(1), DAT_COMPLETION_DEFAULT_FLAG, false, 0).code(),
            Code::kInvalidParameter);
  const DAT_RMR_TRIPLET remote = Remote(2);
  EXPECT_EQ(ud->PostRdma(DAT_DTO_RDMA_WRITE, 1, &payload, Cookie(1), &remote, DAT_COMPLETION_DEFAULT_FLAG).code(),
            Code::kModelNotSupported);
  Ep* rc = MakeEp();
  DAT_IB_ADDR_HANDLE nothing{};
  EXPECT_EQ(rc->PostSendDatagram(1, &payload, &nothing, Cookie(1), DAT_COMPLETION_DEFAULT_FLAG).code(),
            Code::kInvalidHandle);
  // A UD EP takes no SRQ, and no message above the datagram size.
  Srq* srq = MakeSrq(4);
  DAT_EP_ATTR attr{};
  attr.service_type = static_cast<DAT_SERVICE_TYPE>(DAT_IB_SERVICE_TYPE_UD);
  attr.max_request_dtos = 4;
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  Ep* ep = nullptr;
  EXPECT_EQ(Ep::Create(ia_, pz_, recv_evd_, request_evd_, connect_evd_, srq, &attr, &ep).code(),
            Code::kInvalidParameter);
  attr.max_message_size = ia_->capabilities().max_datagram + 1;
  attr.max_recv_dtos = 4;
  EXPECT_EQ(Ep::Create(ia_, pz_, recv_evd_, request_evd_, connect_evd_, nullptr, &attr, &ep).code(),
            Code::kInvalidParameter);
}

TEST_F(ExtensionTest, CountersMatchALedgerAndReset) {
  Ep* server = MakeEp();
  Ep* client = MakeEp();
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(PostRecv(server, i, i).ok());
  Connect(client, server);
  std::uint64_t sent_bytes = 0;
  for (std::uint32_t length : {10u, 20u, 30u}) {
    const DAT_LMR_TRIPLET source = Slot(4, length);
    ASSERT_TRUE(client->PostSend(1, &source, Cookie(length), DAT_COMPLETION_DEFAULT_FLAG, false, 0).ok());
    sent_bytes += length;
  }
  const DAT_LMR_TRIPLET written = Slot(5, 64);
  const DAT_RMR_TRIPLET remote = Remote(6);
  ASSERT_TRUE(client->PostRdma(DAT_DTO_RDMA_WRITE, 1, &written, Cookie(1), &remote, DAT_COMPLETION_DEFAULT_FLAG).ok());
  Drain(recv_evd_);
  Drain(request_evd_);

  DAT_UINT64 ep[DCNT_EP_ALL_COUNTERS];
  ASSERT_TRUE(client->QueryCounters(DCNT_EP_ALL_COUNTERS, ep, false).ok());
  EXPECT_EQ(ep[DCNT_EP_POST_SEND], 3u);
  EXPECT_EQ(ep[DCNT_EP_POST_SEND_DATA], sent_bytes);
  EXPECT_EQ(ep[DCNT_EP_POST_WRITE], 1u);
  EXPECT_EQ(ep[DCNT_EP_POST_WRITE_DATA], 64u);
  EXPECT_EQ(ep[DCNT_EP_CONNECT], 1u);
  ASSERT_TRUE(server->QueryCounters(DCNT_EP_ALL_COUNTERS, ep, false).ok());
  EXPECT_EQ(ep[DCNT_EP_POST_RECV], 3u);
  EXPECT_EQ(ep[DCNT_EP_POST_RECV_DATA], 3u * kSlot);
  EXPECT_EQ(ep[DCNT_EP_RECV], 3u);
  EXPECT_EQ(ep[DCNT_EP_RECV_DATA], sent_bytes);

  DAT_UINT64 one = 0;
  ASSERT_TRUE(server->QueryCounters(DCNT_EP_RECV, &one, true).ok());
  EXPECT_EQ(one, 3u);
  ASSERT_TRUE(server->QueryCounters(DCNT_EP_RECV, &one, false).ok());
  EXPECT_EQ(one, 0u);  // reset by the read before
  EXPECT_EQ(server->QueryCounters(DCNT_EP_ALL_COUNTERS + 1, &one, false).code(), Code::kInvalidParameter);

  DAT_UINT64 evd[DCNT_EVD_ALL_COUNTERS];
  ASSERT_TRUE(recv_evd_->QueryCounters(DCNT_EVD_ALL_COUNTERS, evd, false).ok());
  EXPECT_EQ(evd[DCNT_EVD_DTO_CALLBACK], 3u);
  EXPECT_EQ(evd[DCNT_EVD_DEQUEUE_FOUND], 3u);

  DAT_UINT64 ia[DCNT_IA_ALL_COUNTERS];
  ASSERT_TRUE(ia_->QueryCounters(DCNT_IA_ALL_COUNTERS, ia, false).ok());
  EXPECT_EQ(ia[DCNT_IA_EP_CREATE], 2u);
  EXPECT_EQ(ia[DCNT_IA_LMR_CREATE], 2u);
  EXPECT_EQ(ia[DCNT_IA_SP_CR_ACCEPTED], 1u);
  EXPECT_EQ(ia[DCNT_IA_CM_ACTIVE_EST], 1u);
  EXPECT_EQ(ia[DCNT_IA_CM_PASSIVE_EST], 1u);
}

// An IA whose device lacks the extension's operations (as siw does).
Status FactoryWithout(const IaParams& params, std::string& why, std::unique_ptr<transport::Transport>& out) {
  if (Status status = FakeDeviceTransport::Create(params, why, out); !status.ok()) return status;
  transport::Capabilities& caps = FakeDeviceTransport::Of(*out).mutable_capabilities();
  caps.immediate_data = false;
  caps.atomics = false;
  caps.datagrams = false;
  return Status::Ok();
}

TEST(ExtensionCapabilities, AnIaWithoutAnOperationReportsItAndRefusesIt) {
  DAT_PROVIDER provider{};
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  Ia* ia = nullptr;
  ASSERT_TRUE(Ia::Open(&provider, "fake-siw", "tcp 127.0.0.1", FactoryWithout, 16, async, &ia).ok());
  DAT_IA_ATTR ia_attr{};
  DAT_PROVIDER_ATTR provider_attr{};
  ASSERT_TRUE(ia->Query(nullptr, DAT_IA_FIELD_ALL, &ia_attr, DAT_PROVIDER_FIELD_ALL, &provider_attr).ok());
  EXPECT_EQ(ia_attr.extension_supported, DAT_EXTENSION_IB);  // counters and queries still work
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_FETCH_AND_ADD), "FALSE");
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_CMP_AND_SWAP), "FALSE");
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_IMMED_DATA), "FALSE");
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_UD), "FALSE");
  EXPECT_EQ(Attribute(provider_attr, DAT_IB_ATTR_COUNTERS), "TRUE");

  Pz* pz = nullptr;
  ASSERT_TRUE(Pz::Create(ia, &pz).ok());
  Ep* ep = nullptr;
  ASSERT_TRUE(Ep::Create(ia, pz, nullptr, nullptr, nullptr, nullptr, nullptr, &ep).ok());
  DAT_LMR_TRIPLET local{};
  DAT_RMR_TRIPLET remote{};
  EXPECT_EQ(ep->PostWriteImmediate(0, &local, Cookie(1), &remote, 1, DAT_COMPLETION_DEFAULT_FLAG).code(),
            Code::kModelNotSupported);
  EXPECT_EQ(ep->PostAtomic(WorkKind::kFetchAdd, 1, 0, &local, Cookie(1), &remote, DAT_COMPLETION_DEFAULT_FLAG).code(),
            Code::kModelNotSupported);
  EXPECT_EQ(ep->PostAtomic(WorkKind::kCompareSwap, 1, 2, &local, Cookie(1), &remote, DAT_COMPLETION_DEFAULT_FLAG)
                .code(),
            Code::kModelNotSupported);
  DAT_EP_ATTR attr{};
  attr.service_type = static_cast<DAT_SERVICE_TYPE>(DAT_IB_SERVICE_TYPE_UD);
  Ep* ud = nullptr;
  EXPECT_EQ(Ep::Create(ia, pz, nullptr, nullptr, nullptr, nullptr, &attr, &ud).code(), Code::kModelNotSupported);
  DAT_UINT64 counters[DCNT_EP_ALL_COUNTERS];
  EXPECT_TRUE(ep->QueryCounters(DCNT_EP_ALL_COUNTERS, counters, false).ok());
  EXPECT_TRUE(Ia::Close(ia, DAT_CLOSE_ABRUPT_FLAG).ok());
}

}  // namespace
}  // namespace softdat::core::device_testing
