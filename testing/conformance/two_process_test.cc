// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The Send -> SRQ receive scenario with the peer in another process (send_peer, started through
// testing/subprocess.h and bounded in time): what a real consumer pair does, each process with its
// own libdat2 and softdat instance.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>
#include <thread>

#include "testing/conformance/fixture.h"
#include "testing/dat_conf.h"
#include "testing/subprocess.h"

namespace softdat::conformance {
namespace {

using namespace std::chrono_literals;

using TwoProcesses = ConformanceTest;

TEST_F(TwoProcesses, SendFromAnotherProcessLandsInSrqBuffersInSendOrder) {
  constexpr int kMessages = 32;
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(kMessages, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = 64;
  ASSERT_EQ(Register(slots.region, 64 * kMessages, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < kMessages; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = i;
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, cookie), DAT_SUCCESS);
  }
  const DAT_EVD_HANDLE cr_evd = MakeEvd(DAT_EVD_CR_FLAG);
  const DAT_EVD_HANDLE recv_evd = MakeEvd(DAT_EVD_DTO_FLAG, 256);
  const DAT_EVD_HANDLE connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  DAT_EP_HANDLE ep;
  ASSERT_EQ(dat_ep_create_with_srq(ia_, pz_, recv_evd, DAT_HANDLE_NULL, connect_evd, srq, nullptr, &ep),
            DAT_SUCCESS);
  DAT_CONN_QUAL port = 0;
  DAT_PSP_HANDLE psp;
  ASSERT_EQ(dat_psp_create_any(ia_, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);

  const std::string peer = testing::RunfilePath("testing/conformance/send_peer");
  // The IA's own address: 127.0.0.1 for softdat-tcp, the device's for a verbs IA.
  char address[INET_ADDRSTRLEN] = {};
  ASSERT_NE(inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(ia_attr_.ia_address_ptr)->sin_addr, address,
                      sizeof address),
            nullptr);
  testing::SubprocessResult result;
  std::thread child([&] {
    result = testing::RunSubprocess({peer, address, std::to_string(port), std::to_string(kMessages)}, {}, 60s);
  });
  struct Joiner {
    std::thread& thread;
    ~Joiner() {
      if (thread.joinable()) thread.join();  // on an early failure: the time bound ends the peer
    }
  } joiner{child};

  DAT_EVENT event{};
  ASSERT_EQ(Wait(cr_evd, event, 30'000'000), DAT_SUCCESS) << "the peer process never connected";
  ASSERT_EQ(event.event_number, DAT_CONNECTION_REQUEST_EVENT);
  ASSERT_EQ(dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, ep, 0, nullptr), DAT_SUCCESS);
  ASSERT_TRUE(WaitConnectionEvent(connect_evd, DAT_CONNECTION_EVENT_ESTABLISHED));
  for (int i = 0; i < kMessages; ++i) {
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(recv_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(dto.ep_handle, ep);
    EXPECT_EQ(dto.transfered_length, 64u);
    EXPECT_EQ(slots.region.bytes[dto.user_cookie.as_64 * 64], static_cast<char>(i)) << "completion " << i;
  }
  ASSERT_EQ(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
  EXPECT_TRUE(WaitConnectionEvent(connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED));
  child.join();
  SCOPED_TRACE("peer output:\n" + result.output);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, 0);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::conformance
