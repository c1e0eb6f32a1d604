// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Parsing datperf's options with getopt_long, and the defaults of each test.
#include "tools/datperf/options.h"

#include <getopt.h>

#include <algorithm>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace softdat::datperf {
namespace {

constexpr const char kUsage[] =
    "usage: datperf -P IA [options]            server: serves clients until killed (or --once)\n"
    "       datperf -P IA -h HOST [options]    client: runs a test against the server at HOST\n"
    "\n"
    "A DAT benchmark through the stock registry (any DAT provider). The two ends agree on the test\n"
    "through the connection's private data.\n"
    "\n"
    "  -P, --ia NAME        the IA (a dat.conf name), required\n"
    "  -h, --host HOST      client: the server's IPv4 address or name\n"
    "  -p, --port N         the server's connection qualifier (default 18515)\n"
    "  -t, --test T         lat (Send ping-pong, half round trip), bw (Send stream), rate (Send\n"
    "                       message rate), write (RDMA Write stream), read (RDMA Read stream),\n"
    "                       write_lat (RDMA Write ping-pong, half round trip: each side writes the\n"
    "                       other's buffer and spins on its own, as ib_write_lat and dtest -W do)\n"
    "  -s, --size LIST      message sizes, e.g. 8 or 8,4k,64k,1m (k, m, g: powers of 1024)\n"
    "  -a, --all            sweep sizes 8 B to 1 MiB by powers of 4\n"
    "  -n, --iters N        messages per size (default depends on test and size)\n"
    "      --duration S     stop a size after S seconds even if fewer messages went\n"
    "  -w, --window N       operations in flight per connection (default: lat 1, others 16)\n"
    "      --srq            the server's EPs take their receive buffers from one shared SRQ\n"
    "      --srq-buffers N  the SRQ's size (default window x clients, at most 256)\n"
    "      --clients N      N connections from this client, the messages spread over them\n"
    "      --reap wait|dequeue  reap completions with dat_evd_wait (default), or by spinning on\n"
    "                       dat_evd_dequeue as MPI-style consumers do; the server does the same\n"
    "      --notify memory|send  write_lat: a side sees the peer's Write in its memory (default), or\n"
    "                       by the completion of a zero-byte Send that follows it (reaped per --reap)\n"
    "      --spin memory|dequeue  write_lat --notify memory: the spin on memory reads memory only\n"
    "                       (default; progress must come from the provider, as on an RNIC), or\n"
    "                       also calls dat_evd_dequeue on the request EVD each pass, as\n"
    "                       ucx_perftest's put_lat calls ucp_worker_progress\n"
    "      --verify         check every byte received (default: a sample of each message)\n"
    "      --one-buffer     bw, rate, write, read: every message from one buffer and into one\n"
    "                       buffer on each side, as ucx_perftest and perftest do (default: a buffer\n"
    "                       per message in flight, each with its own pattern)\n"
    "      --json           print one JSON document (rows: test, size, lat_us_p50, lat_us_p99,\n"
    "                       bw_MBps, msg_rate_Mps, iters, ...) instead of the table\n"
    "      --csv            print CSV instead of the table\n"
    "      --plot FILE.svg  also draw latency and bandwidth against size\n"
    "      --once           server: exit after the first client session\n"
    "  -q, --quiet          no progress line\n"
    "  -V, --version        print the version and exit\n"
    "      --help           print this text and exit (-h names the host, as in perftest)\n"
    "\n"
    "Exit status: 0 success; 1 a DAT call failed or data did not verify (one line says which);\n"
    "2 usage error.\n";

bool ParseCount(const char* text, std::uint64_t& out) {
  if (text == nullptr || *text == '\0' || *text == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0) return false;
  std::uint64_t scale = 1;
  if (*end == 'k' || *end == 'K') scale = 1ull << 10, ++end;
  else if (*end == 'm' || *end == 'M') scale = 1ull << 20, ++end;
  else if (*end == 'g' || *end == 'G') scale = 1ull << 30, ++end;
  if (*end != '\0') return false;
  if (value > UINT64_MAX / scale) return false;
  out = value * scale;
  return true;
}

bool ParseSizes(const char* text, std::vector<std::uint64_t>& out) {
  out.clear();
  std::string list(text);
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::string word = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::uint64_t size = 0;
    if (!ParseCount(word.c_str(), size) || size > (1ull << 30)) return false;
    out.push_back(size);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return !out.empty();
}

enum LongOnly : int { kDuration = 1000, kSrq, kSrqBuffers, kClients, kReap, kNotify, kSpin, kVerify, kOneBuffer, kJson, kCsv, kPlot, kOnce, kHelp };

}  // namespace

const char* Usage() { return kUsage; }

const char* TestName(Test test) {
  switch (test) {
    case Test::kLat: return "lat";
    case Test::kBw: return "bw";
    case Test::kRate: return "rate";
    case Test::kWrite: return "write";
    case Test::kRead: return "read";
    case Test::kWriteLat: return "write_lat";
  }
  return "?";
}

const char* ReapName(Reap reap) { return reap == Reap::kWait ? "wait" : "dequeue"; }

bool IsLatency(Test test) { return test == Test::kLat || test == Test::kWriteLat; }

std::uint64_t DefaultIters(Test test, std::uint64_t size) {
  // About the same bytes per run at large sizes, enough samples at small ones.
  const std::uint64_t by_bytes = std::max<std::uint64_t>(200, (256ull << 20) / std::max<std::uint64_t>(size, 1));
  switch (test) {
    case Test::kLat:
    case Test::kWriteLat: return std::min<std::uint64_t>(20000, std::max<std::uint64_t>(200, (64ull << 20) / std::max<std::uint64_t>(size, 1)));
    case Test::kRate: return std::min<std::uint64_t>(200000, by_bytes);
    default: return std::min<std::uint64_t>(100000, by_bytes);
  }
}

std::uint32_t DefaultWindow(Test test) { return IsLatency(test) ? 1 : 16; }

int ParseOptions(int argc, char** argv, Options& out, std::string& error) {
  static const option kLong[] = {
      {"ia", required_argument, nullptr, 'P'},      {"host", required_argument, nullptr, 'h'},
      {"port", required_argument, nullptr, 'p'},    {"test", required_argument, nullptr, 't'},
      {"size", required_argument, nullptr, 's'},    {"all", no_argument, nullptr, 'a'},
      {"iters", required_argument, nullptr, 'n'},   {"window", required_argument, nullptr, 'w'},
      {"quiet", no_argument, nullptr, 'q'},         {"duration", required_argument, nullptr, kDuration},
      {"srq", no_argument, nullptr, kSrq},          {"srq-buffers", required_argument, nullptr, kSrqBuffers},
      {"clients", required_argument, nullptr, kClients}, {"reap", required_argument, nullptr, kReap},
      {"notify", required_argument, nullptr, kNotify}, {"spin", required_argument, nullptr, kSpin},
      {"verify", no_argument, nullptr, kVerify},    {"json", no_argument, nullptr, kJson},
      {"one-buffer", no_argument, nullptr, kOneBuffer},
      {"csv", no_argument, nullptr, kCsv},          {"plot", required_argument, nullptr, kPlot},
      {"once", no_argument, nullptr, kOnce},        {"help", no_argument, nullptr, kHelp},
      {"version", no_argument, nullptr, 'V'},       {nullptr, 0, nullptr, 0}};
  optind = 1;
  opterr = 0;
  int c;
  std::uint64_t value = 0;
  while ((c = getopt_long(argc, argv, ":P:h:p:t:s:an:w:qV", kLong, nullptr)) != -1) {
    switch (c) {
      case 'P': out.ia_name = optarg; break;
      case 'h': out.host = optarg; break;
      case 'p':
        if (!ParseCount(optarg, value) || value == 0 || value > 65535) return error = "bad port: " + std::string(optarg), 2;
        out.port = static_cast<std::uint16_t>(value);
        break;
      case 't': {
        const std::string t = optarg;
        if (t == "lat") out.test = Test::kLat;
        else if (t == "bw") out.test = Test::kBw;
        else if (t == "rate") out.test = Test::kRate;
        else if (t == "write") out.test = Test::kWrite;
        else if (t == "read") out.test = Test::kRead;
        else if (t == "write_lat") out.test = Test::kWriteLat;
        else return error = "unknown test '" + t + "' (lat, bw, rate, write, read, write_lat)", 2;
        break;
      }
      case 's':
        if (!ParseSizes(optarg, out.sizes)) return error = "bad size list: " + std::string(optarg), 2;
        break;
      case 'a':
        out.sizes.clear();
        for (std::uint64_t size = 8; size <= (1u << 20); size *= 4) out.sizes.push_back(size);
        out.sizes.push_back(1u << 20);
        break;
      case 'n':
        if (!ParseCount(optarg, out.iters) || out.iters == 0) return error = "bad iteration count: " + std::string(optarg), 2;
        break;
      case 'w':
        if (!ParseCount(optarg, value) || value == 0 || value > 65536) return error = "bad window: " + std::string(optarg), 2;
        out.window = static_cast<std::uint32_t>(value);
        break;
      case 'q': out.quiet = true; break;
      case kDuration: {
        char* end = nullptr;
        out.duration_s = std::strtod(optarg, &end);
        if (end == optarg || *end != '\0' || !(out.duration_s > 0)) return error = "bad duration: " + std::string(optarg), 2;
        break;
      }
      case kSrq: out.srq = true; break;
      case kSrqBuffers:
        if (!ParseCount(optarg, value) || value == 0 || value > (1u << 20)) return error = "bad SRQ size: " + std::string(optarg), 2;
        out.srq_buffers = static_cast<std::uint32_t>(value);
        break;
      case kClients:
        if (!ParseCount(optarg, value) || value == 0 || value > 100000) return error = "bad client count: " + std::string(optarg), 2;
        out.clients = static_cast<std::uint32_t>(value);
        break;
      case kReap: {
        const std::string r = optarg;
        if (r == "wait") out.reap = Reap::kWait;
        else if (r == "dequeue") out.reap = Reap::kDequeue;
        else return error = "--reap takes wait or dequeue, not '" + r + "'", 2;
        break;
      }
      case kNotify: {
        const std::string n = optarg;
        if (n == "memory") out.notify = Notify::kMemory;
        else if (n == "send") out.notify = Notify::kSend;
        else return error = "--notify takes memory or send, not '" + n + "'", 2;
        break;
      }
      case kSpin: {
        const std::string n = optarg;
        if (n == "memory") out.spin = Spin::kMemory;
        else if (n == "dequeue") out.spin = Spin::kDequeue;
        else return error = "--spin takes memory or dequeue, not '" + n + "'", 2;
        break;
      }
      case kVerify: out.verify = true; break;
      case kOneBuffer: out.one_buffer = true; break;
      case kJson: out.json = true; break;
      case kCsv: out.csv = true; break;
      case kPlot: out.plot = optarg; break;
      case kOnce: out.once = true; break;
      case kHelp: return 3;
      case 'V': return 4;
      case ':': return error = std::string("option ") + argv[optind - 1] + " needs a value", 2;
      default: return error = std::string("unknown option ") + argv[optind - 1], 2;
    }
  }
  if (optind < argc) return error = std::string("unexpected argument '") + argv[optind] + "'", 2;
  if (out.ia_name.empty()) return error = "an IA is required (-P NAME)", 2;
  if (out.json && out.csv) return error = "--json and --csv exclude each other", 2;
  if (out.one_buffer && (out.srq || IsLatency(out.test)))
    return error = "--one-buffer is for -t bw, rate, write or read without --srq", 2;
  if (out.test == Test::kWriteLat && (out.srq || out.clients != 1 || (out.window != 0 && out.window != 1)))
    return error = "write_lat is one connection, one Write in flight (no --srq, --clients or -w)", 2;
  if (out.test == Test::kWriteLat && std::find(out.sizes.begin(), out.sizes.end(), 0u) != out.sizes.end())
    return error = "write_lat needs Writes of at least 1 byte (the last byte carries the tag)", 2;
  out.server = out.host.empty();
  return 0;
}

}  // namespace softdat::datperf
