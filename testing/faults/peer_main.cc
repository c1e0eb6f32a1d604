// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fault_peer: one PeerNode (peer_node.h) driven by line commands on stdin, reporting on stdout,
// so that a test can start two consumer processes, put faults between them (kill one, a proxy,
// a link going down) and read what each one saw.
//
//   fault_peer [--ia=NAME] [--id=N] [--messages=N] [--min-size=B] [--max-size=B] [--window=N]
//              [--srq=N] [--writes=0|1] [--reads=0|1] [--read-size=B] [--reads-outstanding=N]
//              [--drain-ms=N] [--idle-ms=N] [--progress-every=N] [--srq-churn=0|1] [--nofile=N]
//
// Commands (one a line):      Answers:
//   listen [port]              listening <port>
//   accept [seconds]           round ...      (one connection as the passive side)
//   connect <ipv4> <port>      round ...      (one connection as the active side)
//   status                     status ...     (also answered in the middle of a connection)
//   resources                  resources fds=N rss=N peak=N
//   spawn                      spawned <pid>  (a `sleep 60` child, also in the middle of a connection)
//   fds-left N                 fds-left N     (RLIMIT_NOFILE lowered so that N more descriptors fit)
//   quit (or end of input)     bye violations=N; exit status 0, or 3 if the ledger found any
// A round line reads `round clean=0|1 established=0|1 sent=N received=N writes=N reads=N lw=N
// violations=N fds=N rss=N end=<how it ended> | <ledger summary>`, then one `violation <text>`
// line per finding. Startup prints `ready` or `error <why>` (exit status 4).
#include <dirent.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "testing/faults/peer_node.h"

namespace softdat::testing::faults {
namespace {

// Lines from stdin, without blocking when asked not to.
class Input {
 public:
  // The next complete line; with `wait` blocks until one comes (false at end of input).
  bool Next(std::string& line, bool wait) {
    for (;;) {
      const std::size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      if (eof_) return false;
      pollfd p{STDIN_FILENO, POLLIN, 0};
      if (poll(&p, 1, wait ? -1 : 0) <= 0) return false;
      char chunk[256];
      const ssize_t got = read(STDIN_FILENO, chunk, sizeof chunk);
      if (got <= 0) {
        eof_ = true;
        if (!buffer_.empty()) buffer_ += '\n';
        continue;
      }
      buffer_.append(chunk, static_cast<std::size_t>(got));
    }
  }

 private:
  std::string buffer_;
  bool eof_ = false;
};

void Say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

std::string Resources(const ProcessResources& r) {
  return "fds=" + std::to_string(r.fds) + " rss=" + std::to_string(r.rss_bytes) +
         " peak=" + std::to_string(r.peak_rss_bytes);
}

void SayRound(const RoundReport& r, const DtoLedger& ledger) {
  Say("round clean=" + std::to_string(r.clean ? 1 : 0) + " established=" + std::to_string(r.established ? 1 : 0) +
      " sent=" + std::to_string(r.sent) + " received=" + std::to_string(r.received) +
      " writes=" + std::to_string(r.writes_verified) + " reads=" + std::to_string(r.reads_verified) +
      " lw=" + std::to_string(r.low_watermark_events) + " violations=" + std::to_string(r.violations.size()) + " " +
      Resources(r.resources) + " end=" + r.end + " | " + ledger.Summary());
  for (const std::string& v : r.violations) Say("violation " + v);
}

// A helper program the consumer starts mid-connection, as a launcher or a shell-out would:
// `sleep 60` in a process group of its own (a kill of the peer's group leaves it running). It
// inherits every descriptor of this process that is not close-on-exec.
void Spawn() {
  char sleep_path[] = "/bin/sleep";
  char seconds[] = "60";
  char* argv[] = {sleep_path, seconds, nullptr};
  const pid_t child = fork();
  if (child == 0) {
    setpgid(0, 0);
    execv(sleep_path, argv);
    _exit(127);
  }
  Say("spawned " + std::to_string(child));
}

// Lowers RLIMIT_NOFILE so that exactly `left` more descriptors can be opened: new descriptors
// take the lowest free numbers, and the limit bounds the numbers, not the count.
bool LeaveFds(unsigned left) {
  // Back to the hard limit first: the last lowering may have left no descriptor to look with.
  rlimit value{};
  if (getrlimit(RLIMIT_NOFILE, &value) != 0) return false;
  value.rlim_cur = value.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &value) != 0) return false;
  std::vector<bool> used;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return false;
  const int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const int fd = std::atoi(entry->d_name);
    if (fd == own) continue;
    if (static_cast<std::size_t>(fd) >= used.size()) used.resize(fd + 1, false);
    used[fd] = true;
  }
  closedir(dir);
  rlim_t limit = 0;
  for (unsigned free_below = 0;; ++limit) {
    if (limit >= used.size() || !used[limit]) {
      if (free_below == left) break;
      ++free_below;
    }
  }
  value.rlim_cur = limit;  // the soft limit only: it can be raised again
  return setrlimit(RLIMIT_NOFILE, &value) == 0;
}

bool ParseOptions(int argc, char** argv, PeerOptions& o, long& nofile) {
  std::map<std::string, std::string> given;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "fault_peer: not an option: %s\n", arg.c_str());
      return false;
    }
    given[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
  }
  auto number = [&](const char* key, std::uint32_t& out) {
    if (auto it = given.find(key); it != given.end()) {
      out = static_cast<std::uint32_t>(std::strtoul(it->second.c_str(), nullptr, 10));
      given.erase(it);
    }
  };
  auto flag = [&](const char* key, bool& out) {
    if (auto it = given.find(key); it != given.end()) {
      out = it->second != "0";
      given.erase(it);
    }
  };
  if (auto it = given.find("ia"); it != given.end()) {
    o.ia_name = it->second;
    given.erase(it);
  }
  std::uint32_t nofile32 = 0;
  number("id", o.id);
  number("messages", o.messages);
  number("min-size", o.min_size);
  number("max-size", o.max_size);
  number("window", o.window);
  number("srq", o.srq_size);
  number("read-size", o.read_size);
  number("reads-outstanding", o.reads_outstanding);
  number("write-size", o.write_size);
  number("drain-ms", o.drain_ms);
  number("idle-ms", o.idle_ms);
  number("progress-every", o.progress_every);
  number("nofile", nofile32);
  flag("writes", o.writes);
  flag("reads", o.reads);
  flag("srq-churn", o.srq_churn);
  nofile = nofile32;
  if (!given.empty()) {
    std::fprintf(stderr, "fault_peer: unknown option --%s\n", given.begin()->first.c_str());
    return false;
  }
  if (o.window == 0 || o.srq_size == 0 || o.reads_outstanding == 0 || o.max_size < o.min_size) {
    std::fprintf(stderr, "fault_peer: window, srq and reads-outstanding must be positive, min-size <= max-size\n");
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  PeerOptions options;
  long nofile = 0;
  if (!ParseOptions(argc, argv, options, nofile)) return 2;
  if (nofile > 0) {
    const rlimit limit{static_cast<rlim_t>(nofile), static_cast<rlim_t>(nofile)};
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      Say(std::string("error setrlimit: ") + std::strerror(errno));
      return 4;
    }
  }
  Input input;
  PeerNode node(options);
  node.poll_command = [&] {
    std::string line;
    if (!input.Next(line, false)) return std::string();
    if (line == "spawn") {
      Spawn();
      return std::string();
    }
    return line;
  };
  node.on_idle = [](const std::string& status) { Say("status " + status); };
  node.on_progress = [](const RoundReport& r) {
    Say("progress received=" + std::to_string(r.received) + " writes=" + std::to_string(r.writes_verified) +
        " reads=" + std::to_string(r.reads_verified));
  };
  std::string error;
  if (!node.Open(error)) {
    Say("error " + error);
    return 4;
  }
  Say("ready " + Resources(SampleProcessResources()));
  std::string line;
  while (input.Next(line, true)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "listen") {
      DAT_CONN_QUAL port = 0;
      words >> port;
      if (node.Listen(port, error)) {
        Say("listening " + std::to_string(port));
      } else {
        Say("error " + error);
      }
    } else if (command == "accept") {
      unsigned seconds = 30;
      words >> seconds;
      SayRound(node.Accept(static_cast<DAT_TIMEOUT>(seconds) * 1'000'000), node.ledger());
    } else if (command == "connect") {
      std::string address;
      DAT_CONN_QUAL port = 0;
      words >> address >> port;
      SayRound(node.Connect(address, port), node.ledger());
    } else if (command == "spawn") {
      Spawn();
    } else if (command == "fds-left") {
      unsigned left = 0;
      words >> left;
      Say(LeaveFds(left) ? "fds-left " + std::to_string(left) : std::string("error setrlimit: ") + std::strerror(errno));
    } else if (command == "status") {
      Say("status idle");
    } else if (command == "resources") {
      Say("resources " + Resources(SampleProcessResources()));
    } else if (command == "quit") {
      break;
    } else if (!command.empty()) {
      Say("error unknown command " + command);
    }
  }
  const bool closed = node.Close(error);
  const std::size_t violations = node.ledger().Violations(false).size() + (closed ? 0 : 1);
  if (!closed) Say("violation close: " + error);
  Say("bye violations=" + std::to_string(violations));
  return violations == 0 ? 0 : 3;
}

}  // namespace
}  // namespace softdat::testing::faults

int main(int argc, char** argv) { return softdat::testing::faults::Main(argc, argv); }
