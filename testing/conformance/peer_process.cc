// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// PeerProcess: send_peer through testing/subprocess.h, its stdout read with poll.
#include "testing/conformance/peer_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing/dat_conf.h"
#include "testing/subprocess.h"

namespace softdat::conformance {

PeerProcess::PeerProcess(const std::vector<std::string>& args) {
  int out[2];
  if (pipe(out) != 0) return;
  std::vector<std::string> argv = {testing::RunfilePath("testing/conformance/send_peer")};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = testing::SpawnProcess(argv, {}, -1, out[1]);
  close(out[1]);
  out_ = out[0];
}

PeerProcess::~PeerProcess() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    (void)waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0) close(out_);
}

bool PeerProcess::ReadUntil(const std::string& word, std::chrono::seconds bound, const std::function<void()>& between) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (said_.find(word) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    if (between) between();
    pollfd readable{out_, POLLIN, 0};
    if (poll(&readable, 1, 10) != 1) continue;
    char chunk[256];
    const ssize_t got = read(out_, chunk, sizeof chunk);
    if (got <= 0) break;
    said_.append(chunk, static_cast<std::size_t>(got));
  }
  return said_.find(word) != std::string::npos;
}

std::string IaAddressText(const DAT_IA_ATTR& attr) {
  char address[INET_ADDRSTRLEN] = {};
  const auto* in = reinterpret_cast<const sockaddr_in*>(attr.ia_address_ptr);
  if (in == nullptr || inet_ntop(AF_INET, &in->sin_addr, address, sizeof address) == nullptr) return "";
  return address;
}

}  // namespace softdat::conformance
