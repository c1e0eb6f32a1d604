// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Resources running out, through the stock registry and the DAT API: each must be a clear
// DAT_RETURN or DAT event and a log line at the default level, never a crash, a hang or a spin.
//  - An EVD too small for the completions it gets: DAT_ASYNC_ERROR_EVD_OVERFLOW naming it, a
//    warning, and no SRQ buffer lost with the dropped completions; the EP goes on working.
//  - The descriptor limit reached while connections arrive: they wait in the backlog (one
//    warning, not one per retry), and are served once descriptors are free.
//  - No descriptor for an active connection: DAT_CONNECTION_EVENT_UNREACHABLE and a line saying why.
//  - No descriptor for the IA itself: dat_ia_open answers DAT_INSUFFICIENT_RESOURCES.
// (RLIMIT_MEMLOCK too low for a device registration is the verbs transport's: the guest suite,
// testing/faults/guest_faults_suite.sh.)
#include <arpa/inet.h>
#include <dat2/udat.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "testing/faults/peer_process.h"
#include "testing/ledger/process_resources.h"
#include "tools/dat_connect.h"

namespace softdat::testing::faults {
namespace {

using namespace std::chrono_literals;

// What `call` writes to stderr (fd 2), through GoogleTest's own capture.
std::string StderrOf(const std::function<void()>& call) {
  ::testing::internal::CaptureStderr();
  call();
  return ::testing::internal::GetCapturedStderr();
}

std::size_t CountLines(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

class EvdOverflow : public ::testing::Test {
 protected:
  static constexpr int kSrqBuffers = 64;
  static constexpr int kMessages = 32;
  static constexpr DAT_TIMEOUT kBoundUs = 10'000'000;

  void SetUp() override {
    before_ = SampleProcessResources();
    ASSERT_EQ(dat_ia_open(const_cast<char*>("softdat-tcp"), 16, &async_evd_, &ia_), DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(ia_, &pz_), DAT_SUCCESS);
    for (DAT_EVD_HANDLE* evd : {&cr_evd_, &server_connect_evd_, &client_connect_evd_})
      ASSERT_EQ(dat_evd_create(ia_, 8, DAT_HANDLE_NULL,
                               evd == &cr_evd_ ? DAT_EVD_CR_FLAG : DAT_EVD_CONNECTION_FLAG, evd),
                DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(ia_, 4, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &small_recv_evd_), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(ia_, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &send_evd_), DAT_SUCCESS);
    DAT_SRQ_ATTR srq_attr{};
    srq_attr.max_recv_dtos = kSrqBuffers;
    srq_attr.max_recv_iov = 1;
    ASSERT_EQ(dat_srq_create(ia_, pz_, &srq_attr, &srq_), DAT_SUCCESS);
    bytes_.assign(64 * (kSrqBuffers + kMessages + 8), 0);
    DAT_REGION_DESCRIPTION region;
    region.for_va = bytes_.data();
    DAT_RMR_CONTEXT rmr;
    DAT_VLEN length;
    DAT_VADDR address;
    ASSERT_EQ(dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, region, bytes_.size(), pz_, DAT_MEM_PRIV_ALL_FLAG,
                             DAT_VA_TYPE_VA, &lmr_, &context_, &rmr, &length, &address),
              DAT_SUCCESS);
    for (int i = 0; i < kSrqBuffers; ++i) {
      DAT_LMR_TRIPLET iov = Slot(i);
      DAT_DTO_COOKIE cookie;
      cookie.as_64 = i;
      ASSERT_EQ(dat_srq_post_recv(srq_, 1, &iov, cookie), DAT_SUCCESS);
    }
    ASSERT_EQ(dat_ep_create_with_srq(ia_, pz_, small_recv_evd_, send_evd_, server_connect_evd_, srq_, nullptr,
                                     &server_),
              DAT_SUCCESS);
    DAT_EP_ATTR attr{};
    attr.service_type = DAT_SERVICE_TYPE_RC;
    attr.max_message_size = 4096;
    attr.max_rdma_size = 4096;
    attr.qos = DAT_QOS_BEST_EFFORT;
    attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    attr.max_recv_dtos = 4;
    attr.max_request_dtos = kMessages + 8;
    attr.max_recv_iov = 1;
    attr.max_request_iov = 1;
    attr.srq_soft_hw = DAT_HW_DEFAULT;
    ASSERT_EQ(dat_ep_create(ia_, pz_, send_evd_, send_evd_, client_connect_evd_, &attr, &client_), DAT_SUCCESS);
    tools::ConnectEnds ends;
    ends.server_ia = ia_;
    ends.server_ep = server_;
    ends.server_connect_evd = server_connect_evd_;
    ends.cr_evd = cr_evd_;
    ends.client_ep = client_;
    ends.client_connect_evd = client_connect_evd_;
    std::string error;
    ASSERT_TRUE(tools::ConnectPair(ends, kBoundUs, error)) << error;
  }

  void TearDown() override {
    if (ia_ == DAT_HANDLE_NULL) return;
    EXPECT_EQ(dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    const ProcessResources after = SampleProcessResources();
    EXPECT_EQ(after.fds, before_.fds) << "descriptors left behind";
  }

  DAT_LMR_TRIPLET Slot(int i) {
    DAT_LMR_TRIPLET t;
    t.lmr_context = context_;
    t.virtual_address = reinterpret_cast<DAT_VADDR>(bytes_.data() + 64 * i);
    t.segment_length = 64;
    return t;
  }

  void Send(int count, int first_slot) {
    for (int i = 0; i < count; ++i) {
      DAT_LMR_TRIPLET iov = Slot(first_slot + i);
      DAT_DTO_COOKIE cookie;
      cookie.as_64 = 1000 + i;
      ASSERT_EQ(dat_ep_post_send(client_, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    }
    for (int i = 0; i < count; ++i) {
      DAT_EVENT event{};
      ASSERT_EQ(tools::WaitEvent(send_evd_, event, kBoundUs), DAT_SUCCESS) << "send completion " << i;
      EXPECT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    }
  }

  ProcessResources before_;
  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE cr_evd_ = DAT_HANDLE_NULL, server_connect_evd_ = DAT_HANDLE_NULL,
                 client_connect_evd_ = DAT_HANDLE_NULL, small_recv_evd_ = DAT_HANDLE_NULL,
                 send_evd_ = DAT_HANDLE_NULL;
  DAT_SRQ_HANDLE srq_ = DAT_HANDLE_NULL;
  std::vector<char> bytes_;
  DAT_LMR_HANDLE lmr_ = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT context_ = 0;
  DAT_EP_HANDLE server_ = DAT_HANDLE_NULL, client_ = DAT_HANDLE_NULL;
};

TEST_F(EvdOverflow, IsReportedAndLosesNoSrqBuffer) {
  DAT_EVD_PARAM param{};
  ASSERT_EQ(dat_evd_query(small_recv_evd_, DAT_EVD_FIELD_EVD_QLEN, &param), DAT_SUCCESS);
  ASSERT_LT(param.evd_qlen, kMessages) << "the EVD must be smaller than what arrives";
  DAT_EVENT overflow{};
  const std::string log = StderrOf([&] {
    Send(kMessages, kSrqBuffers);
    // The overflow is said on the async EVD, naming the EVD.
    ASSERT_EQ(tools::WaitEvent(async_evd_, overflow, kBoundUs), DAT_SUCCESS) << "no overflow event";
  });
  EXPECT_EQ(overflow.event_number, DAT_ASYNC_ERROR_EVD_OVERFLOW);
  EXPECT_EQ(overflow.event_data.asynch_error_event_data.dat_handle, small_recv_evd_);
  EXPECT_NE(log.find("softdat: warn:"), std::string::npos) << log;
  EXPECT_NE(log.find("overflow"), std::string::npos) << log;
  EXPECT_EQ(CountLines(log, "overflow"), 1u) << "one line per episode, not per drop: " << log;
  // Every message has been received once all 32 buffers left the SRQ and only what the EVD holds
  // is still outstanding (a dropped completion gives its buffer back).
  DAT_SRQ_PARAM srq{};
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    ASSERT_EQ(dat_srq_query(srq_, DAT_SRQ_FIELD_ALL, &srq), DAT_SUCCESS);
    if (srq.available_dto_count == kSrqBuffers - kMessages &&
        srq.outstanding_dto_count == kSrqBuffers - kMessages + param.evd_qlen)
      break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "SRQ never settled: available " << srq.available_dto_count << ", outstanding " << srq.outstanding_dto_count;
    std::this_thread::sleep_for(10ms);
  }
  // What fit is there, successful and in order; nothing more.
  int kept = 0;
  for (DAT_EVENT event{}; dat_evd_dequeue(small_recv_evd_, &event) == DAT_SUCCESS; ++kept) {
    EXPECT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(event.event_data.dto_completion_event_data.user_cookie.as_64, static_cast<std::uint64_t>(kept));
  }
  EXPECT_EQ(kept, param.evd_qlen);
  // No SRQ buffer went with a dropped completion: reaped, the SRQ holds exactly what is posted.
  ASSERT_EQ(dat_srq_query(srq_, DAT_SRQ_FIELD_ALL, &srq), DAT_SUCCESS);
  EXPECT_EQ(srq.available_dto_count, kSrqBuffers - kMessages);
  EXPECT_EQ(srq.outstanding_dto_count, kSrqBuffers - kMessages) << "dropped completions still hold buffers";
  // The EP goes on: with room in the EVD again, the next messages arrive.
  Send(2, kSrqBuffers + kMessages);
  for (int i = 0; i < 2; ++i) {
    DAT_EVENT event{};
    ASSERT_EQ(tools::WaitEvent(small_recv_evd_, event, kBoundUs), DAT_SUCCESS) << "after the overflow, message " << i;
    EXPECT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  }
}

// A process that runs out of descriptors while connections arrive.
TEST(FdLimit, ConnectionsArrivingWithoutDescriptorsWaitAndAreServedLater) {
  PeerProcess server;
  ASSERT_TRUE(server.Start({"--id=1", "--messages=100"})) << server.transcript();
  const std::uint16_t port = server.Listen();
  ASSERT_NE(port, 0) << server.transcript();
  server.Send("resources");
  const std::optional<std::string> before = server.WaitLine("resources", 10s);
  ASSERT_TRUE(before);
  server.Send("fds-left 2");
  ASSERT_TRUE(server.WaitLine("fds-left", 10s)) << server.transcript();
  // Twelve silent connections: two are taken, the rest find no descriptor.
  std::vector<int> silent;
  for (int i = 0; i < 12; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(port);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
    silent.push_back(fd);
  }
  std::this_thread::sleep_for(1500ms);
  for (int fd : silent) close(fd);
  // A real peer now: once the silent ones are gone (each read ends at its close), it is served.
  server.Send("fds-left 8");
  ASSERT_TRUE(server.WaitLine("fds-left", 10s)) << server.transcript();
  PeerProcess client;
  ASSERT_TRUE(client.Start({"--id=2", "--messages=100"})) << client.transcript();
  server.Send("accept 60");
  client.Send("connect 127.0.0.1 " + std::to_string(port));
  const Round served = server.WaitRound(120s);
  const Round active = client.WaitRound(60s);
  EXPECT_TRUE(served.clean) << served.line << "\n" << server.transcript();
  EXPECT_TRUE(active.clean) << active.line;
  EXPECT_EQ(served.violations, 0u) << served.line;
  // Said once, not once per retry (it once spun on accept: 170 000 lines in 2 s).
  const std::string& log = server.transcript();
  EXPECT_EQ(CountLines(log, "cannot accept connections"), 1u) << log.substr(0, 4000);
  EXPECT_NE(log.find("Too many open files"), std::string::npos);
  EXPECT_EQ(served.fds, static_cast<int>(Field(*before, "fds"))) << "descriptors left behind";
  EXPECT_EQ(client.Finish(), 0);
  EXPECT_EQ(server.Finish(), 0) << server.transcript();
}

TEST(FdLimit, AnActiveConnectionWithoutADescriptorIsUnreachableAndSaysWhy) {
  PeerProcess server, client;
  ASSERT_TRUE(server.Start({"--id=1"})) << server.transcript();
  ASSERT_TRUE(client.Start({"--id=2"})) << client.transcript();
  const std::uint16_t port = server.Listen();
  ASSERT_NE(port, 0);
  client.Send("fds-left 0");
  ASSERT_TRUE(client.WaitLine("fds-left", 10s)) << client.transcript();
  client.Send("connect 127.0.0.1 " + std::to_string(port));
  const Round round = client.WaitRound(60s);
  ASSERT_TRUE(round.parsed) << client.transcript();
  EXPECT_FALSE(round.established);
  EXPECT_NE(round.end.find("UNREACHABLE"), std::string::npos) << round.line;
  EXPECT_NE(client.transcript().find("Too many open files"), std::string::npos) << client.transcript();
  EXPECT_EQ(client.Finish(), 0) << client.transcript();
  EXPECT_EQ(server.Finish(), 0);
}

TEST(FdLimit, AnIaWithoutDescriptorsIsInsufficientResources) {
  PeerProcess peer;
  EXPECT_FALSE(peer.Start({"--nofile=4"})) << "dat_ia_open must fail";
  const std::string& out = peer.transcript();
  EXPECT_NE(out.find("DAT_INSUFFICIENT_RESOURCES"), std::string::npos) << out;
  EXPECT_NE(out.find("Too many open files"), std::string::npos) << out;
  EXPECT_EQ(peer.Finish(), 4) << out;
}

}  // namespace
}  // namespace softdat::testing::faults
