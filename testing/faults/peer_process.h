// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test helper: a fault_peer process (peer_main.cc) a test talks to — commands on its stdin, its
// report lines read back with a bound — plus the parsed form of a `round` line. The process runs
// in a process group of its own (optionally inside a network namespace) and is killed with it
// when the helper goes away.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "testing/ledger/process_resources.h"

namespace softdat::testing::faults {

// What a `round` line says.
struct Round {
  bool parsed = false;
  bool clean = false;
  bool established = false;
  std::uint64_t sent = 0, received = 0, writes = 0, reads = 0, low_watermarks = 0, violations = 0;
  int fds = 0;
  std::uint64_t rss = 0;
  std::string end;     // how the connection ended
  std::string ledger;  // the ledger's summary
  std::string line;    // the whole line
};
Round ParseRound(const std::string& line);
// The number after `key=` in `line`, or 0.
std::uint64_t Field(const std::string& line, const std::string& key);

class PeerProcess {
 public:
  PeerProcess() = default;
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  // The fault_peer binary of this test's runfiles.
  static std::string Binary();

  // Starts fault_peer with `args`, the extra environment `env`, inside network namespace `netns`
  // unless empty (ip netns exec), and waits for its `ready` line (false if it said `error` or
  // nothing within the bound; transcript() says what it printed).
  bool Start(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env = {},
             const std::string& netns = "", std::chrono::milliseconds bound = std::chrono::seconds(30));
  void Send(const std::string& line);
  // The next line starting with `prefix` (earlier lines are skipped, kept in the transcript);
  // nullopt if none comes within `bound` or the process closed its output.
  std::optional<std::string> WaitLine(const std::string& prefix, std::chrono::milliseconds bound);
  // A round line (and its `violation` lines, appended to Round::line).
  Round WaitRound(std::chrono::milliseconds bound);
  // `listen` and the port it got (0 on failure).
  std::uint16_t Listen();
  // Asks `status` until `ready(status line)` holds or the bound passes.
  bool WaitStatus(bool (*ready)(const std::string&), std::chrono::milliseconds bound);
  void Signal(int signal_number);
  // Sends quit (unless killed), then waits for the exit: its status, or -1 after killing it at
  // the bound. A killed process gives 128 + the signal.
  int Finish(std::chrono::milliseconds bound = std::chrono::seconds(60));
  pid_t pid() const { return pid_; }
  // The descriptors it had open once ready (its IA open, nothing connected yet).
  int ready_fds() const { return ready_fds_; }
  const std::string& transcript() const { return transcript_; }

 private:
  bool ReadMore(std::chrono::steady_clock::time_point deadline);

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  bool exited_ = false;
  int ready_fds_ = -1;
  int status_ = -1;
  std::string pending_;     // read, not yet returned as lines
  std::string transcript_;  // everything it printed
};

}  // namespace softdat::testing::faults
