// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test-only: the IPv4 TCP sockets that /proc/net/tcp lists in this process's network namespace,
// for tests that check kernel state behind a connection (an accept queue, a send queue, a port
// in TIME_WAIT).
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace softdat::transport::tcp {

struct ProcNetTcpRow {
  std::uint16_t local_port = 0;
  std::uint16_t remote_port = 0;
  unsigned state = 0;  // the kernel's TCP state: 0x06 TIME_WAIT, 0x0A LISTEN, ...
  unsigned long tx_queue = 0;
  unsigned long rx_queue = 0;  // for a listener: connections waiting to be accepted
};

inline std::vector<ProcNetTcpRow> ReadProcNetTcp() {
  std::vector<ProcNetTcpRow> rows;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  const auto port = [](const std::string& address) {
    return static_cast<std::uint16_t>(std::stoul(address.substr(address.find(':') + 1), nullptr, 16));
  };
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues;
    if (!(fields >> slot >> local >> remote >> state >> queues)) continue;
    rows.push_back(ProcNetTcpRow{port(local), port(remote), static_cast<unsigned>(std::stoul(state, nullptr, 16)),
                                 std::stoul(queues.substr(0, queues.find(':')), nullptr, 16),
                                 std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16)});
  }
  return rows;
}

}  // namespace softdat::transport::tcp
