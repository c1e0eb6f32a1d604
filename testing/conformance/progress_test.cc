// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The progress guarantee (softdat(7), PROGRESS), with the peer in another process that posts and
// then sleeps without another DAT call (send_peer sleep): its Sends reach this side and its RDMA
// Write lands in this side's memory all the same. With a progress thread (the default) the Write
// lands while this side spins on memory and calls nothing, as on an RNIC; under progress=poll it
// lands at this side's next DAT call on the IA, whichever EVD that call names (here one that never
// gets an event).
#include <netinet/in.h>  // before dat_ib_extensions.h, which needs sockaddr_in6
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "testing/conformance/fixture.h"
#include "testing/conformance/peer_process.h"
#include "testing/deliberate_race.h"

namespace softdat::conformance {
namespace {

using namespace std::chrono_literals;

// Long enough for a loaded 2-core machine; the test fails, never skips, when it passes.
constexpr auto kBound = 30s;

TEST_F(ConformanceTest, SendsAndAWritePostedByAProcessThatThenSleepsReachThisSide) {
  constexpr int kMessages = 32;
  const DAT_EVD_HANDLE cr_evd = MakeEvd(DAT_EVD_CR_FLAG);
  const DAT_EVD_HANDLE recv_evd = MakeEvd(DAT_EVD_DTO_FLAG, 64);
  const DAT_EVD_HANDLE request_evd = MakeEvd(DAT_EVD_DTO_FLAG, 8);
  const DAT_EVD_HANDLE connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  const DAT_EVD_HANDLE pump = MakeEvd(DAT_EVD_DTO_FLAG);  // an EVD no event ever comes to
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.max_recv_dtos = kMessages;
  attr.max_request_dtos = 4;
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.max_rdma_read_iov = 1;
  attr.max_rdma_write_iov = 1;
  attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  DAT_EP_HANDLE ep;
  ASSERT_EQ(dat_ep_create(ia_, pz_, recv_evd, request_evd, connect_evd, &attr, &ep), DAT_SUCCESS);
  Region slots;
  ASSERT_EQ(Register(slots, 64 * kMessages, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < kMessages; ++i) {
    DAT_LMR_TRIPLET iov = slots.Triplet(64 * i, 64);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = i;
    ASSERT_EQ(dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  }
  // The Write's target, named to the peer in the accept's private data.
  std::vector<char> target(64, 0);
  DAT_REGION_DESCRIPTION region;
  region.for_va = target.data();
  DAT_LMR_HANDLE target_lmr;
  DAT_LMR_CONTEXT target_context;
  DAT_RMR_TRIPLET named{};
  DAT_VLEN registered_length;
  DAT_VADDR registered_address;
  ASSERT_EQ(dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, region, target.size(), pz_,
                           static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG),
                           DAT_VA_TYPE_VA, &target_lmr,
                           &target_context, &named.rmr_context, &registered_length, &registered_address),
            DAT_SUCCESS);
  named.virtual_address = reinterpret_cast<DAT_VADDR>(target.data());
  named.segment_length = static_cast<DAT_SEG_LENGTH>(target.size());

  DAT_CONN_QUAL port = 0;
  DAT_PSP_HANDLE psp;
  ASSERT_EQ(dat_psp_create_any(ia_, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  PeerProcess peer({IaAddressText(ia_attr_), std::to_string(port), std::to_string(kMessages), "sleep"});
  ASSERT_TRUE(peer.started());

  DAT_EVENT event{};
  ASSERT_EQ(Wait(cr_evd, event, 30'000'000), DAT_SUCCESS) << "the peer process never connected";
  ASSERT_EQ(event.event_number, DAT_CONNECTION_REQUEST_EVENT);
  ASSERT_EQ(dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, ep, sizeof named, &named), DAT_SUCCESS);
  ASSERT_TRUE(WaitConnectionEvent(connect_evd, DAT_CONNECTION_EVENT_ESTABLISHED));

  // The peer posts, says so, and sleeps. Reading its word is no DAT call: nothing here moves.
  ASSERT_TRUE(peer.ReadUntil("sleeping", kBound)) << peer.said();
  ASSERT_NE(peer.said().find("posted 32 messages and a Write, sleeping"), std::string::npos) << peer.said();

  // The Write: with a progress thread this side only reads its memory; under progress=poll each
  // pass also makes one DAT call on the IA, on an EVD unrelated to the connection.
  auto landed = [&] {
    // The provider writes this memory while it is read, as an RNIC's DMA would.
    softdat::testing::DeliberatelyRacyReads racing;
    return std::all_of(target.begin(), target.end(), [](char c) { return c == 0x5A; });
  };
  const auto write_by = std::chrono::steady_clock::now() + kBound;
  bool arrived = false;
  while (!(arrived = landed()) && std::chrono::steady_clock::now() < write_by) {
    if (ProgressIsPolled()) {
      DAT_EVENT none;
      (void)dat_evd_dequeue(pump, &none);
    }
  }
  EXPECT_TRUE(arrived) << (ProgressIsPolled() ? "no DAT call on the IA placed the peer's Write"
                                              : "nobody placed the peer's Write while this side spun on memory");
  // The Sends, every one, in order.
  for (int i = 0; i < kMessages; ++i) {
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(recv_evd, dto)) << "Send " << i << " of " << kMessages << " never came";
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(dto.user_cookie.as_64, static_cast<DAT_UINT64>(i));
    EXPECT_EQ(slots.bytes[64 * i], static_cast<char>(i));
  }
  EXPECT_EQ(dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
  (void)WaitConnectionEvent(connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED);
  EXPECT_EQ(dat_ep_free(ep), DAT_SUCCESS);
  EXPECT_EQ(dat_lmr_free(target_lmr), DAT_SUCCESS);
  EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
}

// A CNO's agent: counts its calls.
void CountCall(DAT_PVOID instance, DAT_EVD_HANDLE) { static_cast<std::atomic<int>*>(instance)->fetch_add(1); }

// An RDMA Write's completion reaches a thread asleep in dat_evd_wait on the request EVD though no
// thread calls DAT meanwhile, the next one reaches the EVD's CNO, whose agent is called while this
// thread calls nothing, and (over tcp) dat_ep_get_status sees a third one come. A provider may
// leave a completion nobody waits for to the next call that could see it, as a device leaves it
// in its CQ (softdat's same-host path does: a consumer spinning on memory between RDMA Writes is
// not preempted by a progress thread woken for each); never one somebody waits for. A Write, not
// a Send: the target answers nothing that would wake the initiator's progress anyway. Under
// progress=poll nothing moves without a call: the waiter spins, and the agent is not waited for.
TEST_F(ConformanceTest, AWritesCompletionReachesAThreadAsleepInAWaitAndACnosAgent) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  // The initiator on an IA of its own: the target's arrivals, which wake this IA's progress, do
  // not bring the initiator's completions along.
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair, {.sender_ia_name = SuiteIaName()}));
  const DAT_EVD_HANDLE request_evd = pair.sender_request_evd;
  Region target;
  const auto writable = static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG);
  ASSERT_EQ(Register(target, 16, writable), DAT_SUCCESS);
  Region source;
  ASSERT_EQ(Register(source, 8, DAT_MEM_PRIV_LOCAL_READ_FLAG, pair.sender_pz, pair.sender_ia), DAT_SUCCESS);
  std::fill(source.bytes.begin(), source.bytes.end(), 'w');
  auto write = [&](std::size_t at) {
    DAT_LMR_TRIPLET local = source.Triplet(0, 8);
    DAT_RMR_TRIPLET remote = target.Remote(at, 8);
    return dat_ep_post_rdma_write(pair.sender, 1, &local, Cookie(at), &remote, DAT_COMPLETION_DEFAULT_FLAG);
  };

  DAT_RETURN waited = DAT_INTERNAL_ERROR;
  DAT_EVENT event{};
  std::thread waiter([&] {
    DAT_COUNT nmore = 0;
    waited = dat_evd_wait(request_evd, 30'000'000, 1, &event, &nmore);
  });
  if (!ProgressIsPolled()) {
    // The Write goes once the waiter sleeps: it counts the sleep under the EVD's lock, then sleeps.
    DAT_UINT64 blocked = 0;
    const auto until = std::chrono::steady_clock::now() + kBound;
    while (blocked == 0 && std::chrono::steady_clock::now() < until) {
      EXPECT_EQ(dat_ib_query_counters(request_evd, DCNT_EVD_WAIT_BLOCKED, &blocked, DAT_FALSE), DAT_SUCCESS);
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_NE(blocked, 0u) << "the waiter never slept";
  }
  EXPECT_EQ(write(0), DAT_SUCCESS);
  waiter.join();
  EXPECT_EQ(waited, DAT_SUCCESS) << "the completion a sleeping waiter waited for never reached it";
  EXPECT_EQ(event.event_number, DAT_DTO_COMPLETION_EVENT);

  if (!ProgressIsPolled()) {
    // No waiter now, but a CNO: the second completion triggers it, and its agent runs.
    std::atomic<int> agent_calls{0};
    DAT_CNO_HANDLE cno;
    ASSERT_EQ(dat_cno_create(pair.sender_ia, DAT_OS_WAIT_PROXY_AGENT{&agent_calls, &CountCall}, &cno), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_modify_cno(request_evd, cno), DAT_SUCCESS);
    EXPECT_EQ(write(8), DAT_SUCCESS);
    const auto until = std::chrono::steady_clock::now() + kBound;
    while (agent_calls.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    EXPECT_GT(agent_calls.load(), 0) << "the CNO never heard of a completion while nobody called DAT";
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(request_evd, dto));
    EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
    // The agent's count lives in this block: no later event may call it.
    EXPECT_EQ(dat_evd_modify_cno(request_evd, DAT_HANDLE_NULL), DAT_SUCCESS);
    EXPECT_EQ(dat_cno_free(cno), DAT_SUCCESS);
  }
  if (SuiteIsTcp()) {
    // Nobody waits now: over tcp dat_ep_get_status still sees the next Write complete (the EP's
    // requests go idle), as a dequeue would, with no other call. On a device the completion waits
    // in the EVD's CQ until a dequeue or wait reaps it, as with OFED DAPL.
    EXPECT_EQ(write(0), DAT_SUCCESS);
    DAT_BOOLEAN request_idle = DAT_FALSE;
    const auto idle_by = std::chrono::steady_clock::now() + kBound;
    while (request_idle != DAT_TRUE && std::chrono::steady_clock::now() < idle_by) {
      DAT_EP_STATE state;
      DAT_BOOLEAN recv_idle;
      EXPECT_EQ(dat_ep_get_status(pair.sender, &state, &recv_idle, &request_idle), DAT_SUCCESS);
    }
    EXPECT_EQ(request_idle, DAT_TRUE) << "dat_ep_get_status never saw a completed Write's request go idle";
    DAT_DTO_COMPLETION_EVENT_DATA last{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(request_evd, last));
    EXPECT_EQ(last.status, DAT_DTO_SUCCESS);
  }
  ASSERT_NO_FATAL_FAILURE(Disconnect(pair));  // the rest goes with the IAs (TearDown)
  EXPECT_TRUE(std::all_of(target.bytes.begin(), target.bytes.begin() + (ProgressIsPolled() ? 8 : 16),
                          [](char c) { return c == 'w'; }));
}

}  // namespace
}  // namespace softdat::conformance
