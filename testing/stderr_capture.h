// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// For tests that check softdat's log lines: what this process writes to stderr (fd 2) while a
// StderrCapture lives goes to a pipe the test reads, with a bound, instead of the terminal.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace softdat::testing {

// What this process writes to stderr while the object lives (it restores fd 2 when it goes).
class StderrCapture {
 public:
  StderrCapture() {
    if (pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return;
    saved_ = dup(STDERR_FILENO);
    dup2(pipe_[1], STDERR_FILENO);
  }
  ~StderrCapture() {
    if (saved_ >= 0) dup2(saved_, STDERR_FILENO), close(saved_);
    if (pipe_[0] >= 0) close(pipe_[0]), close(pipe_[1]);
  }
  // Waits up to `bound` for `text` in what was written; false if it never came.
  bool WaitFor(const std::string& text, std::chrono::milliseconds bound) {
    const auto until = std::chrono::steady_clock::now() + bound;
    while (written_.find(text) == std::string::npos && std::chrono::steady_clock::now() < until) {
      pollfd readable{pipe_[0], POLLIN, 0};
      if (poll(&readable, 1, 50) != 1) continue;
      char chunk[512];
      const ssize_t got = read(pipe_[0], chunk, sizeof chunk);
      if (got > 0) written_.append(chunk, static_cast<std::size_t>(got));
    }
    return written_.find(text) != std::string::npos;
  }
  const std::string& written() const { return written_; }

 private:
  int pipe_[2] = {-1, -1};
  int saved_ = -1;
  std::string written_;
};

}  // namespace softdat::testing
