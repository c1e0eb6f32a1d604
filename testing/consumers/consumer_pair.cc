// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Server and clients of a stock consumer as child processes: a private loopback when the kernel
// lets us make one, readiness read from the socket table, every wait bounded.
#include "testing/consumers/consumer_pair.h"

#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "testing/consumers/handoff_relay.h"
#include "testing/dat_conf.h"
#include "testing/private_network.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

// How long a server may take to listen, and how long a port taken by someone else (only
// possible on the shared loopback) may stay taken, before the run gives up.
constexpr auto kListenBound = 30s;
constexpr auto kPortFreeBound = 60s;
constexpr auto kPoll = 50ms;

// The consumers' fixed ports inside the kernel's ephemeral range (32768-60999 here): dtest's and
// dtestsrq's 45248, and dapltest's cases at 46100-46599 (a case's server listens on its port and
// the ports just after it).
constexpr char kDapltestPorts[] = "46100-46599";

// Keeps the namespace's own connections off the consumers' fixed ports. A socket without
// SO_REUSEADDR (dtest's hand-off connection, the relay's) that drew one of them as its source port
// and closed first left a TIME_WAIT there for 60 s, and every dtest server in that time failed
// dat_psp_create with DAT_CONN_QUAL_IN_USE (a clean-clone run of 69c9c29: two tests in a
// row). Reserved ports are never chosen as source ports; an explicit bind still takes them.
void ReserveFixedPorts() {
  const std::string ports = std::to_string(kDtestPsp) + "," + kDapltestPorts;
  std::ofstream reserved("/proc/sys/net/ipv4/ip_local_reserved_ports");
  reserved << ports << std::flush;
  if (!reserved)
    std::fprintf(stderr, "consumer_pair: cannot reserve the consumers' ports %s in the private namespace\n",
                 ports.c_str());
}

bool EnterOnce() {
  int error = 0;
  switch (EnterPrivateNetwork(&error)) {
    case PrivateNetwork::kEntered:
      ReserveFixedPorts();
      return true;
    case PrivateNetwork::kNoNamespace:
      std::fprintf(stderr, "consumer_pair: no private network namespace (%s); using the shared loopback\n",
                   std::strerror(error));
      return false;
    case PrivateNetwork::kNoLoopback:
      break;
  }
  // A namespace without loopback is useless and there is no way back: fail loudly.
  std::fprintf(stderr, "consumer_pair: cannot bring up lo in the private namespace (%s)\n", std::strerror(error));
  std::abort();
}

// One table of /proc/<thread>/net: a row per socket, "sl local rem st ...", the local address as
// hex "ADDR:PORT" and the state as hex, 0A for LISTEN.
bool ListeningIn(const char* table, std::uint16_t port) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string slot, local, remote, state;
    if (!(row >> slot >> local >> remote >> state)) continue;
    const std::size_t colon = local.rfind(':');
    if (colon == std::string::npos || state != "0A") continue;
    if (std::stoul(local.substr(colon + 1), nullptr, 16) == port) return true;
  }
  return false;
}

std::string Command(const std::vector<std::string>& argv) {
  std::string text = "$";
  for (const std::string& arg : argv) text += " " + arg;
  return text;
}

std::string Ending(const SubprocessResult& result) {
  if (result.timed_out) return "[killed at its time bound]";
  if (result.signal != 0) return "[killed by signal " + std::to_string(result.signal) + "]";
  return "[exit " + std::to_string(result.exit_code) + "]";
}

}  // namespace

bool EnterPrivateLoopback() {
  static const bool entered = EnterOnce();
  return entered;
}

const Environment& SoftdatTcpEnvironment() {
  static const Environment environment = {
      {"DAT_OVERRIDE", InstallDatConf({{"softdat-tcp", "tcp 127.0.0.1"}})},
      // Read only by a ThreadSanitizer runtime, which RunSubprocess preloads under --config=tsan.
      {"TSAN_OPTIONS", "halt_on_error=0:exitcode=0"}};
  return environment;
}

std::string SoftdatSanitizerReports(const std::string& output) {
  std::istringstream lines(output);
  std::string line, found;
  while (std::getline(lines, line)) {
    if (line.rfind("SUMMARY: ", 0) != 0) continue;
    if (line.rfind("SUMMARY: ThreadSanitizer:", 0) == 0 && line.find("(/usr/bin/") != std::string::npos) continue;
    found += line + "\n";
  }
  return found;
}

bool ReservedInThisNamespace(std::uint16_t port) {
  // "45248,46100-46599": ports and ranges, comma-separated.
  std::ifstream in("/proc/sys/net/ipv4/ip_local_reserved_ports");
  std::string item;
  while (std::getline(in, item, ',')) {
    unsigned long low = 0, high = 0;
    const int n = std::sscanf(item.c_str(), "%lu-%lu", &low, &high);
    if (n == 1) high = low;
    if (n >= 1 && low <= port && port <= high) return true;
  }
  return false;
}

bool Listening(std::uint16_t port) {
  return ListeningIn("/proc/thread-self/net/tcp", port) || ListeningIn("/proc/thread-self/net/tcp6", port);
}

std::string WithoutSanitizerReports(const std::string& output) {
  std::istringstream lines(output);
  std::string line, kept;
  bool in_report = false;
  while (std::getline(lines, line)) {
    if (line.rfind("==================", 0) == 0) {
      in_report = !in_report;
      continue;
    }
    if (in_report || line.rfind("ThreadSanitizer: reported ", 0) == 0) continue;
    kept += line + "\n";
  }
  return kept;
}

bool UnderThreadSanitizer() {
  return dl_iterate_phdr(
             [](dl_phdr_info* info, size_t, void*) {
               return info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "libtsan.so") != nullptr ? 1 : 0;
             },
             nullptr) != 0;
}

bool ExitedCleanly(const SubprocessResult& result) {
  return !result.timed_out && result.signal == 0 && result.exit_code == 0 &&
         SoftdatSanitizerReports(result.output).empty();
}

std::size_t Occurrences(std::string_view haystack, std::string_view needle) {
  std::size_t count = 0;
  for (std::size_t at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + needle.size()))
    ++count;
  return count;
}

std::string ConsumerPairResult::Describe() const {
  std::string text;
  if (!port_was_free) text += "port " + std::to_string(spec.ready_port) + " stayed taken; nothing ran\n";
  if (port_was_free && !server_listened)
    text += "the server never listened on port " + std::to_string(spec.ready_port) + "; no client ran\n";
  if (!handoff_error.empty()) text += "the server's hand-off was not relayed (" + handoff_error + "); no client ran\n";
  if (port_was_free) {
    text += "--- server " + Command(spec.server) + " " + Ending(server) + "\n" + server.output;
  }
  for (std::size_t i = 0; i < clients.size(); ++i)
    text += "--- client " + Command(spec.clients[i]) + " " + Ending(clients[i]) + "\n" + clients[i].output;
  return text;
}

ConsumerPairResult RunConsumerPair(const ConsumerPairSpec& spec, const Environment& environment) {
  ConsumerPairResult result;
  result.spec = spec;
  // Only on the shared loopback can someone else hold the port: wait for them, bounded.
  for (const auto deadline = std::chrono::steady_clock::now() + kPortFreeBound;
       Listening(spec.ready_port) && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(kPoll);
  result.port_was_free = !Listening(spec.ready_port);
  if (!result.port_was_free) return result;

  std::atomic<bool> server_ended{false};
  std::thread server([&] {
    result.server = RunSubprocess(spec.server, environment, spec.server_bound);
    server_ended = true;
  });
  for (const auto deadline = std::chrono::steady_clock::now() + kListenBound;
       !Listening(spec.ready_port) && !server_ended && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(kPoll);
  result.server_listened = Listening(spec.ready_port);
  HandoffRelay relay;
  if (result.server_listened && spec.handoff_bytes != 0)
    (void)relay.Start(spec.ready_port, spec.handoff_bytes, spec.handoff_then_port, kListenBound, result.handoff_error,
                      spec.handoff_reply);
  if (result.server_listened && result.handoff_error.empty()) {
    for (const std::vector<std::string>& client : spec.clients)
      result.clients.push_back(RunSubprocess(client, environment, spec.client_bound));
  }
  server.join();
  return result;
}

}  // namespace softdat::testing
