// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test helper: runs a program (a stock DAT consumer, say) with extra environment, collects its
// merged stdout and stderr, and kills its whole process group when a time bound expires; or only
// starts one (SpawnProcess) for a test that talks to it.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace softdat::testing {

struct SubprocessResult {
  bool timed_out = false;
  int exit_code = -1;  // valid when exited normally
  int signal = 0;      // the terminating signal, if any
  std::string output;  // stdout and stderr, interleaved as written
};

SubprocessResult RunSubprocess(const std::vector<std::string>& argv,
                               const std::vector<std::pair<std::string, std::string>>& env,
                               std::chrono::milliseconds time_bound);

// Starts argv[0] (searched in PATH when it has no '/') in a process group of its own, with this
// process's environment plus `env` (and, under a sanitizer, its runtime preloaded), stdin from
// `stdin_fd` and stdout and stderr to `stdout_fd` (-1: /dev/null for stdin, inherited for
// output). Returns the pid, or -1 when fork fails. Everything the child needs is built before
// fork: between fork and exec it only makes async-signal-safe calls, because another thread of a
// test (a progress thread) may hold a lock — the sanitizer allocator's, say — at the fork.
int SpawnProcess(const std::vector<std::string>& argv,
                 const std::vector<std::pair<std::string, std::string>>& env, int stdin_fd, int stdout_fd);

}  // namespace softdat::testing
