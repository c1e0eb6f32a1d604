// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// PeerProcess: pipes to and from a fault_peer, lines with deadlines.
#include "testing/faults/peer_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "testing/subprocess.h"

namespace softdat::testing::faults {

using Clock = std::chrono::steady_clock;

std::uint64_t Field(const std::string& line, const std::string& key) {
  const std::string needle = " " + key + "=";
  const std::size_t at = line.find(needle);
  if (at == std::string::npos) return 0;
  return std::strtoull(line.c_str() + at + needle.size(), nullptr, 10);
}

Round ParseRound(const std::string& line) {
  Round round;
  round.line = line;
  if (line.rfind("round ", 0) != 0) return round;
  round.parsed = true;
  round.clean = Field(line, "clean") == 1;
  round.established = Field(line, "established") == 1;
  round.sent = Field(line, "sent");
  round.received = Field(line, "received");
  round.writes = Field(line, "writes");
  round.reads = Field(line, "reads");
  round.low_watermarks = Field(line, "lw");
  round.violations = Field(line, "violations");
  round.fds = static_cast<int>(Field(line, "fds"));
  round.rss = Field(line, "rss");
  const std::size_t end = line.find(" end=");
  const std::size_t bar = line.find(" | ");
  if (end != std::string::npos) round.end = line.substr(end + 5, bar == std::string::npos ? std::string::npos : bar - end - 5);
  if (bar != std::string::npos) round.ledger = line.substr(bar + 3);
  return round;
}

PeerProcess::~PeerProcess() {
  if (pid_ > 0 && !exited_) {
    kill(-pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
}

std::string PeerProcess::Binary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir != nullptr ? srcdir : ".") + "/softdat/testing/faults/fault_peer";
}

bool PeerProcess::Start(const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& env, const std::string& netns,
                        std::chrono::milliseconds bound) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return false;
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]);
    close(in[1]);
    return false;
  }
  std::vector<std::string> argv;
  if (!netns.empty()) argv = {"ip", "netns", "exec", netns};
  argv.push_back(Binary());
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = SpawnProcess(argv, env, in[0], out[1]);
  close(in[0]);
  close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  if (pid_ < 0) return false;
  const std::optional<std::string> ready = WaitLine("ready", bound);
  if (ready) ready_fds_ = static_cast<int>(Field(*ready, "fds"));
  return ready.has_value();
}

void PeerProcess::Send(const std::string& line) {
  if (to_child_ < 0) return;
  const std::string text = line + "\n";
  // A peer that died makes this fail (EPIPE is ignored: SIGPIPE must not end the test).
  signal(SIGPIPE, SIG_IGN);
  (void)!write(to_child_, text.data(), text.size());
}

bool PeerProcess::ReadMore(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0 || from_child_ < 0) return false;
  pollfd p{from_child_, POLLIN, 0};
  const int ready = poll(&p, 1, static_cast<int>(left.count()));
  if (ready < 0 && errno == EINTR) return true;
  if (ready <= 0) return false;
  char chunk[4096];
  const ssize_t got = read(from_child_, chunk, sizeof chunk);
  if (got <= 0) {
    close(from_child_);
    from_child_ = -1;
    return false;
  }
  pending_.append(chunk, static_cast<std::size_t>(got));
  transcript_.append(chunk, static_cast<std::size_t>(got));
  return true;
}

std::optional<std::string> PeerProcess::WaitLine(const std::string& prefix, std::chrono::milliseconds bound) {
  const auto deadline = Clock::now() + bound;
  for (;;) {
    for (std::size_t newline; (newline = pending_.find('\n')) != std::string::npos;) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      if (line.rfind(prefix, 0) == 0) return line;
      if (line.rfind("error", 0) == 0 && prefix != "error") return std::nullopt;
    }
    if (!ReadMore(deadline)) return std::nullopt;
  }
}

Round PeerProcess::WaitRound(std::chrono::milliseconds bound) {
  const std::optional<std::string> line = WaitLine("round ", bound);
  if (!line) return Round{};
  Round round = ParseRound(*line);
  // Its violation lines follow at once.
  for (std::uint64_t i = 0; i < round.violations; ++i) {
    const std::optional<std::string> violation = WaitLine("violation ", std::chrono::seconds(5));
    if (!violation) break;
    round.line += "\n  " + *violation;
  }
  return round;
}

std::uint16_t PeerProcess::Listen() {
  Send("listen");
  const std::optional<std::string> line = WaitLine("listening ", std::chrono::seconds(20));
  return line ? static_cast<std::uint16_t>(std::strtoul(line->c_str() + 10, nullptr, 10)) : 0;
}

bool PeerProcess::WaitStatus(bool (*ready)(const std::string&), std::chrono::milliseconds bound) {
  const auto deadline = Clock::now() + bound;
  while (Clock::now() < deadline) {
    Send("status");
    const std::optional<std::string> line = WaitLine("status ", std::chrono::seconds(5));
    if (line && ready(*line)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void PeerProcess::Signal(int signal_number) {
  if (pid_ > 0 && !exited_) kill(-pid_, signal_number);
}

int PeerProcess::Finish(std::chrono::milliseconds bound) {
  if (pid_ <= 0) return -1;
  if (exited_) return status_;
  Send("quit");
  if (to_child_ >= 0) {
    close(to_child_);
    to_child_ = -1;
  }
  const auto deadline = Clock::now() + bound;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    // Keep reading, so a chatty peer never blocks on a full pipe.
    if (from_child_ >= 0) ReadMore(std::min(deadline, Clock::now() + std::chrono::milliseconds(20)));
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (Clock::now() > deadline) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      exited_ = true;
      status_ = -1;
      return status_;
    }
  }
  while (from_child_ >= 0 && ReadMore(Clock::now() + std::chrono::milliseconds(200))) {
  }
  exited_ = true;
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return status_;
}

}  // namespace softdat::testing::faults
