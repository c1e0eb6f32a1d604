// datbench: softdat-tcp through the DAT API next to a plain TCP socket pair on loopback, in one
// run, so the ratio between them means something on a shared, noisy machine.
//
//   PingPong/<size>/<mode>   one round trip per iteration: a Send into the server's SRQ, a Send
//                            back into the client's receive queue (latency)
//   Stream/<size>/<mode>     one message per iteration, kWindow in flight (bandwidth)
//
// Modes: raw_tcp (the baseline: two connected TCP sockets, TCP_NODELAY, driven by the same single
// thread through non-blocking read/write and poll), softdat_thread (IA params "tcp 127.0.0.1", a
// progress thread per IA) and softdat_poll ("tcp 127.0.0.1 progress=poll", the consumer's own
// EVD calls drive the transport). Every softdat benchmark reports latency_ratio (softdat time per
// round trip / raw) or bandwidth_ratio (softdat bytes/s / raw), against the raw_tcp run of the
// same size, measuring that baseline itself if the filter left it out.
//
// dat.conf: $DAT_OVERRIDE if set (it must name softdat-tcp and softdat-tcp-poll), else one
// written to a temporary directory naming the libsoftdat.so.2 from this binary's runfiles.
// Every wait is bounded (LoopbackPair's 5 s, poll()'s 5 s); a benchmark that hits a bound stops
// with an error instead of hanging.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tools/loopback_pair.h"

namespace softdat::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxMessage = 1 << 20;
constexpr int kWindow = 8;              // messages in flight when streaming
constexpr int kSrqBuffers = 2 * kWindow;
constexpr int kClientRecvs = 4;         // ping-pong replies need one; a few spare
constexpr int kPollTimeoutMs = 5000;
constexpr std::size_t kPingPongSizes[] = {64, 4 << 10, 64 << 10};
constexpr std::size_t kStreamSizes[] = {4 << 10, 64 << 10, 1 << 20};

enum class Mode { kRaw, kThread, kPoll };

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kRaw: return "raw_tcp";
    case Mode::kThread: return "softdat_thread";
    case Mode::kPoll: return "softdat_poll";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
// The raw baseline: a connected pair of loopback TCP sockets.

class RawPair {
 public:
  ~RawPair() {
    for (int fd : {a_, b_})
      if (fd >= 0) ::close(fd);
  }

  bool Open(std::string& error) {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof at;
    bool ok = listener >= 0 && ::bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0 &&
              ::listen(listener, 1) == 0 &&
              ::getsockname(listener, reinterpret_cast<sockaddr*>(&at), &length) == 0;
    if (ok) {
      a_ = ::socket(AF_INET, SOCK_STREAM, 0);
      ok = a_ >= 0 && ::connect(a_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0;
    }
    if (ok) {
      // The connection is already in the accept queue (loopback connect completes at once).
      b_ = ::accept(listener, nullptr, nullptr);
      ok = b_ >= 0;
    }
    if (listener >= 0) ::close(listener);
    if (!ok) {
      error = std::string("raw TCP pair: ") + std::strerror(errno);
      return false;
    }
    const int one = 1;
    for (int fd : {a_, b_}) {
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    tx_.assign(kMaxMessage, 'r');
    rx_.resize(kMaxMessage);
    return true;
  }

  int a() const { return a_; }
  int b() const { return b_; }

  // Moves `size` bytes from `from` to `to` and returns once all were read.
  bool Transfer(int from, int to, std::size_t size, std::string& error) {
    std::size_t written = 0, read = 0;
    while (read < size) {
      bool progressed = false;
      if (written < size && !Write(from, size - written, written, progressed, error)) return false;
      if (!Read(to, size - read, read, progressed, error)) return false;
      if (!progressed && !Wait(written < size ? from : -1, to, error)) return false;
    }
    return true;
  }

  // Writes one `size`-byte message from a to b while reading b, never more than `window` bytes
  // ahead of what b has read (the byte analogue of softdat's messages in flight).
  bool StreamOne(std::size_t size, std::size_t window, std::string& error) {
    std::size_t written = 0;
    while (written < size) {
      bool progressed = false;
      const std::size_t room = window - (written_total_ - read_total_);
      if (room > 0) {
        std::size_t done = 0;
        if (!Write(a_, std::min(room, size - written), done, progressed, error)) return false;
        written += done;
        written_total_ += done;
      }
      if (!Read(b_, kMaxMessage, read_total_, progressed, error)) return false;
      if (!progressed && !Wait(room > 0 ? a_ : -1, b_, error)) return false;
    }
    return true;
  }

  bool Drain(std::string& error) {
    while (read_total_ < written_total_) {
      bool progressed = false;
      if (!Read(b_, kMaxMessage, read_total_, progressed, error)) return false;
      if (!progressed && !Wait(-1, b_, error)) return false;
    }
    return true;
  }

 private:
  bool Write(int fd, std::size_t bytes, std::size_t& counter, bool& progressed, std::string& error) {
    const ssize_t n = ::send(fd, tx_.data(), std::min(bytes, tx_.size()), MSG_NOSIGNAL);
    if (n > 0) {
      counter += static_cast<std::size_t>(n);
      progressed = true;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      error = std::string("send: ") + std::strerror(errno);
      return false;
    }
    return true;
  }

  bool Read(int fd, std::size_t bytes, std::size_t& counter, bool& progressed, std::string& error) {
    const ssize_t n = ::recv(fd, rx_.data(), std::min(bytes, rx_.size()), 0);
    if (n > 0) {
      counter += static_cast<std::size_t>(n);
      progressed = true;
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      error = n == 0 ? "raw peer closed" : std::string("recv: ") + std::strerror(errno);
      return false;
    }
    return true;
  }

  static bool Wait(int writable, int readable, std::string& error) {
    pollfd fds[2] = {{readable, POLLIN, 0}, {writable, POLLOUT, 0}};
    const int ready = ::poll(fds, writable >= 0 ? 2 : 1, kPollTimeoutMs);
    if (ready > 0) return true;
    error = ready == 0 ? "raw TCP: no progress within 5 s" : std::string("poll: ") + std::strerror(errno);
    return false;
  }

  int a_ = -1, b_ = -1;
  std::vector<char> tx_, rx_;
  std::size_t written_total_ = 0, read_total_ = 0;
};

// ---------------------------------------------------------------------------------------------
// softdat: one LoopbackPair per progress mode, opened on first use and kept for the whole run.

class SoftdatBench {
 public:
  bool Open(const std::string& ia_name, std::string& error) {
    PairConfig config;
    config.ia_name = ia_name;
    config.srq_buffers = kSrqBuffers;
    config.client_recv_dtos = kClientRecvs;
    config.request_dtos = 64;
    if (!pair_.Open(config, error) || !pair_.Register(kWindow * kMaxMessage, source_, error) ||
        !pair_.Register(kMaxMessage, reply_, error) ||
        !pair_.Register(kSrqBuffers * kMaxMessage, srq_buffers_, error) ||
        !pair_.Register(kClientRecvs * kMaxMessage, client_buffers_, error))
      return false;
    for (int i = 0; i < kSrqBuffers; ++i)
      if (!PostSrq(i, error)) return false;
    for (int i = 0; i < kClientRecvs; ++i)
      if (!PostClientRecv(i, error)) return false;
    return true;
  }

  // One round trip: client Send → server SRQ receive → server Send → client receive.
  bool PingPong(std::size_t size, std::string& error) {
    DAT_DTO_COMPLETION_EVENT_DATA done;
    if (!Send(pair_.client_ep, source_.Local(0, size), error)) return false;
    ++client_sends_;
    if (!pair_.WaitDto(pair_.server_recv_evd, done, error) || !Received(done, size, error) ||
        !PostSrq(static_cast<int>(done.user_cookie.as_64), error))
      return false;
    if (!Send(pair_.server_ep, reply_.Local(0, size), error)) return false;
    ++server_sends_;
    if (!pair_.WaitDto(pair_.client_recv_evd, done, error) || !Received(done, size, error) ||
        !PostClientRecv(static_cast<int>(done.user_cookie.as_64), error))
      return false;
    return ReapSends(false, error);
  }

  // Posts one Send toward the SRQ, first waiting until fewer than kWindow are unreceived.
  bool StreamOne(std::size_t size, std::string& error) {
    while (stream_sent_ - stream_received_ >= kWindow)
      if (!ReceiveStreamed(size, true, error)) return false;
    if (!Send(pair_.client_ep, source_.Local((client_sends_ % kWindow) * kMaxMessage, size), error)) return false;
    ++client_sends_;
    ++stream_sent_;
    while (ReceiveStreamed(size, false, error)) {
    }
    return error.empty() && ReapSends(false, error);
  }

  bool DrainStream(std::size_t size, std::string& error) {
    while (stream_received_ < stream_sent_)
      if (!ReceiveStreamed(size, true, error)) return false;
    return ReapSends(true, error);
  }

 private:
  bool Send(DAT_EP_HANDLE ep, DAT_LMR_TRIPLET iov, std::string& error) {
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = 0;
    const DAT_RETURN status = dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    if (status != DAT_SUCCESS) error = DatError("dat_ep_post_send", status);
    return status == DAT_SUCCESS;
  }

  bool PostSrq(int buffer, std::string& error) {
    DAT_LMR_TRIPLET iov = srq_buffers_.Local(buffer * kMaxMessage, kMaxMessage);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = buffer;
    const DAT_RETURN status = dat_srq_post_recv(pair_.srq, 1, &iov, cookie);
    if (status != DAT_SUCCESS) error = DatError("dat_srq_post_recv", status);
    return status == DAT_SUCCESS;
  }

  bool PostClientRecv(int buffer, std::string& error) {
    DAT_LMR_TRIPLET iov = client_buffers_.Local(buffer * kMaxMessage, kMaxMessage);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = buffer;
    const DAT_RETURN status = dat_ep_post_recv(pair_.client_ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    if (status != DAT_SUCCESS) error = DatError("dat_ep_post_recv", status);
    return status == DAT_SUCCESS;
  }

  static bool Received(const DAT_DTO_COMPLETION_EVENT_DATA& done, std::size_t size, std::string& error) {
    if (done.transfered_length == size) return true;
    error = "received " + std::to_string(done.transfered_length) + " bytes, sent " + std::to_string(size);
    return false;
  }

  // One streamed receive: waits for it (bounded) if `block`, else only takes one already there.
  bool ReceiveStreamed(std::size_t size, bool block, std::string& error) {
    DAT_DTO_COMPLETION_EVENT_DATA done;
    bool failed = false;
    if (block ? !pair_.WaitDto(pair_.server_recv_evd, done, error)
              : !pair_.TryDto(pair_.server_recv_evd, done, failed, error))
      return false;
    ++stream_received_;
    return Received(done, size, error) && PostSrq(static_cast<int>(done.user_cookie.as_64), error);
  }

  // Send completions carry nothing the benchmark needs, but they must leave their EVDs and
  // request queues: take those already there, and wait when a queue nears its bound or `all`.
  bool ReapSends(bool all, std::string& error) {
    struct Side {
      DAT_EVD_HANDLE evd;
      long& posted;
      long& completed;
    } sides[] = {{pair_.client_request_evd, client_sends_, client_sends_done_},
                 {pair_.server_request_evd, server_sends_, server_sends_done_}};
    for (Side& side : sides) {
      DAT_DTO_COMPLETION_EVENT_DATA done;
      bool failed = false;
      while (pair_.TryDto(side.evd, done, failed, error)) ++side.completed;
      if (failed) return false;
      while (side.posted - side.completed > (all ? 0 : 32)) {
        if (!pair_.WaitDto(side.evd, done, error)) return false;
        ++side.completed;
      }
    }
    return true;
  }

  LoopbackPair pair_;
  Region source_, reply_, srq_buffers_, client_buffers_;
  long client_sends_ = 0, client_sends_done_ = 0, server_sends_ = 0, server_sends_done_ = 0;
  long stream_sent_ = 0, stream_received_ = 0;
};

std::map<Mode, std::unique_ptr<SoftdatBench>> benches;
std::map<Mode, std::string> open_errors;

SoftdatBench* Bench(Mode mode, std::string& error) {
  if (auto found = benches.find(mode); found != benches.end()) return found->second.get();
  if (auto failed = open_errors.find(mode); failed != open_errors.end()) {
    error = failed->second;
    return nullptr;
  }
  auto bench = std::make_unique<SoftdatBench>();
  if (!bench->Open(mode == Mode::kThread ? "softdat-tcp" : "softdat-tcp-poll", error)) {
    open_errors[mode] = error;
    return nullptr;
  }
  return (benches[mode] = std::move(bench)).get();
}

// Seconds per operation of the raw baseline, by benchmark kind and size, as last measured.
std::map<std::pair<std::string, std::size_t>, double> raw_seconds_per_op;

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The baseline when no raw_tcp run preceded this one (a --benchmark_filter left it out): a
// short, bounded measurement of its own.
double RawBaseline(const std::string& kind, std::size_t size) {
  const auto key = std::make_pair(kind, size);
  if (auto found = raw_seconds_per_op.find(key); found != raw_seconds_per_op.end()) return found->second;
  RawPair raw;
  std::string error;
  if (!raw.Open(error)) return 0;
  const Clock::time_point start = Clock::now();
  long ops = 0;
  while (ops < 100000 && Seconds(start) < 0.3) {
    const bool ok = kind == "PingPong" ? raw.Transfer(raw.a(), raw.b(), size, error) &&
                                             raw.Transfer(raw.b(), raw.a(), size, error)
                                       : raw.StreamOne(size, kWindow * size, error);
    if (!ok) return 0;
    ++ops;
  }
  if (kind != "PingPong" && !raw.Drain(error)) return 0;
  return raw_seconds_per_op[key] = Seconds(start) / static_cast<double>(ops);
}

void ReportRatio(benchmark::State& state, const std::string& kind, std::size_t size, double seconds_per_op) {
  const double raw = RawBaseline(kind, size);
  if (raw <= 0 || seconds_per_op <= 0) return;
  // Both ratios are softdat / raw: time per round trip for latency, bytes per second for bandwidth.
  if (kind == "PingPong")
    state.counters["latency_ratio"] = seconds_per_op / raw;
  else
    state.counters["bandwidth_ratio"] = raw / seconds_per_op;
}

void PingPong(benchmark::State& state, Mode mode, std::size_t size) {
  std::string error;
  RawPair raw;
  SoftdatBench* bench = nullptr;
  if (mode == Mode::kRaw ? !raw.Open(error) : (bench = Bench(mode, error)) == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  const Clock::time_point start = Clock::now();
  for (auto _ : state) {
    const bool ok = mode == Mode::kRaw
                        ? raw.Transfer(raw.a(), raw.b(), size, error) && raw.Transfer(raw.b(), raw.a(), size, error)
                        : bench->PingPong(size, error);
    if (!ok) {
      state.SkipWithError(error.c_str());
      break;
    }
  }
  if (state.error_occurred()) return;
  const double per_op = Seconds(start) / static_cast<double>(state.iterations());
  state.counters["us_per_rtt"] = per_op * 1e6;
  if (mode == Mode::kRaw)
    raw_seconds_per_op[{"PingPong", size}] = per_op;
  else
    ReportRatio(state, "PingPong", size, per_op);
}

void Stream(benchmark::State& state, Mode mode, std::size_t size) {
  std::string error;
  RawPair raw;
  SoftdatBench* bench = nullptr;
  if (mode == Mode::kRaw ? !raw.Open(error) : (bench = Bench(mode, error)) == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  const Clock::time_point start = Clock::now();
  for (auto _ : state) {
    const bool ok = mode == Mode::kRaw ? raw.StreamOne(size, kWindow * size, error) : bench->StreamOne(size, error);
    if (!ok) {
      state.SkipWithError(error.c_str());
      break;
    }
  }
  // At most kWindow messages are still on their way: take them in, so the next run starts empty.
  // Google Benchmark's own time stops before this; MB_per_s and the ratio include it, for both
  // sides alike.
  const bool drained = mode == Mode::kRaw ? raw.Drain(error) : bench->DrainStream(size, error);
  if (state.error_occurred()) return;
  if (!drained) {
    state.SkipWithError(error.c_str());
    return;
  }
  const double per_op = Seconds(start) / static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
  state.counters["MB_per_s"] = static_cast<double>(size) / per_op / 1e6;
  if (mode == Mode::kRaw)
    raw_seconds_per_op[{"Stream", size}] = per_op;
  else
    ReportRatio(state, "Stream", size, per_op);
}

void RegisterAll() {
  constexpr Mode kModes[] = {Mode::kRaw, Mode::kThread, Mode::kPoll};
  for (const std::size_t size : kPingPongSizes)
    for (const Mode mode : kModes)
      benchmark::RegisterBenchmark(("PingPong/" + std::to_string(size) + "/" + ModeName(mode)).c_str(),
                                   PingPong, mode, size)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
  for (const std::size_t size : kStreamSizes)
    for (const Mode mode : kModes)
      benchmark::RegisterBenchmark(("Stream/" + std::to_string(size) + "/" + ModeName(mode)).c_str(), Stream,
                                   mode, size)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
}

// The library next to this binary: runfiles under `bazel run`, else bazel-bin's layout.
std::string FindLibrary() {
  if (const char* explicit_path = std::getenv("SOFTDAT_LIB")) return explicit_path;
  std::vector<std::filesystem::path> candidates;
  if (const char* runfiles = std::getenv("RUNFILES_DIR"))
    candidates.push_back(std::filesystem::path(runfiles) / "softdat/dat/libsoftdat.so.2");
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.string() + ".runfiles/softdat/dat/libsoftdat.so.2");
    candidates.push_back(self.parent_path().parent_path() / "dat/libsoftdat.so.2");
  }
  for (const auto& candidate : candidates)
    if (std::filesystem::exists(candidate, ec)) return std::filesystem::canonical(candidate, ec).string();
  return "";
}

// libdat2 reads DAT_OVERRIDE when it is loaded, before main: unless the variable is already set,
// this writes the two IAs' dat.conf lines to a temporary directory, points DAT_OVERRIDE at them
// and re-executes this binary once (as testing/registry_main.cc does). Returns the directory the
// re-executed run removes at exit ("" if the user's DAT_OVERRIDE is used).
constexpr const char* kConfDirVariable = "DATBENCH_CONF_DIR";

std::string InstallDatConf(char** argv) {
  if (const char* dir = std::getenv(kConfDirVariable)) return dir;
  if (std::getenv("DAT_OVERRIDE") != nullptr) return "";
  const std::string library = FindLibrary();
  if (library.empty()) {
    std::fprintf(stderr, "datbench: cannot find libsoftdat.so.2; set SOFTDAT_LIB or DAT_OVERRIDE\n");
    std::exit(2);
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/datbench.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::perror("datbench: mkdtemp");
    std::exit(2);
  }
  const std::string path = pattern + "/dat.conf";
  FILE* conf = std::fopen(path.c_str(), "w");
  if (conf == nullptr) {
    std::perror("datbench: dat.conf");
    std::exit(2);
  }
  std::fprintf(conf, "softdat-tcp u2.0 nonthreadsafe default %s softdat.2.0 \"tcp 127.0.0.1\" \"\"\n",
               library.c_str());
  std::fprintf(conf,
               "softdat-tcp-poll u2.0 nonthreadsafe default %s softdat.2.0 \"tcp 127.0.0.1 progress=poll\" \"\"\n",
               library.c_str());
  std::fclose(conf);
  ::setenv("DAT_OVERRIDE", path.c_str(), 1);
  ::setenv(kConfDirVariable, pattern.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  std::perror("datbench: re-exec failed");
  std::filesystem::remove_all(pattern);
  std::exit(2);
}

}  // namespace
}  // namespace softdat::tools

int main(int argc, char** argv) {
  const std::string conf_dir = softdat::tools::InstallDatConf(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  softdat::tools::RegisterAll();
  benchmark::AddCustomContext("dat.conf", std::getenv("DAT_OVERRIDE"));
  benchmark::AddCustomContext("note", "shared, noisy machine: compare ratios, not absolute numbers");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // Close the IAs (each disconnects, bounded) while libdat2 is still fully alive.
  softdat::tools::benches.clear();
  if (!conf_dir.empty()) std::filesystem::remove_all(conf_dir);
  return 0;
}
