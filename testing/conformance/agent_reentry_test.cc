// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Consumer code that softdat calls — a CNO's proxy agent — may call straight back into softdat and
// free the very object whose event triggered it: the PSP of a connection request, the EP of a
// completion. softdat runs agents only where it holds no lock and uses no object an agent could
// free (base/deferred_calls.h): on the thread that posted the event, once it is about to leave
// softdat (default mode: between the progress thread's handlers; progress=poll: at the end of the
// consumer's own DAT call). Before, the agent ran inside the post, with the listener's or the
// connection's lock held, and each of these cases deadlocked.
#include <atomic>
#include <chrono>
#include <thread>

#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

using namespace std::chrono_literals;

using AgentReentry = ConformanceTest;

// What an agent did, read by the test thread.
struct AgentState {
  DAT_HANDLE target = DAT_HANDLE_NULL;  // the PSP or EP the agent frees
  std::atomic<bool> entered{false};
  std::atomic<bool> done{false};
  std::atomic<DAT_RETURN> result{DAT_SUCCESS};
};

void FreePsp(DAT_PVOID instance, DAT_EVD_HANDLE) {
  auto* state = static_cast<AgentState*>(instance);
  state->entered = true;
  state->result = dat_psp_free(static_cast<DAT_PSP_HANDLE>(state->target));
  state->done = true;
}

void FreeEp(DAT_PVOID instance, DAT_EVD_HANDLE) {
  auto* state = static_cast<AgentState*>(instance);
  state->entered = true;
  state->result = dat_ep_free(static_cast<DAT_EP_HANDLE>(state->target));
  state->done = true;
}

// Drives the IA from the test thread until the agent is done (under progress=poll only the
// consumer's own calls move it, and each is a safe point where deferred agents run), waiting on
// `pump`, an EVD that gets no events (a wait moves the whole IA). Bounded.
bool AwaitAgent(const AgentState& state, DAT_EVD_HANDLE pump) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!state.done && std::chrono::steady_clock::now() < deadline) {
    DAT_EVENT event{};
    DAT_COUNT more = 0;
    (void)dat_evd_wait(pump, 1000, 1, &event, &more);
  }
  return state.done;
}

TEST_F(AgentReentry, AnAgentMayFreeThePspWhoseConnectionRequestTriggeredIt) {
  AgentState state;
  DAT_CNO_HANDLE cno;
  ASSERT_EQ(dat_cno_create(ia_, DAT_OS_WAIT_PROXY_AGENT{&state, &FreePsp}, &cno), DAT_SUCCESS);
  DAT_EVD_HANDLE cr_evd;
  ASSERT_EQ(dat_evd_create(ia_, 8, cno, DAT_EVD_CR_FLAG, &cr_evd), DAT_SUCCESS);
  DAT_CONN_QUAL port = 0;
  DAT_PSP_HANDLE psp;
  ASSERT_EQ(dat_psp_create_any(ia_, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  state.target = psp;

  const DAT_EVD_HANDLE request_evd = MakeEvd(DAT_EVD_DTO_FLAG);
  const DAT_EVD_HANDLE recv_evd = MakeEvd(DAT_EVD_DTO_FLAG);
  const DAT_EVD_HANDLE connect_evd = MakeEvd(DAT_EVD_CONNECTION_FLAG);
  DAT_EP_HANDLE client;
  ASSERT_EQ(dat_ep_create(ia_, pz_, recv_evd, request_evd, connect_evd, nullptr, &client), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_connect(client, ia_attr_.ia_address_ptr, port, kEventTimeoutUs, 0, nullptr, DAT_QOS_BEST_EFFORT,
                           DAT_CONNECT_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_TRUE(AwaitAgent(state, MakeEvd(DAT_EVD_DTO_FLAG))) << (state.entered ? "the agent's dat_psp_free never returned"
                                                                 : "the agent never ran");
  EXPECT_EQ(state.result.load(), DAT_SUCCESS) << DatReturnName(state.result.load());

  // The request the PSP took stays the consumer's to answer.
  DAT_EVENT event{};
  ASSERT_EQ(Wait(cr_evd, event), DAT_SUCCESS);
  ASSERT_EQ(event.event_number, DAT_CONNECTION_REQUEST_EVENT);
  // With private data: on iWARP a reject without any reads as the provider's (NON_PEER_REJECTED).
  char reason = 'r';
  EXPECT_EQ(dat_cr_reject(event.event_data.cr_arrival_event_data.cr_handle, 1, &reason), DAT_SUCCESS);
  EXPECT_TRUE(WaitConnectionEvent(connect_evd, DAT_CONNECTION_EVENT_PEER_REJECTED));
  ASSERT_EQ(dat_evd_free(cr_evd), DAT_SUCCESS);
  EXPECT_EQ(dat_cno_free(cno), DAT_SUCCESS);
}

TEST_F(AgentReentry, AnAgentMayFreeTheEpWhoseCompletionTriggeredIt) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  Region buffers;
  ASSERT_EQ(Register(buffers, 8 * 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < 8; ++i) {
    DAT_LMR_TRIPLET iov = buffers.Triplet(64 * i, 64);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, DAT_DTO_COOKIE{}), DAT_SUCCESS);
  }
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));

  AgentState state;
  state.target = pair.sender;
  DAT_CNO_HANDLE cno;
  ASSERT_EQ(dat_cno_create(ia_, DAT_OS_WAIT_PROXY_AGENT{&state, &FreeEp}, &cno), DAT_SUCCESS);
  ASSERT_EQ(dat_evd_modify_cno(pair.sender_request_evd, cno), DAT_SUCCESS);
  // The Send's completion on the sender's request EVD triggers the CNO, whose agent frees the
  // sender's EP: in the middle of its own connection's progress.
  ASSERT_NO_FATAL_FAILURE(Send(pair, 16, 'a'));
  ASSERT_TRUE(AwaitAgent(state, MakeEvd(DAT_EVD_DTO_FLAG)))
      << (state.entered ? "the agent's dat_ep_free never returned" : "the agent never ran");
  EXPECT_EQ(state.result.load(), DAT_SUCCESS) << DatReturnName(state.result.load());

  // The receiver got the message, then the end of a connection whose peer EP is gone.
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  DAT_EVENT event{};
  ASSERT_EQ(Wait(pair.receiver_connect_evd, event), DAT_SUCCESS);
  EXPECT_TRUE(event.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
              event.event_number == DAT_CONNECTION_EVENT_BROKEN)
      << std::hex << event.event_number;
  ASSERT_EQ(dat_evd_modify_cno(pair.sender_request_evd, DAT_HANDLE_NULL), DAT_SUCCESS);
  EXPECT_EQ(dat_cno_free(cno), DAT_SUCCESS);
}

}  // namespace
}  // namespace softdat::conformance
