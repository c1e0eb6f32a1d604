// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The conformance fixture: IA, PZ, LMRs, EVDs, SRQs and connected endpoint pairs, all through the
// public DAT API.
#include "testing/conformance/fixture.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "tools/dat_connect.h"

namespace softdat::conformance {

const char* SuiteIaName() {
  const char* name = std::getenv("SOFTDAT_CONFORMANCE_IA");
  return name != nullptr && *name != '\0' ? name : "softdat-tcp";
}

bool SuiteIsTcp() { return std::strncmp(SuiteIaName(), "softdat-tcp", 11) == 0; }

bool ProgressIsPolled() {
  const char* progress = std::getenv("SOFTDAT_PROGRESS");
  return progress != nullptr && std::string_view(progress) == "poll";
}

std::string DatReturnName(DAT_RETURN value) {
  char text[64];
  std::snprintf(text, sizeof text, "type 0x%08x subtype %u", DAT_GET_TYPE(value),
                static_cast<unsigned>(DAT_GET_SUBTYPE(value)));
  return text;
}

void ConformanceTest::SetUp() {
  ASSERT_EQ(dat_ia_open(const_cast<char*>(ia_name()), 64, &async_evd_, &ia_), DAT_SUCCESS);
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ia_query(ia_, &async, DAT_IA_FIELD_ALL, &ia_attr_, DAT_PROVIDER_FIELD_ALL, &provider_attr_),
            DAT_SUCCESS);
  ASSERT_EQ(dat_pz_create(ia_, &pz_), DAT_SUCCESS);
  RequireSrqSupport(provider_attr_.provider_name, provider_attr_.srq_supported);
}

void RequireSrqSupport(std::string_view provider_name, DAT_BOOLEAN srq_supported) {
  if (srq_supported == DAT_TRUE) return;
  if (provider_name == "softdat") FAIL() << "softdat's IA says srq_supported FALSE: every softdat IA supports SRQs";
  GTEST_SKIP() << "provider " << provider_name << " says srq_supported FALSE";
}

bool ConformanceTest::ProviderSays(const char* name, const char* value) const {
  for (DAT_COUNT i = 0; i < provider_attr_.num_provider_specific_attr; ++i) {
    const DAT_NAMED_ATTR& attr = provider_attr_.provider_specific_attr[i];
    if (std::strcmp(attr.name, name) == 0) return std::strcmp(attr.value, value) == 0;
  }
  ADD_FAILURE() << "the IA " << ia_name() << " reports no provider attribute " << name
                << " (renamed? see core/ia_attributes.cc)";
  return false;
}

void ConformanceTest::TearDown() {
  // Abrupt close frees every object the test left; the registered memory outlives it.
  for (DAT_IA_HANDLE ia : sender_ias_) EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  sender_ias_.clear();
  if (ia_ != DAT_HANDLE_NULL) {
    EXPECT_EQ(dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  }
  send_regions_.clear();
}

DAT_EVD_HANDLE ConformanceTest::MakeEvd(DAT_EVD_FLAGS flags, DAT_COUNT qlen, DAT_IA_HANDLE ia) {
  DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
  const DAT_RETURN created = dat_evd_create(ia == DAT_HANDLE_NULL ? ia_ : ia, qlen, DAT_HANDLE_NULL, flags, &evd);
  EXPECT_EQ(created, DAT_SUCCESS) << DatReturnName(created);
  return evd;
}

DAT_RETURN ConformanceTest::Register(Region& region, std::size_t size, DAT_MEM_PRIV_FLAGS privileges,
                                     DAT_PZ_HANDLE pz, DAT_IA_HANDLE ia) {
  region.bytes.assign(size, '\0');
  DAT_REGION_DESCRIPTION description;
  description.for_va = region.bytes.data();
  DAT_VLEN registered_length;
  DAT_VADDR registered_address;
  return dat_lmr_create(ia == DAT_HANDLE_NULL ? ia_ : ia, DAT_MEM_TYPE_VIRTUAL, description, size, pz == DAT_HANDLE_NULL ? pz_ : pz,
                        privileges, DAT_VA_TYPE_VA, &region.lmr, &region.context, &region.rmr_context,
                        &registered_length, &registered_address);
}

DAT_RETURN ConformanceTest::CreateSrq(DAT_COUNT max_recv_dtos, DAT_COUNT max_recv_iov, DAT_SRQ_HANDLE* srq,
                                      DAT_COUNT low_watermark) {
  DAT_SRQ_ATTR attr{};
  attr.max_recv_dtos = max_recv_dtos;
  attr.max_recv_iov = max_recv_iov;
  attr.low_watermark = low_watermark;
  return dat_srq_create(ia_, pz_, &attr, srq);
}

DAT_SRQ_PARAM ConformanceTest::QuerySrq(DAT_SRQ_HANDLE srq) {
  DAT_SRQ_PARAM param{};
  EXPECT_EQ(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &param), DAT_SUCCESS);
  return param;
}

DAT_RETURN ConformanceTest::Wait(DAT_EVD_HANDLE evd, DAT_EVENT& event, DAT_TIMEOUT timeout_us,
                                  DAT_EVD_HANDLE pump) {
  return tools::WaitEvent(evd, event, timeout_us, pump);
}

void ConformanceTest::Pump(DAT_EVD_HANDLE evd) {
  DAT_EVENT event{};
  DAT_COUNT more = 0;
  (void)dat_evd_wait(evd, 0, 1, &event, &more);
}

void ConformanceTest::WaitDto(DAT_EVD_HANDLE evd, DAT_DTO_COMPLETION_EVENT_DATA& dto, DAT_EVD_HANDLE pump) {
  DAT_EVENT event{};
  const DAT_RETURN waited = Wait(evd, event, kEventTimeoutUs, pump);
  ASSERT_EQ(waited, DAT_SUCCESS) << "no DTO completion in time: " << DatReturnName(waited);
  ASSERT_EQ(event.event_number, DAT_DTO_COMPLETION_EVENT);
  dto = event.event_data.dto_completion_event_data;
}

bool ConformanceTest::WaitWatermarkEvent(DAT_HANDLE object, DAT_COUNT reason, DAT_TIMEOUT timeout_us) {
  for (;;) {
    DAT_EVENT event{};
    if (Wait(async_evd_, event, timeout_us) != DAT_SUCCESS) return false;
    const DAT_ASYNCH_ERROR_EVENT_DATA& data = event.event_data.asynch_error_event_data;
    if (data.dat_handle == object && data.reason == reason) return true;
  }
}

bool ConformanceTest::WaitConnectionEvent(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER number, DAT_TIMEOUT timeout_us,
                                          DAT_EVD_HANDLE pump) {
  for (;;) {
    DAT_EVENT event{};
    if (Wait(evd, event, timeout_us, pump) != DAT_SUCCESS) return false;
    if (event.event_number == number) return true;
  }
}

void ConformanceTest::Connect(DAT_SRQ_HANDLE srq, Pair& pair, const ReceiverOptions& options) {
  pair.sender_ia = ia_;
  pair.sender_pz = pz_;
  if (options.sender_ia_name != nullptr) {
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ia_open(const_cast<char*>(options.sender_ia_name), 8, &async, &pair.sender_ia), DAT_SUCCESS);
    sender_ias_.push_back(pair.sender_ia);
    ASSERT_EQ(dat_pz_create(pair.sender_ia, &pair.sender_pz), DAT_SUCCESS);
  }
  pair.sender_request_evd = options.sender_request_evd != DAT_HANDLE_NULL ? options.sender_request_evd
                                                                         : MakeEvd(DAT_EVD_DTO_FLAG, 256, pair.sender_ia);
  pair.sender_connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG, 64, pair.sender_ia);
  pair.receiver_connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  pair.receiver_recv_evd = options.recv_evd != DAT_HANDLE_NULL ? options.recv_evd : MakeEvd(DAT_EVD_DTO_FLAG, 256);
  const DAT_EVD_HANDLE sender_recv_evd = MakeEvd(DAT_EVD_DTO_FLAG, 64, pair.sender_ia);
  const DAT_EVD_HANDLE cr_evd = MakeEvd(DAT_EVD_CR_FLAG);
  ASSERT_FALSE(HasFailure());

  DAT_EP_PARAM sender_param{};
  const DAT_EP_ATTR* sender_attr = nullptr;
  if (options.set_request_flags) {
    // Start from the provider's defaults for an EP; change only the request side.
    DAT_EP_HANDLE probe = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ep_create(pair.sender_ia, pair.sender_pz, sender_recv_evd, pair.sender_request_evd,
                            pair.sender_connect_evd, nullptr, &probe),
              DAT_SUCCESS);
    ASSERT_EQ(dat_ep_query(probe, DAT_EP_FIELD_ALL, &sender_param), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_free(probe), DAT_SUCCESS);
    sender_param.ep_attr.request_completion_flags = options.request_completion_flags;
    if (options.max_request_dtos > 0) sender_param.ep_attr.max_request_dtos = options.max_request_dtos;
    sender_attr = &sender_param.ep_attr;
  }
  ASSERT_EQ(dat_ep_create(pair.sender_ia, pair.sender_pz, sender_recv_evd, pair.sender_request_evd, pair.sender_connect_evd,
                          sender_attr, &pair.sender),
            DAT_SUCCESS);
  const DAT_PZ_HANDLE receiver_pz = options.receiver_pz != DAT_HANDLE_NULL ? options.receiver_pz : pz_;
  DAT_EP_PARAM param{};
  const DAT_EP_ATTR* attr = nullptr;
  if (options.set_recv_flags) {
    // Start from the provider's defaults for an EP; change only the receive completion flags.
    DAT_EP_HANDLE probe = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ep_create_with_srq(ia_, receiver_pz, pair.receiver_recv_evd, DAT_HANDLE_NULL, pair.receiver_connect_evd,
                                     srq, nullptr, &probe),
              DAT_SUCCESS);
    ASSERT_EQ(dat_ep_query(probe, DAT_EP_FIELD_ALL, &param), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_free(probe), DAT_SUCCESS);
    param.ep_attr.recv_completion_flags = options.recv_completion_flags;
    attr = &param.ep_attr;
  }
  const DAT_RETURN created = dat_ep_create_with_srq(ia_, receiver_pz, pair.receiver_recv_evd, DAT_HANDLE_NULL,
                                                    pair.receiver_connect_evd, srq, attr, &pair.receiver);
  ASSERT_EQ(created, DAT_SUCCESS) << DatReturnName(created);

  // A sender on its own IA may need moving (progress=poll) while the receiver waits, and the
  // other way round; the request and receive EVDs have no events yet, so pumping them loses nothing.
  tools::ConnectEnds ends;
  ends.server_ia = ia_;
  ends.server_ep = pair.receiver;
  ends.server_connect_evd = pair.receiver_connect_evd;
  ends.cr_evd = cr_evd;
  ends.client_ep = pair.sender;
  ends.client_connect_evd = pair.sender_connect_evd;
  if (pair.sender_ia != ia_) {
    ends.client_pump = pair.sender_request_evd;
    ends.server_pump = pair.receiver_recv_evd;
  }
  std::string error;
  ASSERT_TRUE(tools::ConnectPair(ends, kEventTimeoutUs, error)) << error;
}

void ConformanceTest::Disconnect(Pair& pair) {
  ASSERT_EQ(dat_ep_disconnect(pair.sender, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  ASSERT_TRUE(WaitConnectionEvent(pair.sender_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
  ASSERT_TRUE(WaitConnectionEvent(pair.receiver_connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
}

void ConformanceTest::Send(Pair& pair, std::size_t length, char fill, DAT_COMPLETION_FLAGS flags) {
  auto region = std::make_unique<Region>();
  ASSERT_EQ(Register(*region, length == 0 ? 1 : length, DAT_MEM_PRIV_LOCAL_READ_FLAG, pair.sender_pz, pair.sender_ia),
            DAT_SUCCESS);
  std::fill(region->bytes.begin(), region->bytes.end(), fill);
  DAT_LMR_TRIPLET iov = region->Triplet(0, length);
  DAT_DTO_COOKIE cookie;
  cookie.as_64 = static_cast<DAT_UINT64>(fill);
  const DAT_RETURN posted = dat_ep_post_send(pair.sender, length == 0 ? 0 : 1, length == 0 ? nullptr : &iov,
                                             cookie, flags);
  ASSERT_EQ(posted, DAT_SUCCESS) << DatReturnName(posted);
  send_regions_.push_back(std::move(region));
}

bool ConformanceTest::NextCompletionWasSignalled(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno,
                                                 DAT_DTO_COMPLETION_EVENT_DATA& dto) {
  DAT_EVENT event{};
  for (int i = 0; i < 10000 && dat_evd_dequeue(evd, &event) != DAT_SUCCESS; ++i) usleep(1000);
  EXPECT_EQ(event.event_number, DAT_DTO_COMPLETION_EVENT);
  dto = event.event_data.dto_completion_event_data;
  DAT_EVD_HANDLE triggered = DAT_HANDLE_NULL;
  return dat_cno_wait(cno, kQuietUs, &triggered) == DAT_SUCCESS;
}

void ConformanceTest::PostSlots(DAT_SRQ_HANDLE srq, SlotBuffers& slots, int count, std::size_t slot_size) {
  ASSERT_EQ(Register(slots.region, slot_size * count, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  slots.slot_size = slot_size;
  for (int i = 0; i < count; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  }
}

void ConformanceTest::WaitSends(Pair& pair, int count) {
  for (int i = 0; i < count; ++i) {
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(pair.sender_request_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
  }
}

}  // namespace softdat::conformance
