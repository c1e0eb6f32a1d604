// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VethPair: ip(8) commands, each bounded in time.
#include "testing/netns/veth_pair.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

#include "testing/subprocess.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kCapNetAdmin = 12;
constexpr int kCapSysAdmin = 21;

std::string IpTool() {
  for (const char* path : {"/usr/bin/ip", "/bin/ip", "/usr/sbin/ip", "/sbin/ip"})
    if (access(path, X_OK) == 0) return path;
  return "";
}

bool HasCapability(int capability) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    const unsigned long long effective = std::stoull(line.substr(7), nullptr, 16);
    return (effective >> capability) & 1;
  }
  return false;
}

bool IsPermissionFailure(const std::string& output) {
  return output.find("Operation not permitted") != std::string::npos ||
         output.find("Permission denied") != std::string::npos;
}

// What a signal handler runs, prepared in advance so the handler only forks and execs: end the
// processes left in our namespaces, then delete them.
char g_cleanup_script[512];

void DeleteNamespacesFromSignal(int signal_number) {
  const pid_t pid = fork();
  if (pid == 0) {
    char shell[] = "/bin/sh";
    char dash_c[] = "-c";
    char* argv[] = {shell, dash_c, g_cleanup_script, nullptr};
    execv(shell, argv);
    _exit(127);
  }
  if (pid > 0) waitpid(pid, nullptr, 0);
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

// Runs one command; returns "" on success, else the command and what it printed.
std::string Run(const std::vector<std::string>& argv) {
  const SubprocessResult result = RunSubprocess(argv, {}, 10s);
  if (result.exit_code == 0) return "";
  std::string command;
  for (const std::string& arg : argv) command += arg + " ";
  return command + "-> exit " + std::to_string(result.exit_code) + ": " + result.output;
}

}  // namespace

VethPair::VethPair() : ip_(IpTool()) {
  const int pid = static_cast<int>(getpid());
  const std::string tag = std::to_string(pid);
  const std::string subnet = "10." + std::to_string(200 + (pid >> 8) % 50) + "." + std::to_string(pid & 0xff) + ".";
  for (int side = 0; side < 2; ++side) {
    ns_[side] = "softdat-" + tag + (side == 0 ? "-a" : "-b");
    veth_[side] = "sdv" + tag + (side == 0 ? "a" : "b");  // < 16 bytes
    address_[side] = subnet + (side == 0 ? "1" : "2");
  }
}

VethPair::~VethPair() {
  if (!created_[0] && !created_[1]) return;
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  for (int side = 0; side < 2; ++side) {
    if (!created_[side]) continue;
    // Whatever still runs in the namespace goes first (a peer a failed test left behind).
    const SubprocessResult pids = RunSubprocess({ip_, "netns", "pids", ns_[side]}, {}, 5s);
    std::size_t at = 0;
    while (at < pids.output.size()) {
      const long process = std::strtol(pids.output.c_str() + at, nullptr, 10);
      if (process > 0) kill(static_cast<pid_t>(process), SIGKILL);
      const std::size_t newline = pids.output.find('\n', at);
      if (newline == std::string::npos) break;
      at = newline + 1;
    }
    const std::string failure = Run({ip_, "netns", "del", ns_[side]});
    if (!failure.empty()) std::fprintf(stderr, "VethPair: could not delete netns %s: %s\n", ns_[side].c_str(), failure.c_str());
  }
}

VethPair::Result VethPair::Create(std::string& why) {
  if (ip_.empty()) {
    why = "no ip(8): install iproute2 (tools/dev does)";
    return Result::kFailed;
  }
  if (!HasCapability(kCapNetAdmin) || !HasCapability(kCapSysAdmin)) {
    why = "needs CAP_NET_ADMIN and CAP_SYS_ADMIN to make network namespaces (euid " + std::to_string(geteuid()) +
          "); run as root, e.g. sudo tools/dev test";
    return Result::kNotPermitted;
  }
  std::string script;
  for (const std::string& name : ns_)
    script += ip_ + " netns pids " + name + " 2>/dev/null | xargs -r kill -9; " + ip_ + " netns del " + name +
              " 2>/dev/null; ";
  std::snprintf(g_cleanup_script, sizeof g_cleanup_script, "%s", script.c_str());
  struct sigaction action {};
  action.sa_handler = DeleteNamespacesFromSignal;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  for (int side = 0; side < 2; ++side) {
    const SubprocessResult added = RunSubprocess({ip_, "netns", "add", ns_[side]}, {}, 10s);
    created_[side] = added.exit_code == 0;
    if (created_[side]) continue;
    why = "ip netns add " + ns_[side] + " (exit " + std::to_string(added.exit_code) + "): " + added.output;
    if (side == 0 && IsPermissionFailure(added.output)) {
      why = "ip netns add is not permitted here (a container without the rights to mount /run/netns?): " +
            added.output;
      return Result::kNotPermitted;
    }
    return Result::kFailed;
  }
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {ip_, "-n", ns_[0], "link", "add", veth_[0], "type", "veth", "peer", "name", veth_[1], "netns", ns_[1]},
           {ip_, "-n", ns_[0], "addr", "add", address_[0] + "/30", "dev", veth_[0]},
           {ip_, "-n", ns_[1], "addr", "add", address_[1] + "/30", "dev", veth_[1]},
           {ip_, "-n", ns_[0], "link", "set", "lo", "up"},
           {ip_, "-n", ns_[1], "link", "set", "lo", "up"},
           {ip_, "-n", ns_[0], "link", "set", veth_[0], "up"},
           {ip_, "-n", ns_[1], "link", "set", veth_[1], "up"},
       }) {
    why = Run(command);
    if (!why.empty()) return Result::kFailed;
  }
  return Result::kReady;
}

std::string VethPair::SetLink(int side, bool up) {
  return Run({ip_, "-n", ns_[side], "link", "set", veth_[side], up ? "up" : "down"});
}

}  // namespace softdat::testing
