// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A fixture for core's device receive model tests: one IA over the fake device transport
// (testing/fake_device, "fake" IA params), a PZ, one registered buffer, EVDs, and helpers that
// connect two EPs of the IA to each other and drive the fake device until it is idle. Everything
// is deterministic: the fake moves only inside Settle() (busy-poll), so no wait is timed.
// Built with SOFTDAT_DEVICE_TEST_CQ=1, the fake device has completion queues (one per DTO EVD,
// polled by dequeues and waits, as on verbs); otherwise it reports completions as it moves.
#pragma once

#include <dat2/udat.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/cr.h"
#include "core/ep.h"
#include "core/evd.h"
#include "core/ia.h"
#include "core/lmr.h"
#include "core/pz.h"
#include "core/service_point.h"
#include "core/srq.h"
#include "testing/fake_device/fake_device_transport.h"

#ifndef SOFTDAT_DEVICE_TEST_CQ
#define SOFTDAT_DEVICE_TEST_CQ 0
#endif

namespace softdat::core::device_testing {

using softdat::testing::fake_device::FakeDeviceTransport;

inline DAT_DTO_COOKIE Cookie(std::uint64_t value) {
  DAT_DTO_COOKIE cookie{};
  cookie.as_64 = value;
  return cookie;
}

class DeviceTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kBufferSize = 1 << 16;
  static constexpr std::uint32_t kSlot = 256;  // bytes per receive or send slot of the buffer

  void SetUp() override {
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    ASSERT_TRUE(
        Ia::Open(&provider_, "fake-device", "tcp 127.0.0.1", FakeDeviceTransport::Create, 64, async, &ia_).ok());
    async_ = static_cast<Evd*>(async);
    fake().behaviour().completion_queues = SOFTDAT_DEVICE_TEST_CQ != 0;
    ASSERT_TRUE(Pz::Create(ia_, &pz_).ok());
    buffer_.assign(kBufferSize, 0);
    DAT_REGION_DESCRIPTION region{};
    region.for_va = buffer_.data();
    ASSERT_TRUE(Lmr::Create(ia_, DAT_MEM_TYPE_VIRTUAL, region, kBufferSize, pz_, DAT_MEM_PRIV_ALL_FLAG,
                            DAT_VA_TYPE_VA, &lmr_, &lmr_context_, &rmr_context_, nullptr, nullptr)
                    .ok());
    ASSERT_TRUE(Evd::Create(ia_, 256, nullptr, DAT_EVD_DTO_FLAG, &recv_evd_).ok());
    ASSERT_TRUE(Evd::Create(ia_, 256, nullptr, DAT_EVD_DTO_FLAG, &request_evd_).ok());
    ASSERT_TRUE(Evd::Create(ia_, 64, nullptr, DAT_EVD_CONNECTION_FLAG, &connect_evd_).ok());
    ASSERT_TRUE(Evd::Create(ia_, 64, nullptr, DAT_EVD_CR_FLAG, &cr_evd_).ok());
  }

  void TearDown() override {
    if (ia_ != nullptr) {
      EXPECT_TRUE(Ia::Close(ia_, DAT_CLOSE_ABRUPT_FLAG).ok());
    }
  }

  FakeDeviceTransport& fake() { return FakeDeviceTransport::Of(ia_->transport()); }

  // Runs the fake device until nothing is left to do.
  void Settle() {
    for (int i = 0; i < 1000 && fake().Progress(); ++i) {
    }
  }

  // The next event of `evd` once the device is idle; false when there is none.
  bool Next(Evd* evd, DAT_EVENT& event) {
    Settle();
    return evd->Dequeue(event).ok();
  }

  // Every event of `evd` once the device is idle.
  std::vector<DAT_EVENT> Drain(Evd* evd) {
    std::vector<DAT_EVENT> events;
    DAT_EVENT event;
    while (Next(evd, event)) events.push_back(event);
    return events;
  }

  Ep* MakeEp(Srq* srq = nullptr, Evd* recv_evd = nullptr) {
    Ep* ep = nullptr;
    EXPECT_TRUE(Ep::Create(ia_, pz_, recv_evd != nullptr ? recv_evd : recv_evd_, request_evd_, connect_evd_, srq,
                           nullptr, &ep)
                    .ok());
    return ep;
  }

  Srq* MakeSrq(DAT_COUNT max_recv_dtos, DAT_COUNT low_watermark = DAT_SRQ_LW_DEFAULT) {
    DAT_SRQ_ATTR attr{};
    attr.max_recv_dtos = max_recv_dtos;
    attr.max_recv_iov = 1;
    attr.low_watermark = low_watermark;
    Srq* srq = nullptr;
    EXPECT_TRUE(Srq::Create(ia_, pz_, attr, &srq).ok());
    return srq;
  }

  // Connects `client` to `server` through a PSP and waits for both ESTABLISHED events.
  void Connect(Ep* client, Ep* server) {
    Psp* psp = nullptr;
    ASSERT_TRUE(Psp::Create(ia_, next_port_, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp).ok());
    sockaddr_in address = ia_->address();
    ASSERT_TRUE(client->Connect(reinterpret_cast<sockaddr*>(&address), next_port_, DAT_TIMEOUT_INFINITE, 0, nullptr)
                    .ok());
    ++next_port_;
    DAT_EVENT event;
    ASSERT_TRUE(Next(cr_evd_, event));
    ASSERT_EQ(event.event_number, DAT_CONNECTION_REQUEST_EVENT);
    Cr* cr = HandleAs<Cr>(event.event_data.cr_arrival_event_data.cr_handle);
    ASSERT_NE(cr, nullptr);
    ASSERT_TRUE(Cr::Accept(cr, server, 0, nullptr).ok());
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(Next(connect_evd_, event));
      ASSERT_EQ(event.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
    }
    ASSERT_TRUE(Psp::Free(psp).ok());
  }

  // Slot `index` of the registered buffer as a local triplet.
  DAT_LMR_TRIPLET Slot(std::uint32_t index, std::uint32_t length = kSlot) {
    DAT_LMR_TRIPLET triplet{};
    triplet.lmr_context = lmr_context_;
    triplet.virtual_address = reinterpret_cast<DAT_VADDR>(buffer_.data() + std::size_t{index} * kSlot);
    triplet.segment_length = length;
    return triplet;
  }
  char* SlotData(std::uint32_t index) { return reinterpret_cast<char*>(buffer_.data() + std::size_t{index} * kSlot); }

  Status PostRecv(Ep* ep, std::uint32_t slot, std::uint64_t cookie) {
    const DAT_LMR_TRIPLET triplet = Slot(slot);
    return ep->PostRecv(1, &triplet, Cookie(cookie), DAT_COMPLETION_DEFAULT_FLAG);
  }
  Status PostRecv(Srq* srq, std::uint32_t slot, std::uint64_t cookie) {
    const DAT_LMR_TRIPLET triplet = Slot(slot);
    return srq->PostRecv(1, &triplet, Cookie(cookie));
  }
  // Sends the text in `slot` (written here first).
  Status Send(Ep* ep, std::uint32_t slot, const char* text, std::uint64_t cookie = 0) {
    std::strcpy(SlotData(slot), text);
    const DAT_LMR_TRIPLET triplet = Slot(slot, static_cast<std::uint32_t>(std::strlen(text) + 1));
    return ep->PostSend(1, &triplet, Cookie(cookie), DAT_COMPLETION_DEFAULT_FLAG, false, 0);
  }

  static DAT_DTO_COMPLETION_EVENT_DATA Dto(const DAT_EVENT& event) {
    EXPECT_EQ(event.event_number, DAT_DTO_COMPLETION_EVENT);
    return event.event_data.dto_completion_event_data;
  }

  DAT_PROVIDER provider_{};
  Ia* ia_ = nullptr;
  Evd* async_ = nullptr;
  Pz* pz_ = nullptr;
  Lmr* lmr_ = nullptr;
  DAT_LMR_CONTEXT lmr_context_ = 0;
  DAT_RMR_CONTEXT rmr_context_ = 0;
  std::vector<std::uint8_t> buffer_;
  Evd* recv_evd_ = nullptr;
  Evd* request_evd_ = nullptr;
  Evd* connect_evd_ = nullptr;
  Evd* cr_evd_ = nullptr;
  DAT_CONN_QUAL next_port_ = 5000;
};

}  // namespace softdat::core::device_testing
