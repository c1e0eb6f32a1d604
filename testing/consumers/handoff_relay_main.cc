// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// handoff_relay: HandoffRelay as a command, for the tests that run stock dtest from a shell or in
// another network namespace (testing/install, testing/netns). It takes dtest's hand-off, and
// once the server's PSP listens, serves it again and creates READY_FILE; the client started after
// that file exists cannot connect before the PSP listens.
//
//   handoff_relay PORT BYTES THEN_PORT SECONDS READY_FILE [CLIENT_ADDRESS PROVIDER]
//
// THEN_PORT 0: the server's next listener is one the kernel's socket table does not show
// (rdma_cm's on RoCE); the relay pauses instead (kUnseenListenerPause).
//
// With CLIENT_ADDRESS (IPv4) and PROVIDER, the hand-off is dtestx's, which goes both ways: the
// relay answers the server as a dtestx client at that address using that provider would
// (DtestxReply), and drops the client's own answer.
//
// Exits 0 once the hand-off was served (or the bound passed with nobody taking it), 1 with the
// reason on stderr when the server's hand-off or its PSP never came within SECONDS.
#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "testing/consumers/handoff_relay.h"

namespace {

bool Number(const char* text, unsigned long max, unsigned long& out) {
  char* end = nullptr;
  out = std::strtoul(text, &end, 10);
  return end != text && *end == '\0' && out <= max;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned long port = 0, bytes = 0, then_port = 0, seconds = 0;
  sockaddr_in client{};
  const bool dtestx = argc == 8;
  if (dtestx && inet_pton(AF_INET, argv[6], &client.sin_addr) != 1) argc = 0;  // usage
  if ((argc != 6 && argc != 8) || !Number(argv[1], 65535, port) || !Number(argv[2], 1 << 20, bytes) ||
      !Number(argv[3], 65535, then_port) || !Number(argv[4], 3600, seconds) || port == 0 ||
      bytes == 0 || seconds == 0) {
    std::fprintf(stderr, "usage: handoff_relay PORT BYTES THEN_PORT SECONDS READY_FILE [CLIENT_ADDRESS PROVIDER]\n");
    return 2;
  }
  softdat::testing::HandoffRelay relay;
  std::string error;
  if (!relay.Start(static_cast<std::uint16_t>(port), bytes, static_cast<std::uint16_t>(then_port),
                   std::chrono::seconds(seconds), error,
                   dtestx ? softdat::testing::DtestxReply(client, argv[7]) : std::string())) {
    std::fprintf(stderr, "handoff_relay: %s\n", error.c_str());
    return 1;
  }
  if (!std::ofstream(argv[5]).good()) {
    std::fprintf(stderr, "handoff_relay: cannot create %s\n", argv[5]);
    return 1;
  }
  return 0;  // ~HandoffRelay waits until the hand-off was served, or the bound passed
}
