// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The peer process of the two-process cases (send_peer): started in a process group of its own
// with its stdout on a pipe, read until it says a word, and killed with its group when the object
// goes (an early test failure leaves no process behind).
#pragma once

#include <dat2/udat.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace softdat::conformance {

class PeerProcess {
 public:
  // Runs testing/conformance/send_peer with `args`; started() says whether it could.
  explicit PeerProcess(const std::vector<std::string>& args);
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Reads the peer's stdout until it contains `word` or `bound` passes, calling `between` (a
  // progress=poll test's pump) every 10 ms meanwhile. True once the word came.
  bool ReadUntil(const std::string& word, std::chrono::seconds bound, const std::function<void()>& between = {});
  const std::string& said() const { return said_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string said_;
};

// The IA's own IPv4 address as text (127.0.0.1 for softdat-tcp, the device's for a verbs IA).
std::string IaAddressText(const DAT_IA_ATTR& attr);

}  // namespace softdat::conformance
