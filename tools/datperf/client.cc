// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The client's side of each test: connection setup and teardown, the measured loops, the rows.
#include "tools/datperf/client.h"

#include <netdb.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <unordered_map>

#include "tools/datperf/dat_env.h"
#include "tools/datperf/protocol.h"
#include "tools/datperf/write_ping_pong.h"

namespace softdat::datperf {
namespace {

std::uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

DAT_DTO_COOKIE Cookie(std::uint32_t conn, std::uint32_t slot) {
  DAT_DTO_COOKIE cookie{};
  cookie.as_64 = (static_cast<std::uint64_t>(conn) << 32) | slot;
  return cookie;
}
std::uint32_t ConnOf(DAT_DTO_COOKIE cookie) { return static_cast<std::uint32_t>(cookie.as_64 >> 32); }
std::uint32_t SlotOf(DAT_DTO_COOKIE cookie) { return static_cast<std::uint32_t>(cookie.as_64); }

constexpr std::uint32_t kEndSlot = 0xFFFFFFFFu;  // the end marker's send
constexpr DAT_TIMEOUT kStepUs = 30'000'000;     // no single step of a test may take longer

struct Conn {
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  Reply reply;
  Region recv;                 // lat: 2 x window echo buffers; streams: the Ack
  Region local;                // read: where the Reads land
  std::uint64_t to_post = 0;   // messages this connection sends
  std::uint64_t posted = 0;
  std::uint64_t completed = 0;  // their completions
  std::uint64_t received = 0;  // lat: echoes
  bool end_sent = false;
  bool end_done = false;
  bool acked = false;
  Ack ack;
};

class Client {
 public:
  Client(const Options& options, RunInfo& info, std::vector<Row>& rows) : o_(options), info_(info), rows_(rows) {}
  int Run();

 private:
  bool Setup(std::string& error);
  bool Connect(std::uint64_t size, std::uint64_t iters, std::uint32_t window, bool last, std::string& error);
  void Disconnect();
  bool RunSize(std::uint64_t size, bool last, Row& row, std::string& error);
  bool RunLatency(std::uint64_t size, std::uint32_t window, Row& row, std::string& error);
  bool RunStream(std::uint64_t size, std::uint32_t window, Row& row, std::string& error);
  bool RunWriteLatency(std::uint64_t size, Row& row, std::string& error);
  void Summarize(std::uint64_t count, std::uint64_t size, std::uint64_t start, Row& row);
  bool PostData(Conn& c, std::uint32_t index, std::uint64_t size, std::uint32_t window, std::string& error);
  bool PostEnd(Conn& c, std::uint32_t index, std::string& error);
  bool PostAckBuffer(Conn& c, std::uint32_t index, std::string& error);
  void Progress(const char* what, std::uint64_t size, std::uint64_t done, std::uint64_t total, std::uint64_t start_ns);
  // A test's start: the clock, and OverTime's count set back.
  std::uint64_t StartClock() {
    over_time_ = false;
    time_checks_ = 0;
    return NowNs();
  }
  // Whether --duration has passed since `start_ns`. The clock every 16th call, as the spins read
  // it: a read costs about 28 ns on the development VM, and one per completion was a tenth of an
  // 8 B same-host message's time in the rate datperf reported. Once over, over until the next
  // StartClock (the loops stop posting on the first true and end on a later one).
  bool OverTime(std::uint64_t start_ns) {
    if (over_time_) return true;
    if (o_.duration_s <= 0 || (++time_checks_ & 15) != 0) return false;
    over_time_ = static_cast<double>(NowNs() - start_ns) / 1e9 >= o_.duration_s;
    return over_time_;
  }

  const Options& o_;
  RunInfo& info_;
  std::vector<Row>& rows_;
  DatEnv env_;
  DAT_EVD_HANDLE recv_evd_ = DAT_HANDLE_NULL, request_evd_ = DAT_HANDLE_NULL, connect_evd_ = DAT_HANDLE_NULL;
  sockaddr_in server_{};
  Region send_;  // window slots of the largest size, slot s holding message pattern s
  std::vector<Conn> conns_;
  std::vector<std::uint64_t> sent_ns_;    // lat: when each connection's slot was last sent
  std::vector<std::uint32_t> samples_;    // lat: round trips in ns, preallocated per size
  std::uint32_t session_ = 0;
  bool tty_ = false;
  std::uint64_t last_progress_ns_ = 0;
  bool over_time_ = false;        // OverTime's answer, once true
  std::uint32_t time_checks_ = 0;  // OverTime's calls since StartClock
  std::uint64_t bad_bytes_ = 0;
};

bool Resolve(const std::string& host, sockaddr_in& out, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) return error = "cannot resolve '" + host + "': " + gai_strerror(rc), false;
  std::memcpy(&out, result->ai_addr, sizeof out);
  freeaddrinfo(result);
  return true;
}

bool Client::Setup(std::string& error) {
  if (!Resolve(o_.host, server_, error)) return false;
  // Every connection costs a descriptor or two: as many as the hard limit allows.
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 2ull * o_.clients + 64) {
    return error = "--clients " + std::to_string(o_.clients) + " needs about " + std::to_string(2ull * o_.clients + 64) +
                   " file descriptors; RLIMIT_NOFILE allows " + std::to_string(limit.rlim_cur) + " (raise it: ulimit -n)",
           false;
  }
  if (!env_.Open(o_.ia_name, error)) return false;
  info_.ia_name = o_.ia_name;
  info_.provider = env_.provider_attr().provider_name;
  info_.reap = ReapName(o_.reap);
  if (o_.test == Test::kWriteLat)
    info_.reap = o_.notify == Notify::kSend ? std::string("notify send, reap ") + ReapName(o_.reap)
                 : o_.spin == Spin::kDequeue ? "notify memory, dequeue in the spin"
                                             : "notify memory, spin on memory only";
  info_.srq = o_.srq;
  info_.one_buffer = o_.one_buffer;
  const DAT_COUNT qlen = static_cast<DAT_COUNT>(std::min<std::uint64_t>(1u << 20, 4ull * o_.clients * 64 + 1024));
  if (!env_.MakeEvd(DAT_EVD_DTO_FLAG, qlen, recv_evd_, error) || !env_.MakeEvd(DAT_EVD_DTO_FLAG, qlen, request_evd_, error) ||
      !env_.MakeEvd(DAT_EVD_CONNECTION_FLAG, static_cast<DAT_COUNT>(2 * o_.clients + 64), connect_evd_, error))
    return false;
  std::random_device random;
  session_ = random();
  tty_ = !o_.quiet && isatty(STDERR_FILENO) != 0;
  return true;
}

bool Client::Connect(std::uint64_t size, std::uint64_t iters, std::uint32_t window, bool last, std::string& error) {
  conns_.assign(o_.clients, Conn{});
  std::unordered_map<DAT_EP_HANDLE, std::uint32_t> by_ep;
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.qos = DAT_QOS_BEST_EFFORT;
  attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_recv_dtos = static_cast<DAT_COUNT>(2 * window + 1);
  attr.max_request_dtos = static_cast<DAT_COUNT>(o_.test == Test::kWriteLat ? 2 * kWriteSignalEvery + 2 : window + 2);
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.max_rdma_read_in = 0;
  attr.max_rdma_read_out = o_.test == Test::kRead ? static_cast<DAT_COUNT>(window) : 0;
  attr.max_rdma_read_iov = 1;
  attr.max_rdma_write_iov = 1;
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  for (std::uint32_t i = 0; i < o_.clients; ++i) {
    Conn& c = conns_[i];
    c.to_post = iters / o_.clients + (i < iters % o_.clients ? 1 : 0);
    DAT_RETURN status = dat_ep_create(env_.ia(), env_.pz(), recv_evd_, request_evd_, connect_evd_, &attr, &c.ep);
    if (status != DAT_SUCCESS) return error = DatError(("dat_ep_create (connection " + std::to_string(i) + ")").c_str(), status), false;
    by_ep[c.ep] = i;
    const std::uint64_t recv_size = std::max<std::uint64_t>(size, sizeof(Ack));
    if (!env_.Register(recv_size * (IsLatency(o_.test) ? 2 * window : 1), c.recv, error)) return false;
    if (o_.test == Test::kRead && !env_.Register(size * window, c.local, error)) return false;
    if (o_.test == Test::kWriteLat && !env_.Register(size, c.local, error)) return false;  // the server writes here
    if (IsLatency(o_.test)) {
      for (std::uint32_t s = 0; s < 2 * window; ++s) {
        const DAT_LMR_TRIPLET iov = c.recv.Local(s * recv_size, recv_size);
        status = dat_ep_post_recv(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(i, s), DAT_COMPLETION_DEFAULT_FLAG);
        if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_recv", status), false;
      }
    } else if (!PostAckBuffer(c, i, error)) {
      return false;
    }
    Request request;
    request.test = static_cast<std::uint8_t>(o_.test);
    request.reap = static_cast<std::uint8_t>(o_.reap);
    request.srq = o_.srq ? 1 : 0;
    request.verify = o_.verify ? 1 : 0;
    request.one_buffer = o_.one_buffer ? 1 : 0;
    request.last = last ? 1 : 0;
    request.session = session_;
    request.clients = o_.clients;
    request.window = window;
    request.srq_buffers = o_.srq_buffers;
    request.notify = static_cast<std::uint8_t>(o_.notify);
    request.spin = static_cast<std::uint8_t>(o_.spin);
    request.size = size;
    request.iters = c.to_post;
    status = dat_ep_connect(c.ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&server_), o_.port, kStepUs, sizeof request,
                            &request, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
    if (status != DAT_SUCCESS) return error = DatError("dat_ep_connect", status), false;
  }
  for (std::uint32_t established = 0; established < o_.clients;) {
    DAT_EVENT event;
    const DAT_RETURN status = NextEvent(connect_evd_, Reap::kWait, kStepUs, event);
    if (status != DAT_SUCCESS) return error = DatError("waiting for connections to be established", status), false;
    const DAT_CONNECTION_EVENT_DATA& data = event.event_data.connect_event_data;
    if (event.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
      error = "connecting to " + o_.host + " port " + std::to_string(o_.port) + ": " + EventName(event.event_number) +
              " instead of ESTABLISHED";
      if (event.event_number == DAT_CONNECTION_EVENT_UNREACHABLE)
        error += " (is a datperf server listening there on that port, and does IA " + o_.ia_name +
                 "'s address reach it? datinfo -v shows the address)";
      else if (event.event_number == DAT_CONNECTION_EVENT_PEER_REJECTED)
        error += " (the server rejected it: is it a datperf server of this version?)";
      return false;
    }
    const auto it = by_ep.find(data.ep_handle);
    if (it == by_ep.end()) continue;
    Conn& c = conns_[it->second];
    if (data.private_data_size >= DAT_COUNT{sizeof(Reply)}) std::memcpy(&c.reply, data.private_data, sizeof(Reply));
    if ((o_.test == Test::kWrite || o_.test == Test::kRead || o_.test == Test::kWriteLat) &&
        (c.reply.magic != kMagic || c.reply.length < size * window))
      return error = "the server's reply names no region for RDMA (is it a datperf server?)", false;
    ++established;
  }
  return true;
}

void Client::Disconnect() {
  std::uint32_t live = 0;
  for (Conn& c : conns_)
    if (c.ep != DAT_HANDLE_NULL && dat_ep_disconnect(c.ep, DAT_CLOSE_GRACEFUL_FLAG) == DAT_SUCCESS) ++live;
  DAT_EVENT event;
  for (std::uint32_t ended = 0; ended < live;) {
    if (NextEvent(connect_evd_, Reap::kWait, 5'000'000, event) != DAT_SUCCESS) break;
    if (event.event_number == DAT_CONNECTION_EVENT_DISCONNECTED || event.event_number == DAT_CONNECTION_EVENT_BROKEN) ++ended;
  }
  for (DAT_EVD_HANDLE evd : {recv_evd_, request_evd_})
    while (dat_evd_dequeue(evd, &event) == DAT_SUCCESS) {
    }
  for (Conn& c : conns_) {
    if (c.ep != DAT_HANDLE_NULL) (void)dat_ep_free(c.ep);
    if (c.recv.lmr != DAT_HANDLE_NULL) env_.Release(c.recv);
    if (c.local.lmr != DAT_HANDLE_NULL) env_.Release(c.local);
  }
  conns_.clear();
}

bool Client::PostAckBuffer(Conn& c, std::uint32_t index, std::string& error) {
  const DAT_LMR_TRIPLET iov = c.recv.Local(0, sizeof(Ack));
  const DAT_RETURN status = dat_ep_post_recv(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(index, kEndSlot),
                                             DAT_COMPLETION_DEFAULT_FLAG);
  if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_recv (ack)", status), false;
  return true;
}

void Client::Progress(const char* what, std::uint64_t size, std::uint64_t done, std::uint64_t total, std::uint64_t start_ns) {
  if (!tty_) return;
  const std::uint64_t now = NowNs();
  if (now - start_ns < 2'000'000'000ull || now - last_progress_ns_ < 500'000'000ull) return;
  last_progress_ns_ = now;
  std::fprintf(stderr, "\rdatperf: %s %s: %3llu%% (%.1f s)   ", what, SizeText(size).c_str(),
               static_cast<unsigned long long>(total == 0 ? 0 : 100 * done / total), static_cast<double>(now - start_ns) / 1e9);
}

bool Client::RunLatency(std::uint64_t size, std::uint32_t window, Row& row, std::string& error) {
  std::uint64_t total = 0;
  for (const Conn& c : conns_) total += c.to_post;
  samples_.assign(total, 0);
  sent_ns_.assign(static_cast<std::size_t>(o_.clients) * window, 0);
  const std::uint64_t recv_size = std::max<std::uint64_t>(size, sizeof(Ack));
  std::uint64_t count = 0;
  const std::uint64_t start = StartClock();
  auto post_ping = [&](Conn& c, std::uint32_t index, std::uint32_t slot) -> bool {
    const DAT_LMR_TRIPLET iov = send_.Local(slot * size, size);
    sent_ns_[index * window + slot] = NowNs();
    const DAT_RETURN status = dat_ep_post_send(c.ep, size == 0 ? 0 : 1, const_cast<DAT_LMR_TRIPLET*>(&iov),
                                               Cookie(index, slot), DAT_COMPLETION_DEFAULT_FLAG);
    if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_send", status), false;
    ++c.posted;
    return true;
  };
  for (std::uint32_t i = 0; i < o_.clients; ++i)
    for (std::uint32_t s = 0; s < window && conns_[i].posted < conns_[i].to_post; ++s)
      if (!post_ping(conns_[i], i, s)) return false;
  DAT_EVENT event;
  while (count < total) {
    const DAT_RETURN status = NextEvent(recv_evd_, o_.reap, kStepUs, event);
    if (status != DAT_SUCCESS) return error = DatError("waiting for an echo", status), false;
    const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
    if (dto.status != DAT_DTO_SUCCESS) return error = "an echo completed with status " + std::to_string(dto.status), false;
    const std::uint64_t now = NowNs();
    const std::uint32_t index = ConnOf(dto.user_cookie), buffer = SlotOf(dto.user_cookie);
    Conn& c = conns_[index];
    const std::uint32_t slot = static_cast<std::uint32_t>(c.received % window);
    samples_[count++] = static_cast<std::uint32_t>(std::min<std::uint64_t>(now - sent_ns_[index * window + slot], UINT32_MAX));
    bad_bytes_ += CountBad(c.recv.data + buffer * recv_size, dto.transfered_length, slot, o_.verify) +
                  (dto.transfered_length == size ? 0 : 1);
    ++c.received;
    // The slot's send buffer is the provider's until its completion: reap up to it.
    while (c.completed < c.received) {
      const DAT_RETURN reaped = NextEvent(request_evd_, o_.reap, kStepUs, event);
      if (reaped != DAT_SUCCESS) return error = DatError("waiting for a send to complete", reaped), false;
      if (event.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) return error = "a send failed", false;
      ++conns_[ConnOf(event.event_data.dto_completion_event_data.user_cookie)].completed;
    }
    // The next ping goes out before this echo's buffer is posted again, as ucx_perftest's
    // tag_lat posts its receive after its send: the other window's worth of receive buffers is
    // posted already, so the answer never waits for this one, and the repost is off the round
    // trip.
    if (c.posted < c.to_post && !OverTime(start) && !post_ping(c, index, slot)) return false;
    const DAT_LMR_TRIPLET iov = c.recv.Local(buffer * recv_size, recv_size);
    const DAT_RETURN posted = dat_ep_post_recv(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), dto.user_cookie, DAT_COMPLETION_DEFAULT_FLAG);
    if (posted != DAT_SUCCESS) return error = DatError("dat_ep_post_recv", posted), false;
    if ((count & 1023) == 0) Progress("lat", size, count, total, start);
    bool all_done = true;
    for (const Conn& k : conns_) all_done = all_done && k.received == k.posted;
    if (all_done && OverTime(start)) break;
  }
  Summarize(count, size, start, row);
  return true;
}

// Latency rows from samples_[0, count): round trips in ns, reported as half round trips.
void Client::Summarize(std::uint64_t count, std::uint64_t size, std::uint64_t start, Row& row) {
  const double seconds = static_cast<double>(NowNs() - start) / 1e9;
  // The first tenth (at most 100) warm caches and connections up: not measured.
  const std::uint64_t warm = std::min<std::uint64_t>(100, count / 10);
  std::sort(samples_.begin() + static_cast<std::ptrdiff_t>(warm), samples_.begin() + static_cast<std::ptrdiff_t>(count));
  const std::uint64_t n = count - warm;
  double sum = 0;
  for (std::uint64_t i = warm; i < count; ++i) sum += samples_[i];
  auto percentile = [&](double p) {
    return n == 0 ? 0.0 : samples_[warm + std::min<std::uint64_t>(n - 1, static_cast<std::uint64_t>(p * static_cast<double>(n)))] / 2000.0;
  };
  row.lat_us_p50 = percentile(0.50);
  row.lat_us_p99 = percentile(0.99);
  row.lat_us_avg = n == 0 ? 0 : sum / static_cast<double>(n) / 2000.0;
  row.iters = count;
  row.seconds = seconds;
  row.msg_rate_Mps = seconds > 0 ? static_cast<double>(count) / seconds / 1e6 : 0;
  row.bw_MBps = seconds > 0 ? static_cast<double>(count * size) / seconds / 1e6 : 0;
}

// The RDMA Write ping-pong. The client tells the server where to write (a Send of its region),
// then each round it writes the server's buffer, whose last byte carries the round's tag, and
// waits for the server's Write of the same tag into its own buffer: by watching that byte
// (--notify memory) or by the zero-byte Send the server posts after its Write (--notify send).
// Every kWriteSignalEvery-th Write (and Send) is signaled and reaped as dtest -W does, with a
// dequeue loop right after the post; the others complete silently.
bool Client::RunWriteLatency(std::uint64_t size, Row& row, std::string& error) {
  Conn& c = conns_[0];
  const std::uint64_t total = c.to_post;
  const std::uint64_t recv_size = std::max<std::uint64_t>(size, sizeof(Ack));  // as Connect posted them
  samples_.assign(total, 0);
  DAT_EVENT event;
  // Where the server writes: the client's region, in a Send the server's receive takes first.
  Reply mine;
  mine.rmr_context = c.local.rmr_context;
  mine.address = reinterpret_cast<std::uint64_t>(c.local.data);
  mine.length = size;
  std::memcpy(send_.data, &mine, sizeof mine);
  DAT_LMR_TRIPLET iov = send_.Local(0, sizeof mine);
  DAT_RETURN status = dat_ep_post_send(c.ep, 1, &iov, Cookie(0, kEndSlot), DAT_COMPLETION_DEFAULT_FLAG);
  if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_send (region)", status), false;
  if ((status = NextEvent(request_evd_, Reap::kDequeue, kStepUs, event)) != DAT_SUCCESS)
    return error = DatError("sending the region", status), false;
  FillPattern(send_.data, size, 0);
  const std::uint8_t* const mailbox = c.local.data + size - 1;
  WritePingPong pong(c.ep, request_evd_, o_.notify, o_.spin);
  DAT_RMR_TRIPLET remote{};
  remote.rmr_context = c.reply.rmr_context;
  remote.virtual_address = c.reply.address;
  remote.segment_length = static_cast<DAT_SEG_LENGTH>(size);
  const DAT_LMR_TRIPLET local = send_.Local(0, size);
  std::uint64_t count = 0;
  const std::uint64_t start = StartClock();
  for (std::uint64_t round = 0; round < total; ++round) {
    const bool stop = round + 1 < total && OverTime(start);
    const std::uint8_t tag = stop ? kEndTag : RoundTag(round);
    send_.data[size - 1] = tag;
    const std::uint64_t sent = NowNs();
    if (!pong.Post(local, remote, round, error)) return false;
    if (stop) break;
    if (o_.notify == Notify::kSend) {
      if ((status = NextEvent(recv_evd_, o_.reap, kStepUs, event)) != DAT_SUCCESS)
        return error = DatError("waiting for the server's notification", status), false;
      const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
      if (dto.status != DAT_DTO_SUCCESS) return error = "a notification completed with status " + std::to_string(dto.status), false;
      const DAT_LMR_TRIPLET again = c.recv.Local(SlotOf(dto.user_cookie) * recv_size, recv_size);
      if ((status = dat_ep_post_recv(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&again), dto.user_cookie,
                                     DAT_COMPLETION_DEFAULT_FLAG)) != DAT_SUCCESS)
        return error = DatError("dat_ep_post_recv", status), false;
      if (__atomic_load_n(mailbox, __ATOMIC_ACQUIRE) != tag)
        return error = "the server's notification came before its Write's last byte", false;
    } else if (pong.Await(mailbox, tag, sent + kStepUs * 1000ull) != WritePingPong::Landed::kTag) {
      return error = "no Write from the server within " + std::to_string(kStepUs / 1'000'000) +
                     " s (with progress=poll nothing places a Write while the consumer spins on memory only: try --spin dequeue)",
             false;
    }
    samples_[count++] = static_cast<std::uint32_t>(std::min<std::uint64_t>(NowNs() - sent, UINT32_MAX));
    if ((count & 1023) == 0) Progress("write_lat", size, count, total, start);
  }
  bad_bytes_ += CountBad(c.local.data, size - 1, 0, o_.verify);
  Summarize(count, size, start, row);
  return true;
}

bool Client::PostData(Conn& c, std::uint32_t index, std::uint64_t size, std::uint32_t window, std::string& error) {
  const auto slot = static_cast<std::uint32_t>(c.posted % window);
  const std::uint64_t at = o_.one_buffer ? 0 : slot * size;  // in every buffer, local and remote
  DAT_RETURN status;
  if (o_.test == Test::kBw || o_.test == Test::kRate) {
    const DAT_LMR_TRIPLET iov = send_.Local(at, size);
    status = dat_ep_post_send(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(index, slot), DAT_COMPLETION_DEFAULT_FLAG);
  } else {
    DAT_RMR_TRIPLET remote{};
    remote.rmr_context = c.reply.rmr_context;
    remote.virtual_address = c.reply.address + at;
    remote.segment_length = static_cast<DAT_SEG_LENGTH>(size);
    if (o_.test == Test::kWrite) {
      const DAT_LMR_TRIPLET iov = send_.Local(at, size);
      status = dat_ep_post_rdma_write(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(index, slot), &remote,
                                      DAT_COMPLETION_DEFAULT_FLAG);
    } else {
      const DAT_LMR_TRIPLET iov = c.local.Local(at, size);
      status = dat_ep_post_rdma_read(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(index, slot), &remote,
                                     DAT_COMPLETION_DEFAULT_FLAG);
    }
  }
  if (status != DAT_SUCCESS) return error = DatError("posting a data operation", status), false;
  ++c.posted;
  return true;
}

bool Client::PostEnd(Conn& c, std::uint32_t index, std::string& error) {
  const DAT_RETURN status = dat_ep_post_send(c.ep, 0, nullptr, Cookie(index, kEndSlot), DAT_COMPLETION_DEFAULT_FLAG);
  if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_send (end)", status), false;
  c.end_sent = true;
  return true;
}

bool Client::RunStream(std::uint64_t size, std::uint32_t window, Row& row, std::string& error) {
  std::uint64_t total = 0, done = 0;
  for (const Conn& c : conns_) total += c.to_post;
  const std::uint64_t start = StartClock();
  bool stopping = false;
  for (std::uint32_t i = 0; i < o_.clients; ++i) {
    Conn& c = conns_[i];
    while (c.posted < c.to_post && c.posted < window)
      if (!PostData(c, i, size, window, error)) return false;
    if (c.to_post == 0 && !PostEnd(c, i, error)) return false;
  }
  std::uint32_t acked = 0, ended = 0;
  DAT_EVENT event;
  while (acked < o_.clients) {
    // A connection's ack comes on the receive EVD after its end message; look there once every
    // connection's end is done (looking at every event would drive the provider's progress, and
    // its writes, once per event rather than when the completions run out).
    while (ended == o_.clients && dat_evd_dequeue(recv_evd_, &event) == DAT_SUCCESS) {
      const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
      if (dto.status != DAT_DTO_SUCCESS) return error = "the server's ack failed to arrive whole", false;
      Conn& c = conns_[ConnOf(dto.user_cookie)];
      std::memcpy(&c.ack, c.recv.data, sizeof c.ack);
      c.acked = true;
      ++acked;
    }
    if (acked == o_.clients) break;
    const bool all_ended = ended == o_.clients;
    const DAT_RETURN status = NextEvent(all_ended ? recv_evd_ : request_evd_, o_.reap, kStepUs, event);
    if (status != DAT_SUCCESS) return error = DatError(all_ended ? "waiting for the server's ack" : "waiting for completions", status), false;
    if (all_ended) {
      const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
      Conn& c = conns_[ConnOf(dto.user_cookie)];
      std::memcpy(&c.ack, c.recv.data, sizeof c.ack);
      c.acked = true;
      ++acked;
      continue;
    }
    const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
    if (dto.status != DAT_DTO_SUCCESS) return error = "a data operation completed with status " + std::to_string(dto.status), false;
    const std::uint32_t index = ConnOf(dto.user_cookie), slot = SlotOf(dto.user_cookie);
    Conn& c = conns_[index];
    if (slot == kEndSlot) {
      c.end_done = true;
      ++ended;
      continue;
    }
    ++c.completed;
    ++done;
    // With one buffer the other Reads in flight land where this one did: the buffer is checked
    // once the connection's last Read is done (below).
    if (o_.test == Test::kRead && !o_.one_buffer) bad_bytes_ += CountBad(c.local.data + slot * size, size, slot, o_.verify);
    if (!stopping && OverTime(start)) {
      stopping = true;
      for (Conn& k : conns_) k.to_post = k.posted;
    }
    if (c.posted < c.to_post) {
      if (!PostData(c, index, size, window, error)) return false;
    } else if (c.completed == c.posted && !c.end_sent) {
      // Every Read fetched the server's slot 0 (pattern 0) into the local slot 0.
      if (o_.test == Test::kRead && o_.one_buffer) bad_bytes_ += CountBad(c.local.data, size, 0, o_.verify);
      if (!PostEnd(c, index, error)) return false;
    }
    if ((done & 1023) == 0) Progress(TestName(o_.test), size, done, total, start);
  }
  const double seconds = static_cast<double>(NowNs() - start) / 1e9;
  std::uint64_t messages = 0;
  for (const Conn& c : conns_) {
    messages += c.completed;
    bad_bytes_ += c.ack.bad_bytes;
    if ((o_.test == Test::kBw || o_.test == Test::kRate) && c.ack.messages != c.completed)
      return error = "the server received " + std::to_string(c.ack.messages) + " messages of " + std::to_string(c.completed) +
                     " sent on one connection", false;
  }
  row.iters = messages;
  row.seconds = seconds;
  row.msg_rate_Mps = seconds > 0 ? static_cast<double>(messages) / seconds / 1e6 : 0;
  row.bw_MBps = seconds > 0 ? static_cast<double>(messages * size) / seconds / 1e6 : 0;
  return true;
}

bool Client::RunSize(std::uint64_t size, bool last, Row& row, std::string& error) {
  if (size == 0 && o_.test != Test::kLat) return error = "streams need messages of at least 1 byte", false;
  std::uint32_t window = o_.window != 0 ? o_.window : DefaultWindow(o_.test);
  if (o_.test == Test::kRead) {
    const DAT_COUNT ord = env_.ia_attr().max_rdma_read_per_ep_out;
    if (ord > 0) window = std::min<std::uint32_t>(window, static_cast<std::uint32_t>(ord));
  }
  const std::uint64_t iters = o_.iters != 0 ? o_.iters : DefaultIters(o_.test, size);
  row.test = TestName(o_.test);
  row.size = size;
  row.clients = o_.clients;
  row.window = window;
  if (send_.lmr != DAT_HANDLE_NULL) env_.Release(send_);
  // --one-buffer: one slot, pattern 0, sent or written by every message (the server checks for
  // pattern 0).
  const std::uint32_t send_slots = o_.one_buffer ? 1 : window;
  // write_lat's first Send (its region) goes from the send buffer too.
  if (!env_.Register(std::max<std::uint64_t>(size, sizeof(Reply)) * send_slots, send_, error)) return false;
  for (std::uint32_t s = 0; s < send_slots; ++s) FillPattern(send_.data + s * size, size, s);
  const std::uint64_t bad_before = bad_bytes_;
  bool ok = Connect(size, iters, window, last, error) &&
            (o_.test == Test::kLat        ? RunLatency(size, window, row, error)
             : o_.test == Test::kWriteLat ? RunWriteLatency(size, row, error)
                                          : RunStream(size, window, row, error));
  Disconnect();
  if (tty_ && last_progress_ns_ != 0) std::fprintf(stderr, "\r%60s\r", "");
  row.bad_bytes = bad_bytes_ - bad_before;
  if (ok && row.bad_bytes != 0)
    return error = std::to_string(row.bad_bytes) + " bytes did not verify at size " + SizeText(size), false;
  return ok;
}

int Client::Run() {
  std::string error;
  if (!Setup(error)) {
    std::fprintf(stderr, "datperf: %s\n", error.c_str());
    return 1;
  }
  for (std::size_t i = 0; i < o_.sizes.size(); ++i) {
    const std::uint64_t size = o_.sizes[i];
    Row row;
    if (!RunSize(size, i + 1 == o_.sizes.size(), row, error)) {
      std::fprintf(stderr, "datperf: %s %s: %s\n", TestName(o_.test), SizeText(size).c_str(), error.c_str());
      return 1;
    }
    rows_.push_back(row);
  }
  return 0;
}

}  // namespace

int RunClient(const Options& options, RunInfo& info, std::vector<Row>& rows) { return Client(options, info, rows).Run(); }

}  // namespace softdat::datperf
