// Two hosts on one machine: two network namespaces made for this run, joined by a veth pair with a
// /30 between them, stock `dtest -s` in one and stock `dtest -h <peer>` in the other, each with a
// dat.conf of its own whose IA params name that namespace's address. Both must print PASSED. So
// softdat-tcp is shown to work between two addresses, not only on loopback.
//
// Needs CAP_NET_ADMIN and CAP_SYS_ADMIN (ip netns add mounts /run/netns): where they are missing,
// the test is skipped (GTEST_SKIP, so the skip is counted) after checking that the failure really
// is a permission one; any other failure of the setup fails the test. The namespaces are deleted
// on every way out: the guard's destructor, and SIGTERM/SIGINT (Bazel's timeout) through a handler.
// Nothing outside the two namespaces is touched: the veth ends are created inside them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/dat_conf.h"
#include "testing/subprocess.h"

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPassed = "DAPL Test Complete. PASSED";
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
// processes left in our namespaces (dtest runs in its own process group), then delete them.
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

// Owns the two namespaces of this run: creates them one by one and deletes what it created.
class TwoNamespaces {
 public:
  TwoNamespaces(const std::string& ip, const std::string& a, const std::string& b) : ip_(ip), names_{a, b} {
    std::string script;
    for (const std::string& name : names_)
      script += ip + " netns pids " + name + " 2>/dev/null | xargs -r kill -9; " + ip + " netns del " + name +
                " 2>/dev/null; ";
    std::snprintf(g_cleanup_script, sizeof g_cleanup_script, "%s", script.c_str());
    struct sigaction action {};
    action.sa_handler = DeleteNamespacesFromSignal;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
  }

  ~TwoNamespaces() {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    for (int i = 0; i < 2; ++i) {
      if (!created_[i]) continue;
      const SubprocessResult result = RunSubprocess({ip_, "netns", "del", names_[i]}, {}, 10s);
      if (result.exit_code != 0) ADD_FAILURE() << "could not delete netns " << names_[i] << ": " << result.output;
    }
  }

  SubprocessResult Add(int i) {
    SubprocessResult result = RunSubprocess({ip_, "netns", "add", names_[i]}, {}, 10s);
    created_[i] = result.exit_code == 0;
    return result;
  }

 private:
  std::string ip_;
  std::string names_[2];
  bool created_[2] = {false, false};
};

// Runs one setup command; returns "" on success, else the command and what it printed.
std::string RunSetupCommand(const std::vector<std::string>& argv) {
  const SubprocessResult result = RunSubprocess(argv, {}, 10s);
  if (result.exit_code == 0) return "";
  std::string command;
  for (const std::string& arg : argv) command += arg + " ";
  return command + "-> exit " + std::to_string(result.exit_code) + ": " + result.output;
}

TEST(DtestAcrossNamespaces, ServerAndClientPassOverAVethPair) {
  const std::string ip = IpTool();
  ASSERT_FALSE(ip.empty()) << "no ip(8): install iproute2 (tools/dev does)";
  if (!HasCapability(kCapNetAdmin) || !HasCapability(kCapSysAdmin))
    GTEST_SKIP() << "needs CAP_NET_ADMIN and CAP_SYS_ADMIN to make network namespaces (euid " << geteuid()
                 << "); run as root, e.g. sudo tools/dev test";

  // Unique per run: the pid is in every name and in the subnet.
  const int pid = static_cast<int>(getpid());
  const std::string tag = std::to_string(pid);
  const std::string ns_a = "softdat-" + tag + "-a", ns_b = "softdat-" + tag + "-b";
  const std::string veth_a = "sdv" + tag + "a", veth_b = "sdv" + tag + "b";  // < 16 bytes
  const std::string subnet =
      "10." + std::to_string(200 + (pid >> 8) % 50) + "." + std::to_string(pid & 0xff) + ".";
  const std::string address_a = subnet + "1", address_b = subnet + "2";

  TwoNamespaces namespaces(ip, ns_a, ns_b);
  const SubprocessResult added = namespaces.Add(0);
  if (added.exit_code != 0) {
    if (IsPermissionFailure(added.output))
      GTEST_SKIP() << "ip netns add is not permitted here (a container without the rights to mount "
                      "/run/netns?): "
                   << added.output;
    FAIL() << "ip netns add " << ns_a << " failed (exit " << added.exit_code << "): " << added.output;
  }
  const SubprocessResult added_b = namespaces.Add(1);
  ASSERT_EQ(added_b.exit_code, 0) << "ip netns add " << ns_b << ": " << added_b.output;

  // The veth ends are born inside the namespaces: the host's own links are never touched.
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {ip, "-n", ns_a, "link", "add", veth_a, "type", "veth", "peer", "name", veth_b, "netns", ns_b},
           {ip, "-n", ns_a, "addr", "add", address_a + "/30", "dev", veth_a},
           {ip, "-n", ns_b, "addr", "add", address_b + "/30", "dev", veth_b},
           {ip, "-n", ns_a, "link", "set", "lo", "up"},
           {ip, "-n", ns_b, "link", "set", "lo", "up"},
           {ip, "-n", ns_a, "link", "set", veth_a, "up"},
           {ip, "-n", ns_b, "link", "set", veth_b, "up"},
       }) {
    const std::string failure = RunSetupCommand(command);
    ASSERT_EQ(failure, "");
  }

  // 100 bursts of 4 MiB RDMA Writes each way instead of dtest's 2000: the point here is two hosts,
  // and under --config=tsan the default's 16 GB through instrumented copies outlasts the bounds.
  const char* const kBurst = "100";
  // One IA name, a dat.conf per namespace: a dtest client learns the server's IA name from the
  // server and opens that one (its -P is only the first guess), so the name must mean "this
  // namespace's address" on each side.
  const std::string conf_a = InstallDatConf({{"softdat-ns", "tcp " + address_a}}, "dat-a.conf");
  const std::string conf_b = InstallDatConf({{"softdat-ns", "tcp " + address_b}}, "dat-b.conf");
  SubprocessResult server;
  std::atomic<bool> server_done = false;
  std::thread server_thread([&] {
    server = RunSubprocess({ip, "netns", "exec", ns_a, "dtest", "-s", "-P", "softdat-ns", "-B", kBurst},
                           {{"DAT_OVERRIDE", conf_a}}, 90s);
    server_done = true;
  });
  // Ends whatever still runs in namespace A (and only there), so a failed client does not leave
  // the test waiting out the server's bound.
  const auto end_server = [&] {
    const SubprocessResult pids = RunSubprocess({ip, "netns", "pids", ns_a}, {}, 5s);
    std::istringstream in(pids.output);
    for (long process; in >> process;) kill(static_cast<pid_t>(process), SIGKILL);
  };
  // dtest's client does not retry: start it once the server listens. A dtest server first
  // listens on a plain socket (port 15828) that hands its DAT address to the client, then on its
  // PSP (45248); either one means it is up. ss looks without connecting.
  bool listening = false;
  for (int i = 0; i < 200 && !listening; ++i) {
    const SubprocessResult ss = RunSubprocess({ip, "netns", "exec", ns_a, "ss", "-Hltn"}, {}, 5s);
    listening = ss.exit_code == 0 && (ss.output.find(":15828 ") != std::string::npos ||
                                      ss.output.find(":45248 ") != std::string::npos);
    if (!listening) std::this_thread::sleep_for(50ms);
  }
  SubprocessResult client;
  if (listening)
    client = RunSubprocess({ip, "netns", "exec", ns_b, "dtest", "-P", "softdat-ns", "-B", kBurst, "-h", address_a},
                           {{"DAT_OVERRIDE", conf_b}}, 60s);
  for (int i = 0; i < 300 && !server_done; ++i) std::this_thread::sleep_for(50ms);
  if (!server_done) end_server();
  server_thread.join();

  SCOPED_TRACE("server (" + ns_a + ", " + address_a + "):\n" + server.output);
  SCOPED_TRACE("client (" + ns_b + ", " + address_b + "):\n" + client.output);
  ASSERT_TRUE(listening) << "the dtest server never listened on " << address_a << ":45248";
  EXPECT_NE(client.exit_code, 127) << "dtest not found: install dapl2-utils (tools/dev does)";
  EXPECT_FALSE(server.timed_out);
  EXPECT_FALSE(client.timed_out);
  EXPECT_EQ(server.signal, 0);
  EXPECT_EQ(client.signal, 0);
  EXPECT_NE(server.output.find(kPassed), std::string::npos);
  EXPECT_NE(client.output.find(kPassed), std::string::npos);
}

}  // namespace
}  // namespace softdat::testing
