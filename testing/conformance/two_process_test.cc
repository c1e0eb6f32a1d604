// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The Send -> SRQ receive scenario with the peer in another process (send_peer, started through
// testing/subprocess.h and bounded in time): what a real consumer pair does, each process with its
// own libdat2 and softdat instance.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "testing/conformance/fixture.h"
#include "testing/conformance/peer_process.h"
#include "testing/dat_conf.h"
#include "testing/subprocess.h"

namespace softdat::conformance {
namespace {

using namespace std::chrono_literals;

class TwoProcesses : public ConformanceTest {
 protected:
  // Accepts the peer process's connection request on `ep` and waits until it is established.
  void AcceptThePeer(DAT_EVD_HANDLE cr_evd, DAT_EP_HANDLE ep, DAT_EVD_HANDLE connect_evd) {
    DAT_EVENT event{};
    ASSERT_EQ(Wait(cr_evd, event, 30'000'000), DAT_SUCCESS) << "the peer process never connected";
    ASSERT_EQ(event.event_number, DAT_CONNECTION_REQUEST_EVENT);
    ASSERT_EQ(dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, ep, 0, nullptr), DAT_SUCCESS);
    ASSERT_TRUE(WaitConnectionEvent(connect_evd, DAT_CONNECTION_EVENT_ESTABLISHED));
  }
};

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
  const std::string address = IaAddressText(ia_attr_);
  testing::SubprocessResult result;
  std::thread child([&] {
    // At info the peer's tcp IA says which path its connection took (local_path.cc, connection_setup.cc).
    result = testing::RunSubprocess({peer, address, std::to_string(port), std::to_string(kMessages)},
                                    {{"SOFTDAT_LOG", "warn,tcp:info"}}, 60s);
  });
  struct Joiner {
    std::thread& thread;
    ~Joiner() {
      if (thread.joinable()) thread.join();  // on an early failure: the time bound ends the peer
    }
  } joiner{child};

  ASSERT_NO_FATAL_FAILURE(AcceptThePeer(cr_evd, ep, connect_evd));
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
  if (SuiteIsTcp()) {
    // Two softdat IAs of one host and namespace: shared memory with shm=auto (the _shm variants),
    // iWARP over TCP with shm=off.
    const char* shm = std::getenv("SOFTDAT_SHM");
    const bool local = shm != nullptr && std::string(shm) == "auto";
    EXPECT_NE(result.output.find(local ? ": shared memory (" : ": over TCP"), std::string::npos)
        << "the connection did not take the " << (local ? "shared-memory" : "TCP") << " path";
  }
  EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

// Regression: a connection whose messages wait for SRQ buffers (receiver not ready: the server
// got 2 of 20 Sends and posts no more buffers) never noticed that its peer died: the socket was
// taken out of the poll set while held, so the peer's FIN went unread and the EP stayed CONNECTED
// for good, in both progress modes. It ends (BROKEN: the waiting messages are discarded; over TCP
// after the close linger, since a dead peer's FIN looks like a graceful one), nothing more is
// delivered, and the SRQ keeps its buffers.
TEST_F(TwoProcesses, APeerKilledWhileItsMessagesWaitForSrqBuffersEndsTheConnection) {
  // On a device a Send completes only once the peer took it (RC), so the peer cannot finish its
  // Sends while they wait for buffers: testing/vm/peer_death pins the device's case.
  if (ProviderSays("SOFTDAT_TRANSPORT", "verbs"))
    GTEST_SKIP() << "a device's Sends wait for the receiver's buffers (testing/vm/guest_peer_death.sh)";
  constexpr int kBuffers = 2;
  constexpr int kMessages = 20;
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(kBuffers + 2, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = 64;
  ASSERT_EQ(Register(slots.region, 64 * (kBuffers + 2), DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < kBuffers; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, DAT_DTO_COOKIE{}), DAT_SUCCESS);
  }
  const DAT_EVD_HANDLE cr_evd = MakeEvd(DAT_EVD_CR_FLAG);
  const DAT_EVD_HANDLE recv_evd = MakeEvd(DAT_EVD_DTO_FLAG, 64);
  const DAT_EVD_HANDLE connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  DAT_EP_HANDLE ep;
  ASSERT_EQ(dat_ep_create_with_srq(ia_, pz_, recv_evd, DAT_HANDLE_NULL, connect_evd, srq, nullptr, &ep), DAT_SUCCESS);
  DAT_CONN_QUAL port = 0;
  DAT_PSP_HANDLE psp;
  ASSERT_EQ(dat_psp_create_any(ia_, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);

  PeerProcess peer({IaAddressText(ia_attr_), std::to_string(port), std::to_string(kMessages), "hold"});
  ASSERT_TRUE(peer.started());

  ASSERT_NO_FATAL_FAILURE(AcceptThePeer(cr_evd, ep, connect_evd));
  DAT_EVENT event{};
  for (int i = 0; i < kBuffers; ++i) {
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(recv_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
  }
  // The peer's Sends all completed on its side (they are in the sockets): it says so, then it is
  // killed, while 18 of them wait here for buffers that never come. The test keeps moving the IA
  // meanwhile (progress=poll moves only inside its calls), on an EVD that gets no events.
  const DAT_EVD_HANDLE pump = MakeEvd(DAT_EVD_DTO_FLAG);
  ASSERT_TRUE(peer.ReadUntil("holding", 30s, [&] { Pump(pump); })) << "the peer did not finish its Sends: " << peer.said();
  ASSERT_EQ(kill(-peer.pid(), SIGKILL), 0);

  ASSERT_EQ(Wait(connect_evd, event), DAT_SUCCESS) << "the EP never heard that its peer died";
  EXPECT_TRUE(event.event_number == DAT_CONNECTION_EVENT_BROKEN ||
              event.event_number == DAT_CONNECTION_EVENT_DISCONNECTED)
      << std::hex << event.event_number;
  DAT_EP_STATE state{};
  ASSERT_EQ(dat_ep_get_status(ep, &state, nullptr, nullptr), DAT_SUCCESS);
  EXPECT_EQ(state, DAT_EP_STATE_DISCONNECTED);
  // Nothing of the waiting messages arrives after the end, even with buffers to take.
  for (int i = kBuffers; i < kBuffers + 2; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, DAT_DTO_COOKIE{}), DAT_SUCCESS);
  }
  EXPECT_EQ(DAT_GET_TYPE(Wait(recv_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED);
  const DAT_SRQ_PARAM srq_param = QuerySrq(srq);
  EXPECT_EQ(srq_param.available_dto_count, 2) << "the ended connection took buffers";
  EXPECT_EQ(dat_ep_free(ep), DAT_SUCCESS);
  EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::conformance
