// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The SRQ peer-death scenario on a device, through the stock registry (reliability issue: "a
// connection whose messages wait for SRQ buffers never notices that its peer died"; the verbs
// transport gets the peer's end from the device, and this pins it).
//
//   peer_death server IA PORT   an EP on an SRQ of 2 buffers takes 2 of the client's Sends and
//                               posts no more; prints "received 2", then waits (bounded) for the
//                               connection's end and prints one JSON line: the end event, how
//                               long after "received" it came, every receive completion after
//                               it, the EP_BROKEN async event, and the SRQ's counts once the
//                               EP is freed
//   peer_death client IA HOST PORT
//                               connects, posts 20 Sends, prints "sent", then waits to be killed
//
// testing/vm/guest_peer_death.sh kills the client with SIGKILL once the server printed
// "received 2" and checks the server's line.
#include <dat2/udat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr DAT_COUNT kSrqBuffers = 2;
constexpr int kSends = 20;
constexpr std::uint32_t kMessage = 64;
constexpr DAT_TIMEOUT kStepUs = 60'000'000;  // no single wait may take longer
constexpr double kEndBoundS = 60;            // the end must come within this of the kill

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void Fail(const char* what, DAT_RETURN status = DAT_SUCCESS) {
  const char* major = "";
  const char* minor = "";
  if (status != DAT_SUCCESS) dat_strerror(status, &major, &minor);
  std::fprintf(stderr, "peer_death: %s%s%s %s\n", what, status != DAT_SUCCESS ? ": " : "", major, minor);
  std::exit(1);
}

void Check(DAT_RETURN status, const char* what) {
  if (status != DAT_SUCCESS) Fail(what, status);
}

struct Ia {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE conn_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE recv_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE req_evd = DAT_HANDLE_NULL;
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(kSends * kMessage, 0x5a);
  DAT_LMR_CONTEXT lmr = 0;

  explicit Ia(const char* name) {
    Check(dat_ia_open(const_cast<char*>(name), 8, &async_evd, &ia), "dat_ia_open");
    Check(dat_pz_create(ia, &pz), "dat_pz_create");
    Check(dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd), "dat_evd_create");
    Check(dat_evd_create(ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv_evd), "dat_evd_create");
    Check(dat_evd_create(ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_evd), "dat_evd_create");
    DAT_REGION_DESCRIPTION region{};
    region.for_va = bytes.data();
    DAT_LMR_HANDLE handle = DAT_HANDLE_NULL;
    DAT_RMR_CONTEXT remote = 0;
    DAT_VLEN registered = 0;
    DAT_VADDR address = 0;
    Check(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, bytes.size(), pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
                         &handle, &lmr, &remote, &registered, &address),
          "dat_lmr_create");
  }
  DAT_LMR_TRIPLET Slot(int i) {
    return DAT_LMR_TRIPLET{reinterpret_cast<DAT_VADDR>(bytes.data() + i * kMessage), kMessage, lmr};
  }
};

DAT_EVENT Wait(DAT_EVD_HANDLE evd, const char* what) {
  DAT_EVENT event{};
  DAT_COUNT more = 0;
  Check(dat_evd_wait(evd, kStepUs, 1, &event, &more), what);
  return event;
}

int Server(const char* name, DAT_CONN_QUAL port) {
  Ia ia(name);
  DAT_EVD_HANDLE cr_evd = DAT_HANDLE_NULL;
  Check(dat_evd_create(ia.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd), "dat_evd_create");
  DAT_SRQ_ATTR srq_attr{};
  srq_attr.max_recv_dtos = kSrqBuffers;
  srq_attr.max_recv_iov = 1;
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  Check(dat_srq_create(ia.ia, ia.pz, &srq_attr, &srq), "dat_srq_create");
  for (int i = 0; i < kSrqBuffers; ++i) {
    DAT_LMR_TRIPLET iov = ia.Slot(i);
    DAT_DTO_COOKIE cookie{};
    cookie.as_64 = i;
    Check(dat_srq_post_recv(srq, 1, &iov, cookie), "dat_srq_post_recv");
  }
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  Check(dat_psp_create(ia.ia, port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
  std::fprintf(stderr, "peer_death: serving on port %llu\n", static_cast<unsigned long long>(port));
  const DAT_EVENT request = Wait(cr_evd, "waiting for the connection request");
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  Check(dat_ep_create_with_srq(ia.ia, ia.pz, ia.recv_evd, ia.req_evd, ia.conn_evd, srq, nullptr, &ep),
        "dat_ep_create_with_srq");
  Check(dat_cr_accept(request.event_data.cr_arrival_event_data.cr_handle, ep, 0, nullptr), "dat_cr_accept");
  if (Wait(ia.conn_evd, "waiting for the connection").event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
    Fail("the connection did not establish");
  for (int i = 0; i < kSrqBuffers; ++i) {
    const DAT_EVENT event = Wait(ia.recv_evd, "waiting for the first receives");
    if (event.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) Fail("a receive failed");
  }
  std::printf("received %d\n", kSrqBuffers);
  std::fflush(stdout);
  // No more buffers: the client's other Sends wait (RoCE: RNR retries) until it dies.
  const double received_at = Seconds();
  DAT_EVENT end{};
  DAT_COUNT more = 0;
  const DAT_RETURN ended = dat_evd_wait(ia.conn_evd, static_cast<DAT_TIMEOUT>(kEndBoundS * 1e6), 1, &end, &more);
  const double end_s = Seconds() - received_at;
  // What came to the receive EVD after the two: flushes only, never a delivered message.
  int delivered_after = 0, flushed_after = 0;
  DAT_EVENT event{};
  while (dat_evd_dequeue(ia.recv_evd, &event) == DAT_SUCCESS) {
    if (event.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS)
      ++delivered_after;
    else
      ++flushed_after;
  }
  // The SRQ EP's EP_BROKEN, once its flush is delivered.
  bool broken_async = false;
  while (dat_evd_wait(ia.async_evd, 5'000'000, 1, &event, &more) == DAT_SUCCESS)
    if (event.event_number == DAT_ASYNC_ERROR_EP_BROKEN) broken_async = true;
  const DAT_RETURN freed = dat_ep_free(ep);
  DAT_SRQ_PARAM param{};
  Check(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &param), "dat_srq_query");
  const char* end_name = ended != DAT_SUCCESS                                   ? "none"
                         : end.event_number == DAT_CONNECTION_EVENT_DISCONNECTED ? "DISCONNECTED"
                         : end.event_number == DAT_CONNECTION_EVENT_BROKEN       ? "BROKEN"
                                                                                 : "other";
  std::printf(
      "{\"end\": \"%s\", \"end_s\": %.3f, \"delivered_after\": %d, \"flushed_after\": %d, \"ep_broken_async\": %s, "
      "\"ep_freed\": %s, \"srq_outstanding\": %d, \"srq_available\": %d}\n",
      end_name, end_s, delivered_after, flushed_after, broken_async ? "true" : "false",
      freed == DAT_SUCCESS ? "true" : "false", static_cast<int>(param.outstanding_dto_count),
      static_cast<int>(param.available_dto_count));
  (void)dat_psp_free(psp);
  return 0;
}

int Client(const char* name, const char* host, DAT_CONN_QUAL port) {
  Ia ia(name);
  sockaddr_in server{};
  server.sin_family = AF_INET;
  if (inet_pton(AF_INET, host, &server.sin_addr) != 1) Fail("the host must be an IPv4 address");
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.max_message_size = kMessage;
  attr.qos = DAT_QOS_BEST_EFFORT;
  attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_recv_dtos = 1;
  attr.max_request_dtos = kSends;
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  Check(dat_ep_create(ia.ia, ia.pz, ia.recv_evd, ia.req_evd, ia.conn_evd, &attr, &ep), "dat_ep_create");
  Check(dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&server), port, kStepUs, 0, nullptr,
                       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
        "dat_ep_connect");
  if (Wait(ia.conn_evd, "waiting for the connection").event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
    Fail("the connection did not establish");
  for (int i = 0; i < kSends; ++i) {
    DAT_LMR_TRIPLET iov = ia.Slot(i);
    DAT_DTO_COOKIE cookie{};
    cookie.as_64 = i;
    Check(dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
  }
  std::printf("sent %d\n", kSends);
  std::fflush(stdout);
  // Keep the connection (and its progress) alive until killed; bounded all the same.
  for (int i = 0; i < 120; ++i) {
    DAT_EVENT event{};
    DAT_COUNT more = 0;
    (void)dat_evd_wait(ia.req_evd, 1'000'000, 1, &event, &more);
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "server") == 0) return Server(argv[2], std::strtoull(argv[3], nullptr, 10));
  if (argc == 5 && std::strcmp(argv[1], "client") == 0)
    return Client(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10));
  std::fprintf(stderr, "usage: peer_death server IA PORT | peer_death client IA HOST PORT\n");
  return 2;
}
