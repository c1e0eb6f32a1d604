// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The peer of the two-process cases (two_process_test.cc, progress_test.cc): a separate consumer
// process that connects to the test's PSP through the stock registry and sends `count` 64-byte
// messages whose first byte is their rank. Exit codes say where it stopped, so the test can tell.
//  - by default it waits for their completions and then for the test to disconnect;
//  - with `hold`, once its Sends completed it says so on stdout and waits to be killed (the test
//    kills it while its messages wait at the receiver);
//  - with `sleep`, it posts them, and an RDMA Write of 64 bytes (each 0x5A) into the region the
//    test's accept named in its private data (a DAT_RMR_TRIPLET), says "posted" and sleeps
//    without another DAT call until it is killed: whatever reaches the test after that moved
//    without the poster's help.
//   usage: send_peer <ipv4 address> <conn_qual> <count> [hold|sleep]
#include <arpa/inet.h>
#include <dat2/udat.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr DAT_TIMEOUT kTimeoutUs = 20'000'000;

bool WaitFor(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER number) {
  for (;;) {
    DAT_EVENT event{};
    DAT_COUNT more = 0;
    if (dat_evd_wait(evd, kTimeoutUs, 1, &event, &more) != DAT_SUCCESS) return false;
    if (event.event_number == number) return true;
    std::fprintf(stderr, "send_peer: skipping event 0x%x\n", event.event_number);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool hold = argc == 5 && std::strcmp(argv[4], "hold") == 0;
  const bool sleep = argc == 5 && std::strcmp(argv[4], "sleep") == 0;
  if (argc != 4 && !hold && !sleep) {
    std::fprintf(stderr, "usage: send_peer <ipv4 address> <conn_qual> <count> [hold|sleep]\n");
    return 2;
  }
  const int count = std::atoi(argv[3]);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  if (inet_pton(AF_INET, argv[1], &remote.sin_addr) != 1) return 2;
  const DAT_CONN_QUAL conn_qual = std::strtoull(argv[2], nullptr, 10);

  DAT_IA_HANDLE ia;
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  const char* ia_name = std::getenv("SOFTDAT_CONFORMANCE_IA");
  if (ia_name == nullptr || *ia_name == '\0') ia_name = "softdat-tcp";
  if (dat_ia_open(const_cast<char*>(ia_name), 8, &async, &ia) != DAT_SUCCESS) return 10;
  DAT_PZ_HANDLE pz;
  DAT_EVD_HANDLE request_evd, recv_evd, connect_evd;
  if (dat_pz_create(ia, &pz) != DAT_SUCCESS ||
      dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &request_evd) != DAT_SUCCESS ||
      dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv_evd) != DAT_SUCCESS ||
      dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &connect_evd) != DAT_SUCCESS)
    return 11;
  std::vector<char> bytes(64 * count + 64);  // the last 64: the Write's source
  for (int i = 0; i < count; ++i) bytes[64 * i] = static_cast<char>(i);
  std::memset(bytes.data() + 64 * count, 0x5A, 64);
  DAT_REGION_DESCRIPTION region;
  region.for_va = bytes.data();
  DAT_LMR_HANDLE lmr;
  DAT_LMR_CONTEXT context;
  DAT_RMR_CONTEXT rmr_context;
  DAT_VLEN registered_length;
  DAT_VADDR registered_address;
  if (dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, bytes.size(), pz, DAT_MEM_PRIV_LOCAL_READ_FLAG,
                     DAT_VA_TYPE_VA, &lmr, &context, &rmr_context, &registered_length,
                     &registered_address) != DAT_SUCCESS)
    return 12;
  DAT_EP_HANDLE ep;
  if (dat_ep_create(ia, pz, recv_evd, request_evd, connect_evd, nullptr, &ep) != DAT_SUCCESS) return 13;
  if (dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&remote), conn_qual, kTimeoutUs, 0, nullptr,
                     DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG) != DAT_SUCCESS)
    return 14;
  DAT_RMR_TRIPLET target{};
  for (;;) {
    DAT_EVENT event{};
    DAT_COUNT more = 0;
    if (dat_evd_wait(connect_evd, kTimeoutUs, 1, &event, &more) != DAT_SUCCESS) return 15;
    if (event.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) continue;
    const DAT_CONNECTION_EVENT_DATA& data = event.event_data.connect_event_data;
    if (sleep && data.private_data_size >= static_cast<DAT_COUNT>(sizeof target))
      std::memcpy(&target, data.private_data, sizeof target);
    break;
  }
  for (int i = 0; i < count; ++i) {
    DAT_LMR_TRIPLET iov;
    iov.lmr_context = context;
    iov.virtual_address = reinterpret_cast<DAT_VADDR>(bytes.data() + 64 * i);
    iov.segment_length = 64;
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = i;
    if (dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS) return 16;
  }
  if (sleep) {
    if (target.segment_length >= 64) {
      DAT_LMR_TRIPLET iov;
      iov.lmr_context = context;
      iov.virtual_address = reinterpret_cast<DAT_VADDR>(bytes.data() + 64 * count);
      iov.segment_length = 64;
      target.segment_length = 64;
      if (dat_ep_post_rdma_write(ep, 1, &iov, DAT_DTO_COOKIE{}, &target, DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS)
        return 21;
    }
    std::printf("send_peer: posted %d messages%s, sleeping\n", count, target.segment_length != 0 ? " and a Write" : "");
    std::fflush(stdout);
    for (;;) pause();
  }
  for (int i = 0; i < count; ++i) {
    DAT_EVENT event{};
    DAT_COUNT more = 0;
    if (dat_evd_wait(request_evd, kTimeoutUs, 1, &event, &more) != DAT_SUCCESS) return 17;
    if (event.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) return 18;
  }
  if (hold) {
    std::printf("send_peer: sent %d messages, holding\n", count);
    std::fflush(stdout);
    for (;;) pause();
  }
  if (!WaitFor(connect_evd, DAT_CONNECTION_EVENT_DISCONNECTED)) return 19;
  std::printf("send_peer: sent %d messages\n", count);
  return dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG) == DAT_SUCCESS ? 0 : 20;
}
