// Test helper: runs a program (a stock DAT consumer, say) with extra environment, collects its
// merged stdout and stderr, and kills its whole process group when a time bound expires.
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

}  // namespace softdat::testing
