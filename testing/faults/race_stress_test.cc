// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What consumers do at once, on several threads of one process, with peers dying: an SRQ server
// accepts connections on a PSP that is freed and created again (sometimes by a CNO proxy agent on
// its CR EVD), reaps and reposts SRQ buffers while another thread resizes the SRQ and re-arms its
// low watermark, and frees each EP when its connection ends; client threads connect, post Sends
// and reap them, and end each connection gracefully, abruptly, or by freeing the EP under it (the
// peer dies). Bounded in rounds and time; every DTO is in the ledger, which must come out exact:
// each completes once, no corrupt byte is delivered, and the SRQ's counts add up. Run plain, and
// under ASan and TSan in CI (tools/dev test), in both progress modes.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "testing/dat_conf.h"
#include "testing/ledger/dto_ledger.h"
#include "testing/ledger/message.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kClients = 3;
constexpr int kSrqBuffers = 32;
constexpr std::size_t kMessage = 256;
constexpr int kSendsPerConnection = 24;
constexpr DAT_TIMEOUT kStepUs = 20'000;  // each wait is short: threads look at `stop` often
constexpr auto kRunFor = 4s;
constexpr int kMaxRoundsPerClient = 40;

// A registered region of `slots` message slots.
struct Slots {
  std::vector<std::uint8_t> bytes;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT context = 0;
  DAT_LMR_TRIPLET Slot(std::size_t index) const {
    DAT_LMR_TRIPLET triplet{};
    triplet.lmr_context = context;
    triplet.virtual_address = reinterpret_cast<DAT_VADDR>(bytes.data() + index * kMessage);
    triplet.segment_length = kMessage;
    return triplet;
  }
  std::span<std::uint8_t> Span(std::size_t index) { return {bytes.data() + index * kMessage, kMessage}; }
};

bool Register(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, Slots& slots, std::size_t count) {
  slots.bytes.assign(count * kMessage, 0);
  DAT_REGION_DESCRIPTION region;
  region.for_va = slots.bytes.data();
  DAT_RMR_CONTEXT rmr = 0;
  DAT_VLEN length = 0;
  DAT_VADDR address = 0;
  return dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, slots.bytes.size(), pz, DAT_MEM_PRIV_ALL_FLAG,
                        DAT_VA_TYPE_VA, &slots.lmr, &slots.context, &rmr, &length, &address) == DAT_SUCCESS;
}

DAT_EVD_HANDLE MakeEvd(DAT_IA_HANDLE ia, DAT_EVD_FLAGS flags, DAT_COUNT qlen, DAT_CNO_HANDLE cno = DAT_HANDLE_NULL) {
  DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
  EXPECT_EQ(dat_evd_create(ia, qlen, cno, flags, &evd), DAT_SUCCESS);
  return evd;
}

class RaceStress : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ia_open(const_cast<char*>(GetParam()), 64, &async, &server_ia_), DAT_SUCCESS);
    async_evd_ = async;
    async = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ia_open(const_cast<char*>(GetParam()), 64, &async, &client_ia_), DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(server_ia_, &server_pz_), DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(client_ia_, &client_pz_), DAT_SUCCESS);
    DAT_IA_ATTR attr{};
    ASSERT_EQ(dat_ia_query(server_ia_, nullptr, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0, nullptr), DAT_SUCCESS);
    std::memcpy(&address_, attr.ia_address_ptr, sizeof address_);
  }
  void TearDown() override {
    if (client_ia_ != DAT_HANDLE_NULL) {
      EXPECT_EQ(dat_ia_close(client_ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }
    if (server_ia_ != DAT_HANDLE_NULL) {
      EXPECT_EQ(dat_ia_close(server_ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }
  }

  DAT_IA_HANDLE server_ia_ = DAT_HANDLE_NULL;
  DAT_IA_HANDLE client_ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE server_pz_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE client_pz_ = DAT_HANDLE_NULL;
  sockaddr_in address_{};
};

// The server's PSP, which the accepting thread replaces now and then and the CR EVD's CNO agent
// frees when asked (freeing the PSP whose request triggered it, from consumer code softdat calls).
struct PspState {
  std::mutex mutex;
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  std::atomic<DAT_CONN_QUAL> port{0};
  std::atomic<bool> agent_frees{false};
  std::atomic<int> agent_freed{0};
  std::atomic<int> agent_errors{0};

  static void Agent(DAT_PVOID instance, DAT_EVD_HANDLE) {
    auto* self = static_cast<PspState*>(instance);
    if (!self->agent_frees.exchange(false)) return;
    std::lock_guard lock(self->mutex);
    if (self->psp == DAT_HANDLE_NULL) return;
    if (dat_psp_free(self->psp) == DAT_SUCCESS) {
      self->psp = DAT_HANDLE_NULL;
      self->port = 0;
      ++self->agent_freed;
    } else {
      ++self->agent_errors;
    }
  }
};

TEST_P(RaceStress, ConsumersRacingWithPeersDyingKeepTheLedgerExact) {
  DtoLedger ledger;
  std::atomic<bool> stop{false};
  const auto deadline = std::chrono::steady_clock::now() + kRunFor;

  // Server: an SRQ every EP shares, its buffers in the ledger.
  DAT_SRQ_ATTR srq_attr{};
  srq_attr.max_recv_dtos = kSrqBuffers;
  srq_attr.max_recv_iov = 1;
  srq_attr.low_watermark = DAT_SRQ_LW_DEFAULT;
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_srq_create(server_ia_, server_pz_, &srq_attr, &srq), DAT_SUCCESS);
  Slots server_slots;
  ASSERT_TRUE(Register(server_ia_, server_pz_, server_slots, 2 * kSrqBuffers));
  auto post_slot = [&](std::uint32_t slot) {
    const DAT_DTO_COOKIE cookie = ledger.Post(DtoKind::kSrqRecv, kMessage, slot);
    DAT_LMR_TRIPLET iov = server_slots.Slot(slot);
    if (dat_srq_post_recv(srq, 1, &iov, cookie) != DAT_SUCCESS) {
      ledger.Unpost(cookie);
      return false;
    }
    return true;
  };
  for (std::uint32_t slot = 0; slot < kSrqBuffers; ++slot) ASSERT_TRUE(post_slot(slot));

  PspState psp_state;
  DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_cno_create(server_ia_, DAT_OS_WAIT_PROXY_AGENT{&psp_state, &PspState::Agent}, &cno), DAT_SUCCESS);
  const DAT_EVD_HANDLE cr_evd = MakeEvd(server_ia_, DAT_EVD_CR_FLAG, 64, cno);
  const DAT_EVD_HANDLE recv_evd = MakeEvd(server_ia_, DAT_EVD_DTO_FLAG, 1024);
  const DAT_EVD_HANDLE server_connect_evd = MakeEvd(server_ia_, DAT_EVD_CONNECTION_FLAG, 256);
  auto new_psp = [&] {
    std::lock_guard lock(psp_state.mutex);
    if (psp_state.psp != DAT_HANDLE_NULL) return;
    DAT_CONN_QUAL port = 0;
    if (dat_psp_create_any(server_ia_, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp_state.psp) == DAT_SUCCESS)
      psp_state.port = port;
  };
  new_psp();
  ASSERT_NE(psp_state.port.load(), 0u);

  std::vector<std::thread> threads;
  std::atomic<int> established{0}, accepted{0}, server_ends{0}, psp_cycles{0}, resizes{0};

  // Accepting: one EP with the SRQ per request; the PSP replaced every few connections, and now
  // and then freed by the agent instead (the next request's CNO trigger).
  // The server's EPs: freed when their connection ends, but never while the accepting thread is
  // still in dat_cr_accept on one (an end can come that early: a client dying during setup).
  struct ServerEp {
    DAT_EP_HANDLE ep;
    bool accepted;
    bool ended;
  };
  std::mutex server_eps_mutex;
  std::vector<ServerEp> server_eps;
  threads.emplace_back([&] {
    while (!stop) {
      DAT_EVENT event{};
      DAT_COUNT more = 0;
      if (dat_evd_wait(cr_evd, kStepUs, 1, &event, &more) != DAT_SUCCESS) {
        new_psp();  // the agent may have freed it
        continue;
      }
      if (event.event_number != DAT_CONNECTION_REQUEST_EVENT) {
        ledger.Violation("CR EVD: event " + std::to_string(event.event_number));
        continue;
      }
      DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
      if (dat_ep_create_with_srq(server_ia_, server_pz_, recv_evd, DAT_HANDLE_NULL, server_connect_evd, srq, nullptr,
                                 &ep) != DAT_SUCCESS) {
        ledger.Violation("dat_ep_create_with_srq failed");
        (void)dat_cr_reject(event.event_data.cr_arrival_event_data.cr_handle, 0, nullptr);
        continue;
      }
      {
        std::lock_guard lock(server_eps_mutex);
        server_eps.push_back(ServerEp{ep, false, false});
      }
      if (dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, ep, 0, nullptr) != DAT_SUCCESS)
        ledger.Violation("dat_cr_accept failed");
      {
        std::lock_guard lock(server_eps_mutex);
        for (auto it = server_eps.begin(); it != server_eps.end(); ++it) {
          if (it->ep != ep) continue;
          it->accepted = true;
          if (it->ended) {
            if (dat_ep_free(ep) != DAT_SUCCESS) ledger.Violation("dat_ep_free of an ended server EP failed");
            server_eps.erase(it);
          }
          break;
        }
      }
      const int n = ++accepted;
      if (n % 5 == 0) {
        std::lock_guard lock(psp_state.mutex);
        if (psp_state.psp != DAT_HANDLE_NULL && dat_psp_free(psp_state.psp) == DAT_SUCCESS) {
          psp_state.psp = DAT_HANDLE_NULL;
          psp_state.port = 0;
          ++psp_cycles;
        }
      } else if (n % 7 == 0) {
        psp_state.agent_frees = true;  // the agent frees it when the next request triggers the CNO
      }
      new_psp();
    }
  });

  // Reaping the SRQ: every completion checked and its slot posted again.
  threads.emplace_back([&] {
    while (!stop) {
      DAT_EVENT event{};
      DAT_COUNT more = 0;
      if (dat_evd_wait(recv_evd, kStepUs, 1, &event, &more) != DAT_SUCCESS) continue;
      if (event.event_number != DAT_DTO_COMPLETION_EVENT) {
        ledger.Violation("recv EVD: event " + std::to_string(event.event_number));
        continue;
      }
      const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
      std::uint32_t slot = 0;
      if (!ledger.Complete(dto, nullptr, &slot)) continue;
      if (dto.status == DAT_DTO_SUCCESS) {
        MessageHeader header;
        ledger.Delivered(CheckMessage(server_slots.Span(slot), dto.transfered_length, header) == MessageCheck::kOk,
                         "SRQ slot " + std::to_string(slot));
      }
      (void)post_slot(slot);
    }
  });

  // Changing the SRQ under the traffic: resize within what is outstanding, and the low watermark
  // armed again; the async EVD reaped.
  threads.emplace_back([&] {
    std::minstd_rand random(7);
    while (!stop) {
      DAT_EVENT event{};
      while (dat_evd_dequeue(async_evd_, &event) == DAT_SUCCESS) {
      }
      const DAT_COUNT size = kSrqBuffers + static_cast<DAT_COUNT>(random() % kSrqBuffers);
      const DAT_RETURN resized = dat_srq_resize(srq, size);
      if (resized == DAT_SUCCESS) ++resizes;
      (void)dat_srq_set_lw(srq, static_cast<DAT_COUNT>(1 + random() % 8));
      std::this_thread::sleep_for(2ms);
    }
  });

  // Connection ends on the server: each EP is freed when its connection is over.
  threads.emplace_back([&] {
    while (!stop) {
      DAT_EVENT event{};
      DAT_COUNT more = 0;
      if (dat_evd_wait(server_connect_evd, kStepUs, 1, &event, &more) != DAT_SUCCESS) continue;
      const DAT_EP_HANDLE ep = event.event_data.connect_event_data.ep_handle;
      if (event.event_number == DAT_CONNECTION_EVENT_ESTABLISHED) {
        ++established;
        if (established % 3 == 0) (void)dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG);  // the server ends one
        continue;
      }
      ++server_ends;
      std::lock_guard lock(server_eps_mutex);
      for (auto it = server_eps.begin(); it != server_eps.end(); ++it) {
        if (it->ep != ep) continue;
        if (!it->accepted) {
          it->ended = true;  // freed by the accepting thread once its dat_cr_accept returned
          break;
        }
        if (dat_ep_free(ep) != DAT_SUCCESS) ledger.Violation("dat_ep_free of an ended server EP failed");
        server_eps.erase(it);
        break;
      }
    }
  });

  // Clients: connect, send, end the connection one of three ways, again.
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      std::minstd_rand random(100 + c);
      Slots slots;
      if (!Register(client_ia_, client_pz_, slots, kSendsPerConnection)) {
        ledger.Violation("client registration failed");
        return;
      }
      const DAT_EVD_HANDLE request_evd = MakeEvd(client_ia_, DAT_EVD_DTO_FLAG, 2 * kSendsPerConnection);
      const DAT_EVD_HANDLE recv_evd_c = MakeEvd(client_ia_, DAT_EVD_DTO_FLAG, 8);
      const DAT_EVD_HANDLE connect_evd = MakeEvd(client_ia_, DAT_EVD_CONNECTION_FLAG, 8);
      std::uint64_t sequence = 0;
      for (int round = 0; round < kMaxRoundsPerClient && !stop && std::chrono::steady_clock::now() < deadline;
           ++round) {
        const DAT_CONN_QUAL port = psp_state.port;
        if (port == 0) {
          std::this_thread::sleep_for(1ms);
          continue;
        }
        DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
        if (dat_ep_create(client_ia_, client_pz_, recv_evd_c, request_evd, connect_evd, nullptr, &ep) != DAT_SUCCESS) {
          ledger.Violation("dat_ep_create failed");
          break;
        }
        if (dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&address_), port, 2'000'000, 0, nullptr,
                           DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG) != DAT_SUCCESS) {
          (void)dat_ep_free(ep);
          continue;
        }
        DAT_EVENT event{};
        DAT_COUNT more = 0;
        bool connected = false;
        for (int i = 0; i < 200 && !connected; ++i) {
          if (dat_evd_wait(connect_evd, kStepUs, 1, &event, &more) != DAT_SUCCESS) continue;
          connected = event.event_number == DAT_CONNECTION_EVENT_ESTABLISHED;
          if (!connected) break;  // rejected or unreachable: the PSP went away meanwhile
        }
        if (!connected) {
          (void)dat_ep_free(ep);
          continue;
        }
        int posted = 0;
        const int sends = 1 + static_cast<int>(random() % kSendsPerConnection);
        for (int i = 0; i < sends; ++i) {
          FillMessage(slots.Span(i), static_cast<std::uint32_t>(c), ++sequence);
          const DAT_DTO_COOKIE cookie = ledger.Post(DtoKind::kSend, kMessage, static_cast<std::uint32_t>(i));
          DAT_LMR_TRIPLET iov = slots.Slot(i);
          if (dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS) {
            ledger.Unpost(cookie);  // the connection ended under it
            break;
          }
          ++posted;
        }
        const int ending = static_cast<int>(random() % 3);
        if (ending == 0) {
          (void)dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG);
        } else if (ending == 1) {
          (void)dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG);
        }
        // Reap this connection's Sends (each completes or is flushed), and for a disconnect its
        // end; a dying peer (ending 2) frees the EP at once, which flushes what is outstanding.
        int reaped = 0;
        if (ending != 2) {
          bool ended = false;
          for (int i = 0; i < 400 && (reaped < posted || !ended); ++i) {
            if (dat_evd_wait(request_evd, 1000, 1, &event, &more) == DAT_SUCCESS) {
              if (ledger.Complete(event.event_data.dto_completion_event_data)) ++reaped;
            }
            if (dat_evd_dequeue(connect_evd, &event) == DAT_SUCCESS) ended = true;
          }
          if (reaped < posted || !ended) ledger.Violation("a client connection's Sends or end never came");
        }
        if (dat_ep_free(ep) != DAT_SUCCESS) ledger.Violation("dat_ep_free of a client EP failed");
        // What the free flushed (a dying peer's Sends) is reaped before the next connection.
        while (dat_evd_dequeue(request_evd, &event) == DAT_SUCCESS)
          (void)ledger.Complete(event.event_data.dto_completion_event_data);
        while (dat_evd_dequeue(connect_evd, &event) == DAT_SUCCESS) {
        }
      }
    });
  }

  while (std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(50ms);
  stop = true;
  for (std::thread& thread : threads) thread.join();

  // Quiet: the server's connections end (a connected one is closed; one whose client vanished in
  // setup ends on its own once progress sees it), their EPs go, what the ends flushed is reaped,
  // then the SRQ is counted.
  for (const ServerEp& server : server_eps) (void)dat_ep_disconnect(server.ep, DAT_CLOSE_ABRUPT_FLAG);
  for (const auto quiet_by = std::chrono::steady_clock::now() + 15s;
       !server_eps.empty() && std::chrono::steady_clock::now() < quiet_by;) {
    DAT_EVENT ended{};
    DAT_COUNT more = 0;
    if (dat_evd_wait(server_connect_evd, kStepUs, 1, &ended, &more) != DAT_SUCCESS ||
        ended.event_number == DAT_CONNECTION_EVENT_ESTABLISHED)
      continue;
    std::erase_if(server_eps, [&](const ServerEp& server) {
      if (server.ep != ended.event_data.connect_event_data.ep_handle) return false;
      EXPECT_EQ(dat_ep_free(server.ep), DAT_SUCCESS);
      return true;
    });
  }
  EXPECT_TRUE(server_eps.empty()) << server_eps.size() << " server connections never ended";
  DAT_EVENT event{};
  while (dat_evd_dequeue(recv_evd, &event) == DAT_SUCCESS) {
    if (event.event_number == DAT_DTO_COMPLETION_EVENT)
      (void)ledger.Complete(event.event_data.dto_completion_event_data);
  }
  ledger.CheckSrq(srq, 0);
  const std::vector<std::string> violations = ledger.Violations(true);
  std::string all;
  for (const std::string& v : violations) all += v + "\n";
  EXPECT_TRUE(violations.empty()) << all << ledger.Summary();
  EXPECT_EQ(psp_state.agent_errors.load(), 0) << "the agent's dat_psp_free failed";
  EXPECT_GT(established.load(), 0) << "no connection was established";
  std::printf("race stress (%s): %d connections, %d ended at the server, %d PSPs replaced, %d freed by the agent, "
              "%d SRQ resizes; %s\n",
              GetParam(), established.load(), server_ends.load(), psp_cycles.load(), psp_state.agent_freed.load(),
              resizes.load(), ledger.Summary().c_str());
  {
    std::lock_guard lock(psp_state.mutex);
    if (psp_state.psp != DAT_HANDLE_NULL) {
      EXPECT_EQ(dat_psp_free(psp_state.psp), DAT_SUCCESS);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ProgressModes, RaceStress, ::testing::Values("stress", "stress-poll"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "stress" ? "Thread" : "Poll";
                         });

}  // namespace
}  // namespace softdat::testing

// libdat2 reads its dat.conf when it loads: the file is written, then the test runs again.
int main(int argc, char** argv) {
  constexpr const char* kMarker = "SOFTDAT_RACE_STRESS_DAT_CONF_INSTALLED";
  if (std::getenv(kMarker) == nullptr) {
    softdat::testing::InstallDatConf({{"stress", "tcp 127.0.0.1"}, {"stress-poll", "tcp 127.0.0.1 progress=poll"}});
    setenv(kMarker, "1", 1);
    execv("/proc/self/exe", argv);
    std::perror("race_stress_test: re-exec failed");
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
