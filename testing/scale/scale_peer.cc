// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One side of the scale test: N connections into one server whose EPs share one SRQ of 256
// buffers, through the stock registry. Each side prints one JSON line of figures.
//
//   scale_peer server IA PORT N [Q]    accepts N connections (Q: the receive EVD's length), then takes kPerConnection 4 KiB
//                                      messages from each (the SRQ reposted as it goes),
//                                      checking every byte
//   scale_peer client IA HOST PORT N   opens N connections, then sends kPerConnection messages on
//                                      each, a round at a time, the N-th connection's last
//
// The server measures what the issue asks: setup time, memory and descriptors held per idle
// connection (RSS and /proc/self/fd after the SRQ exists, and again with N connections up), that
// receive-buffer memory does not grow with N (the SRQ's 256 buffers are all there is), and that
// the burst's memory goes back once it is over: the messages arrive far faster than 256 buffers
// take them, so nearly every connection waits for a buffer with a full receive block (more than
// fits a small one), the RSS peak is about N such blocks, and after the burst RSS is near what
// the idle connections held before it.
// Both sides raise RLIMIT_NOFILE to the hard limit and say plainly when that is too low. Every
// wait is bounded: a stuck step fails the run with a line saying which.
//
// On an RDMA device the server also reports what its completion queues hold (the CQ entries the
// kernel lists for this process, `rdma resource show cq`), its pinned memory (VmPin) and what an
// empty dat_evd_dequeue of the shared receive EVD costs with every connection up: none of these
// may grow with N (testing/vm/guest_verbs_scale.sh compares two N).
#include <dat2/udat.h>
#include <sys/resource.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr DAT_COUNT kSrqBuffers = 256;
constexpr std::size_t kMessage = 4096;
// Messages each connection sends: 8 of 4 KiB (with their framing) stay more than a small held
// block (16 KiB) while the connection waits for a buffer.
constexpr std::uint32_t kPerConnection = 8;
constexpr DAT_TIMEOUT kStepUs = 60'000'000;  // no single wait may take longer
constexpr std::size_t kConnectWave = 512;   // connects in flight at once (the listen backlog's size)

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::uint64_t RssKib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<std::uint64_t>(resident) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

// A "Field: N kB" line of /proc/self/status, in KiB (0 when it is missing).
std::uint64_t StatusKib(const char* field) {
  std::uint64_t kib = 0;
  const std::size_t length = std::strlen(field);
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::strncmp(line, field, length) != 0 || line[length] != ':') continue;
      if (std::sscanf(line + length + 1, " %" SCNu64, &kib) != 1) kib = 0;
      break;
    }
    std::fclose(f);
  }
  return kib;
}

// The process's RSS peak so far, in KiB.
std::uint64_t PeakRssKib() { return StatusKib("VmHWM"); }
// The resident part of shared memory (a same-host connection's rings, which its peer maps too).
std::uint64_t SharedRssKib() { return StatusKib("RssShmem"); }
// Memory pinned for the device (registered regions, queues).
std::uint64_t PinnedKib() { return StatusKib("VmPin"); }

int OpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n - 3;  // ".", ".." and the directory's own descriptor
}

// The CQ entries of this process's completion queues, from the kernel's RDMA resource tracking
// (`rdma -j resource show cq`: one object per CQ with its "cqe" and "pid"); -1 where the tool or
// the tracking is missing (softdat-tcp has no CQs: 0).
long long CqEntries() {
  FILE* p = popen("rdma -j resource show cq 2>/dev/null", "r");
  if (p == nullptr) return -1;
  std::string json;
  char chunk[4096];
  std::size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, p)) > 0) json.append(chunk, n);
  if (pclose(p) != 0 || json.empty()) return -1;
  const std::string pid = "\"pid\":" + std::to_string(getpid());
  long long total = 0;
  for (std::size_t open = json.find('{'); open != std::string::npos; open = json.find('{', open + 1)) {
    const std::size_t close = json.find('}', open);
    const std::string object = json.substr(open, close - open);
    const std::size_t at = object.find(pid);
    const std::size_t cqe = object.find("\"cqe\":");
    if (at == std::string::npos || cqe == std::string::npos) continue;
    const char next = at + pid.size() < object.size() ? object[at + pid.size()] : ',';
    if (next >= '0' && next <= '9') continue;  // another pid with our digits as a prefix
    total += std::strtoll(object.c_str() + cqe + 6, nullptr, 10);
  }
  return total;
}

// What an empty dat_evd_dequeue of `evd` costs, in ns (the mean of many).
double EmptyDequeueNs(DAT_EVD_HANDLE evd) {
  constexpr int kCalls = 20000;
  DAT_EVENT event{};
  const double start = Seconds();
  for (int i = 0; i < kCalls; ++i)
    if (dat_evd_dequeue(evd, &event) == DAT_SUCCESS) return -1;  // not empty: no figure
  return (Seconds() - start) * 1e9 / kCalls;
}

[[noreturn]] void Fail(const char* what, DAT_RETURN status = DAT_SUCCESS) {
  const char* major = "";
  const char* minor = "";
  if (status != DAT_SUCCESS) dat_strerror(status, &major, &minor);
  std::fprintf(stderr, "scale_peer: %s%s%s %s\n", what, status != DAT_SUCCESS ? ": " : "", major, minor);
  std::exit(1);
}

void Check(DAT_RETURN status, const char* what) {
  if (status != DAT_SUCCESS) Fail(what, status);
}

// Raises the soft descriptor limit to the hard one; fails when N connections cannot fit.
void RaiseFdLimit(std::size_t connections) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  const std::size_t needed = connections + 64;
  if (limit.rlim_cur < needed) {
    std::fprintf(stderr,
                 "scale_peer: %zu connections need about %zu descriptors, but RLIMIT_NOFILE's hard limit is %llu; "
                 "raise it (ulimit -Hn, or limits.conf) and run again\n",
                 connections, needed, static_cast<unsigned long long>(limit.rlim_max));
    std::exit(2);
  }
}

struct Ia {
  DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;

  explicit Ia(const char* name) {
    Check(dat_ia_open(const_cast<char*>(name), 8, &async_evd, &ia), "dat_ia_open");
    Check(dat_pz_create(ia, &pz), "dat_pz_create");
  }
  DAT_EVD_HANDLE Evd(DAT_EVD_FLAGS flags, DAT_COUNT qlen) {
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    Check(dat_evd_create(ia, qlen, DAT_HANDLE_NULL, flags, &evd), "dat_evd_create");
    return evd;
  }
  // `bytes` registered for local and remote access; the LMR's context for DAT_LMR_TRIPLETs.
  DAT_LMR_CONTEXT Register(std::vector<std::uint8_t>& bytes) {
    DAT_REGION_DESCRIPTION region{};
    region.for_va = bytes.data();
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT context = 0;
    DAT_RMR_CONTEXT remote = 0;
    DAT_VLEN registered = 0;
    DAT_VADDR address = 0;
    Check(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, bytes.size(), pz, DAT_MEM_PRIV_ALL_FLAG,
                         DAT_VA_TYPE_VA, &lmr, &context, &remote, &registered, &address),
          "dat_lmr_create");
    return context;
  }
};

DAT_EVENT Wait(DAT_EVD_HANDLE evd, const char* what) {
  DAT_EVENT event{};
  DAT_COUNT more = 0;
  Check(dat_evd_wait(evd, kStepUs, 1, &event, &more), what);
  return event;
}

DAT_EP_ATTR EpAttr(DAT_COUNT recv_dtos) {
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.max_message_size = kMessage;
  attr.max_rdma_size = 0;
  attr.qos = DAT_QOS_BEST_EFFORT;
  attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_recv_dtos = recv_dtos;
  attr.max_request_dtos = kPerConnection;
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.max_rdma_read_in = 0;
  attr.max_rdma_read_out = 0;
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  attr.max_rdma_read_iov = 0;
  attr.max_rdma_write_iov = 0;
  attr.ep_transport_specific_count = 0;
  attr.ep_provider_specific_count = 0;
  return attr;
}

// The message of connection `index`: its index, then a pattern derived from it.
void Fill(std::uint8_t* at, std::uint32_t index) {
  std::memcpy(at, &index, sizeof index);
  for (std::size_t i = sizeof index; i < kMessage; ++i) at[i] = static_cast<std::uint8_t>(index * 131 + i * 7);
}
bool Intact(const std::uint8_t* at, std::uint32_t& index) {
  std::memcpy(&index, at, sizeof index);
  for (std::size_t i = sizeof index; i < kMessage; ++i)
    if (at[i] != static_cast<std::uint8_t>(index * 131 + i * 7)) return false;
  return true;
}

int Server(const char* ia_name, DAT_CONN_QUAL port, std::size_t n, DAT_COUNT recv_qlen) {
  RaiseFdLimit(n);
  const double start_open = Seconds();
  Ia ia(ia_name);
  const DAT_COUNT qlen = static_cast<DAT_COUNT>(n + 1024);
  DAT_EVD_HANDLE cr_evd = ia.Evd(DAT_EVD_CR_FLAG, qlen);
  DAT_EVD_HANDLE conn_evd = ia.Evd(DAT_EVD_CONNECTION_FLAG, 2 * qlen);
  // A device's CQ is the receive EVD's length: the verbs scale case gives one that does not grow
  // with N (recv_qlen), to show that the CQ does not either.
  DAT_EVD_HANDLE recv_evd = ia.Evd(DAT_EVD_DTO_FLAG, recv_qlen != 0 ? recv_qlen : qlen);
  DAT_EVD_HANDLE req_evd = ia.Evd(DAT_EVD_DTO_FLAG, 64);
  DAT_SRQ_ATTR srq_attr{};
  srq_attr.max_recv_dtos = kSrqBuffers;
  srq_attr.max_recv_iov = 1;
  srq_attr.low_watermark = DAT_SRQ_LW_DEFAULT;
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  Check(dat_srq_create(ia.ia, ia.pz, &srq_attr, &srq), "dat_srq_create");
  std::vector<std::uint8_t> buffers(kSrqBuffers * kMessage);
  const DAT_LMR_CONTEXT lmr = ia.Register(buffers);
  auto post = [&](std::uint32_t slot) {
    DAT_LMR_TRIPLET iov{reinterpret_cast<DAT_VADDR>(buffers.data() + slot * kMessage), kMessage, lmr};
    DAT_DTO_COOKIE cookie{};
    cookie.as_64 = slot;
    Check(dat_srq_post_recv(srq, 1, &iov, cookie), "dat_srq_post_recv");
  };
  for (std::uint32_t slot = 0; slot < kSrqBuffers; ++slot) post(slot);
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  Check(dat_psp_create(ia.ia, port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
  const std::uint64_t rss_before = RssKib();
  const std::uint64_t shared_before = SharedRssKib();
  const int fds_before = OpenFds();
  std::fprintf(stderr, "scale_peer: serving %zu connections on port %llu\n", n, static_cast<unsigned long long>(port));

  // Accept N; the clock starts at the first request.
  std::vector<DAT_EP_HANDLE> eps;
  eps.reserve(n);
  double first_request = 0;
  std::size_t established = 0;
  DAT_EP_ATTR attr = EpAttr(0);
  while (established < n) {
    DAT_EVENT event{};
    DAT_COUNT more = 0;
    while (eps.size() < n && dat_evd_dequeue(cr_evd, &event) == DAT_SUCCESS) {
      if (first_request == 0) first_request = Seconds();
      const DAT_CR_HANDLE cr = event.event_data.cr_arrival_event_data.cr_handle;
      DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
      Check(dat_ep_create_with_srq(ia.ia, ia.pz, recv_evd, req_evd, conn_evd, srq, &attr, &ep),
            "dat_ep_create_with_srq");
      Check(dat_cr_accept(cr, ep, 0, nullptr), "dat_cr_accept");
      eps.push_back(ep);
    }
    const DAT_RETURN got = dat_evd_wait(conn_evd, eps.size() < n ? 1000 : kStepUs, 1, &event, &more);
    if (got == DAT_SUCCESS) {
      if (event.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) Fail("a connection did not establish");
      ++established;
    } else if (DAT_GET_TYPE(got) != DAT_TIMEOUT_EXPIRED || eps.size() == n) {
      Fail("waiting for connections", got);
    }
  }
  const double setup_s = Seconds() - first_request;
  const std::uint64_t rss_after = RssKib();
  const std::uint64_t shared_after = SharedRssKib();
  const int fds_after = OpenFds();

  // kPerConnection messages per connection, each checked, the SRQ reposted as it goes.
  std::vector<std::uint32_t> seen(n, 0);
  std::size_t received = 0, bad = 0;
  while (received < n * kPerConnection) {
    const DAT_EVENT event = Wait(recv_evd, "waiting for messages");
    const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
    if (dto.status != DAT_DTO_SUCCESS) Fail("a receive completed in error");
    const auto slot = static_cast<std::uint32_t>(dto.user_cookie.as_64);
    std::uint32_t index = 0;
    if (dto.transfered_length != kMessage || !Intact(buffers.data() + slot * kMessage, index) || index >= n ||
        seen[index] == kPerConnection) {
      ++bad;
    } else {
      ++seen[index];
    }
    ++received;
    post(slot);
  }
  const std::uint64_t rss_loaded = RssKib();
  const std::uint64_t shared_loaded = SharedRssKib();
  // Every message is in: the receive EVD stays empty from here (an event now is counted bad), and
  // every connection is still up.
  const long long cq_entries = CqEntries();
  const std::uint64_t pinned_kib = PinnedKib();
  const double empty_dequeue_ns = EmptyDequeueNs(recv_evd);
  if (empty_dequeue_ns < 0) ++bad;
  const std::uint64_t rss_peak = PeakRssKib();
  DAT_SRQ_PARAM srq_param{};
  Check(dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &srq_param), "dat_srq_query");

  // The server closes, once it has every message: a connection whose messages wait for SRQ
  // buffers ends when its peer closes (what waited is discarded, as with an RNIC), so the client
  // may not close after its last Send completes. Every EP ends once.
  for (DAT_EP_HANDLE ep : eps) Check(dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
  std::size_t ended = 0;
  while (ended < n) {
    const DAT_EVENT event = Wait(conn_evd, "waiting for disconnects");
    if (event.event_number == DAT_CONNECTION_EVENT_DISCONNECTED) ++ended;
    if (event.event_number == DAT_CONNECTION_EVENT_BROKEN) Fail("a connection broke instead of closing");
  }
  const double open_s = first_request - start_open;
  (void)open_s;
  std::printf(
      "{\"role\": \"server\", \"connections\": %zu, \"setup_s\": %.3f, \"rss_before_kib\": %llu, "
      "\"rss_connected_kib\": %llu, \"rss_after_messages_kib\": %llu, \"rss_peak_kib\": %llu, "
      "\"kib_per_connection\": %.2f, \"shared_kib_per_connection\": %.2f, \"shared_connected_kib\": %llu, "
      "\"shared_after_messages_kib\": %llu, "
      "\"fds_before\": %d, \"fds_connected\": %d, \"fds_per_connection\": %.3f, \"messages\": %zu, "
      "\"bad_messages\": %zu, \"last_connection_received\": %s, \"srq_buffers\": %d, "
      "\"srq_receive_bytes\": %zu, \"srq_available_after\": %d, \"cq_entries\": %lld, \"pinned_kib\": %llu, "
      "\"empty_dequeue_ns\": %.1f}\n",
      n, setup_s, static_cast<unsigned long long>(rss_before), static_cast<unsigned long long>(rss_after),
      static_cast<unsigned long long>(rss_loaded), static_cast<unsigned long long>(rss_peak),
      static_cast<double>(rss_after - rss_before) / static_cast<double>(n),
      (static_cast<double>(shared_after) - static_cast<double>(shared_before)) / static_cast<double>(n),
      static_cast<unsigned long long>(shared_after), static_cast<unsigned long long>(shared_loaded), fds_before,
      fds_after,
      static_cast<double>(fds_after - fds_before) / static_cast<double>(n), received, bad,
      seen[n - 1] == kPerConnection ? "true" : "false", kSrqBuffers, buffers.size(),
      static_cast<int>(srq_param.available_dto_count), cq_entries, static_cast<unsigned long long>(pinned_kib),
      empty_dequeue_ns);
  for (DAT_EP_HANDLE ep : eps) (void)dat_ep_free(ep);
  (void)dat_psp_free(psp);
  return bad == 0 && seen[n - 1] == kPerConnection ? 0 : 1;
}

int Client(const char* ia_name, const char* host, DAT_CONN_QUAL port, std::size_t n) {
  RaiseFdLimit(n);
  Ia ia(ia_name);
  const DAT_COUNT qlen = static_cast<DAT_COUNT>(n + 1024);
  DAT_EVD_HANDLE conn_evd = ia.Evd(DAT_EVD_CONNECTION_FLAG, 2 * qlen);
  DAT_EVD_HANDLE recv_evd = ia.Evd(DAT_EVD_DTO_FLAG, 64);
  DAT_EVD_HANDLE req_evd = ia.Evd(DAT_EVD_DTO_FLAG, static_cast<DAT_COUNT>(n * kPerConnection + 1024));
  sockaddr_in server{};
  server.sin_family = AF_INET;
  if (inet_pton(AF_INET, host, &server.sin_addr) != 1) Fail("the host must be an IPv4 address");
  std::vector<std::uint8_t> messages(n * kMessage);
  for (std::uint32_t i = 0; i < n; ++i) Fill(messages.data() + i * kMessage, i);
  const DAT_LMR_CONTEXT lmr = ia.Register(messages);

  // Connect in waves, so that a burst never outgrows the server's listen backlog.
  std::vector<DAT_EP_HANDLE> eps(n, DAT_HANDLE_NULL);
  DAT_EP_ATTR attr = EpAttr(1);
  const double start = Seconds();
  std::size_t established = 0;
  for (std::size_t next = 0; next < n || established < n;) {
    while (next < n && next - established < kConnectWave) {
      Check(dat_ep_create(ia.ia, ia.pz, recv_evd, req_evd, conn_evd, &attr, &eps[next]), "dat_ep_create");
      Check(dat_ep_connect(eps[next], reinterpret_cast<DAT_IA_ADDRESS_PTR>(&server), port, kStepUs, 0, nullptr,
                           DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
            "dat_ep_connect");
      ++next;
    }
    const DAT_EVENT event = Wait(conn_evd, "waiting for connections");
    if (event.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) Fail("a connection did not establish");
    ++established;
  }
  const double connect_s = Seconds() - start;
  // kPerConnection messages per connection, a round at a time: the N-th connection's last.
  for (std::uint32_t round = 0; round < kPerConnection; ++round) {
    for (std::uint32_t i = 0; i < n; ++i) {
      DAT_LMR_TRIPLET iov{reinterpret_cast<DAT_VADDR>(messages.data() + i * kMessage), kMessage, lmr};
      DAT_DTO_COOKIE cookie{};
      cookie.as_64 = i;
      Check(dat_ep_post_send(eps[i], 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_send");
    }
  }
  for (std::size_t done = 0; done < n * kPerConnection; ++done) {
    const DAT_EVENT event = Wait(req_evd, "waiting for sends");
    if (event.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) Fail("a send completed in error");
  }
  // The server closes once it has every message (see Server).
  for (std::size_t ended = 0; ended < n; ++ended) {
    const DAT_EVENT event = Wait(conn_evd, "waiting for the server to close");
    if (event.event_number != DAT_CONNECTION_EVENT_DISCONNECTED) Fail("a connection did not close gracefully");
  }
  std::printf("{\"role\": \"client\", \"connections\": %zu, \"connect_s\": %.3f, \"rss_kib\": %llu, \"fds\": %d}\n",
              n, connect_s, static_cast<unsigned long long>(RssKib()), OpenFds());
  for (DAT_EP_HANDLE ep : eps) (void)dat_ep_free(ep);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 5 || argc == 6) && std::strcmp(argv[1], "server") == 0)
    return Server(argv[2], std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10),
                  argc == 6 ? static_cast<DAT_COUNT>(std::strtol(argv[5], nullptr, 10)) : 0);
  if (argc == 6 && std::strcmp(argv[1], "client") == 0)
    return Client(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10), std::strtoull(argv[5], nullptr, 10));
  std::fprintf(stderr, "usage: scale_peer server IA PORT N [RECV_EVD_QLEN] | scale_peer client IA HOST PORT N\n");
  return 2;
}
