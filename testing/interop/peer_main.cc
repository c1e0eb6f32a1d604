// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// interop_peer: one side of the cross-stack DAT cases of testing/interop. The same program runs on
// both sides, each process with its own dat.conf (DAT_OVERRIDE) mapping one IA name to its
// provider: softdat-tcp, softdat-verbs, or OFED DAPL (libdaplofa). Both sides run the same cases in
// the same order; the server prints "ready" once it listens.
//
//   interop_peer server --ia NAME --port P --cases A,B,... [options]
//   interop_peer client --ia NAME --port P --host IPV4 --cases A,B,... [options]
//   options: --padded (IB/RoCE private data padding), --iwarp, --peer-ofed, --self-ofed,
//            --attempts N, --reads N (crc-race)
// Exit status: 0 when every case passed, 1 at the first that failed (both sides stop there),
// 2 usage.
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "testing/interop/cases.h"
#include "testing/interop/peer_kit.h"

using softdat::testing::interop::CaseNames;
using softdat::testing::interop::Peer;
using softdat::testing::interop::RunCase;
using softdat::testing::interop::Say;
using softdat::testing::interop::SetRole;
using softdat::testing::interop::Setup;

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: interop_peer server|client --ia NAME --port P [--host IPV4] --cases A,B,...\n"
               "       [--padded] [--iwarp] [--peer-ofed] [--self-ofed] [--attempts N] [--reads N]\n"
               "cases: %s\n",
               CaseNames());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  Setup setup;
  const std::string role = argv[1];
  if (role != "server" && role != "client") return Usage();
  setup.server = role == "server";
  SetRole(setup.server ? "server" : "client");
  std::string ia_name;
  std::vector<std::string> cases;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--ia") ia_name = value();
    else if (arg == "--port") setup.port = std::strtoull(value().c_str(), nullptr, 10);
    else if (arg == "--host") setup.host = value();
    else if (arg == "--cases") {
      std::stringstream list(value());
      for (std::string name; std::getline(list, name, ',');)
        if (!name.empty()) cases.push_back(name);
    } else if (arg == "--padded") setup.padded = true;
    else if (arg == "--iwarp") setup.iwarp = true;
    else if (arg == "--peer-ofed") setup.peer_ofed = true;
    else if (arg == "--self-ofed") setup.self_ofed = true;
    else if (arg == "--attempts") setup.attempts = std::atoi(value().c_str());
    else if (arg == "--reads") setup.reads = std::atoi(value().c_str());
    else return Usage();
  }
  if (ia_name.empty() || setup.port == 0 || cases.empty() || (!setup.server && setup.host.empty())) return Usage();

  Peer peer;
  if (!peer.Open(ia_name)) return 1;
  if (setup.server) {
    if (!peer.Listen(setup.port)) return 1;
    Say("ready on port %llu", static_cast<unsigned long long>(setup.port));
  }
  int status = 0;
  for (const std::string& name : cases) {
    if (!RunCase(peer, setup, name)) {
      Say("case %s: FAIL", name.c_str());
      status = 1;
      break;
    }
    Say("case %s: PASS", name.c_str());
  }
  peer.Close();
  return status;
}
