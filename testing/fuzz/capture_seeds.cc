// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Seed capture: softdat-tcp talking to itself, recorded on the wire. Two worlds
// (connection_world.h) — an active one and a passive one, each exactly as the connection fuzzer
// builds it — are joined through a relay that forwards and records every byte each way. Each
// scenario posts real traffic (Sends, RDMA Writes and Reads, their responses, Terminates), and
// the recordings become the seed corpora:
//
//   corpus/connection/<scenario>-passive   flags + cut + what the active side sent after its
//                                          MPA Request (what a passive fuzzer world reads)
//   corpus/connection/<scenario>-passive-request  the same after the Request itself
//   corpus/connection/<scenario>-active    flags + cut + what the passive side sent (its MPA
//                                          Reply, then FPDUs: what an active world reads)
//   corpus/mpa/<scenario>-request|reply    the MPA frames as sent
//   corpus/fpdu/<opcode>-<n>               one FPDU of each kind and size seen, as sent
//
// Usage: capture_seeds OUT_FOLDER (testing/fuzz/run.sh capture writes into testing/fuzz/corpus).
// Deterministic: the same build captures the same bytes.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "testing/fuzz/connection_input.h"
#include "testing/fuzz/connection_world.h"
#include "transport/tcp/wire.h"

namespace {

using softdat::fuzz::World;
using softdat::fuzz::WorldConfig;
namespace input = softdat::fuzz::input;
namespace wire = softdat::transport::tcp::wire;
namespace fs = std::filesystem;

struct Scenario {
  const char* name;
  std::uint8_t passive_flags;  // the passive world is ConfigOf(these), and its seed says so
  std::uint8_t active_flags;   // likewise the active world (kActive is added)
  std::uint8_t cut;            // the cut byte of both seeds
  // Changes to the worlds beyond their flags (the seed of a changed side is still written with
  // the flags: the peer's bytes are what matter, and a mismatch is one more case).
  void (*adjust)(WorldConfig& passive, WorldConfig& active);
  std::uint8_t actions = 0;  // byte 1 of both seeds (and both worlds were built with it)
};

void NoChange(WorldConfig&, WorldConfig&) {}

const Scenario kScenarios[] = {
    {"ops", input::kPostOps, input::kPostOps, 0, NoChange},
    {"ops-srq", input::kPostOps | input::kSrq, input::kPostOps | input::kSrq, 0, NoChange},
    {"ops-crc-off-cut", input::kPostOps | input::kCrcOff, input::kPostOps | input::kCrcOff, 7, NoChange},
    {"ops-rmr", input::kPostOps | input::kBindRmr, input::kPostOps | input::kBindRmr, 0, NoChange},
    {"sends-wait-for-buffers", input::kOneBuffer | input::kSrq, 0, 0,
     [](WorldConfig&, WorldConfig& active) {
       active.sends = 4;
       active.send_bytes = 60;
     }},
    {"large-write-crc-off", input::kCrcOff, input::kCrcOff, 130,  // 1536 bytes per write
     [](WorldConfig&, WorldConfig& active) {
       active.write_bytes = 20000;
       active.sends = 2;
       active.send_bytes = 60;
     }},
    {"large-read", 0, 0, 0,
     [](WorldConfig&, WorldConfig& active) { active.read_bytes = 4096; }},
    {"active-writes-bad-key", 0, 0, 0,
     [](WorldConfig&, WorldConfig& active) {
       active.write_bytes = 64;
       active.bad_key = true;
     }},
    {"passive-writes-bad-key", 0, 0, 0,
     [](WorldConfig& passive, WorldConfig&) {
       passive.write_bytes = 64;
       passive.bad_key = true;
     }},
    {"active-reads-bad-key", 0, input::kPostOps, 0,
     [](WorldConfig& passive, WorldConfig& active) {
       active.sends = 0;
       active.write_bytes = 0;
       active.bad_key = true;
       passive.sends = 1;
     }},
    {"large-send-crc-off", input::kCrcOff, input::kCrcOff, 130,
     [](WorldConfig&, WorldConfig& active) {
       active.sends = 1;
       active.send_bytes = 16000;  // into the 20000-byte buffer, placed as it comes
     }},
    // RFC 7306 both ways: Immediate Data after a Write, Atomic Requests and Responses.
    {"extensions", input::kPostOps, input::kPostOps, 0, NoChange, input::kExtensions},
    {"extensions-srq-one-buffer", input::kSrq | input::kOneBuffer, input::kOneBuffer, 0, NoChange, input::kExtensions},
    {"extensions-bad-key", 0, 0, 0,
     [](WorldConfig&, WorldConfig& active) { active.bad_key = true; }, input::kExtensions},
};

// Moves what `from` has to `to`, appending it to `record`; true if anything moved.
bool Relay(int from, int to, std::vector<std::uint8_t>& record) {
  std::uint8_t buffer[65536];
  bool moved = false;
  while (true) {
    const ssize_t n = ::recv(from, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n <= 0) return moved;
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t w = ::send(to, buffer + sent, static_cast<std::size_t>(n - sent), MSG_NOSIGNAL);
      if (w <= 0) {
        std::fprintf(stderr, "capture_seeds: relay write failed\n");
        std::exit(1);
      }
      sent += w;
    }
    record.insert(record.end(), buffer, buffer + n);
    moved = true;
  }
}

// A connection seed (flags, actions, the cut, the bytes); with flags 0xFF the bytes alone.
void Write(const fs::path& path, std::uint8_t flags, std::uint8_t actions, std::uint8_t cut,
           const std::vector<std::uint8_t>& bytes, std::size_t from) {
  std::ofstream out(path, std::ios::binary);
  if (flags != 0xFF) out.put(static_cast<char>(flags)).put(static_cast<char>(actions)).put(static_cast<char>(cut));
  out.write(reinterpret_cast<const char*>(bytes.data() + from), static_cast<std::streamsize>(bytes.size() - from));
}

// The length of the MPA frame `bytes` start with; SIZE_MAX until its header is in.
std::size_t MpaFrameLength(const std::vector<std::uint8_t>& bytes) {
  if (bytes.size() < wire::kMpaFrameHeaderSize) return SIZE_MAX;
  return wire::kMpaFrameHeaderSize + (std::size_t{bytes[18]} << 8 | bytes[19]);
}

// One seed per FPDU opcode and size class seen.
void SplitFpdus(const std::vector<std::uint8_t>& bytes, std::size_t at, const fs::path& folder,
                std::set<std::string>& seen) {
  while (at + 4 <= bytes.size()) {
    const std::size_t ulpdu = std::size_t{bytes[at]} << 8 | bytes[at + 1];
    const std::size_t total = wire::kLengthFieldSize + ulpdu + wire::PadSize(ulpdu) + wire::kCrcSize;
    if (at + total > bytes.size()) return;
    const unsigned opcode = bytes[at + 3] & 0x0F;
    const std::string name = "opcode" + std::to_string(opcode) + "-" + std::to_string(ulpdu < 64 ? 64 : ulpdu < 1024 ? 1024 : 65536);
    if (seen.insert(name).second) {
      std::ofstream out(folder / name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data() + at), static_cast<std::streamsize>(total));
    }
    at += total;
  }
}

void Capture(const Scenario& scenario, const fs::path& out, std::set<std::string>& fpdus_seen,
             std::set<std::vector<std::uint8_t>>& frames_seen) {
  WorldConfig passive = input::ConfigOf(scenario.passive_flags, scenario.actions);
  WorldConfig active = input::ConfigOf(scenario.active_flags | input::kActive, scenario.actions);
  scenario.adjust(passive, active);
  std::unique_ptr<World> server = World::Open(passive);
  std::unique_ptr<World> client = World::Open(active);
  client->SetPeerWindow(server->window_key(), server->base() + softdat::fuzz::Layout::kWindow);
  server->SetPeerWindow(client->window_key(), client->base() + softdat::fuzz::Layout::kWindow);

  int a[2], b[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a) != 0 ||
      ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b) != 0) {
    std::perror("capture_seeds: socketpair");
    std::exit(1);
  }
  client->Start(a[0]);
  server->Start(b[0]);  // the server's listener part (the Request) is the harness's, as in the fuzzer
  std::vector<std::uint8_t> from_client, from_server;
  std::vector<std::uint8_t> request;  // the client's Request, held back from the server
  int idle = 0;
  for (int round = 0; round < 100000 && idle < 64; ++round) {
    bool any = client->Step();
    any |= server->Step();
    if (request.size() < MpaFrameLength(request)) {
      std::uint8_t byte;
      while (::recv(a[1], &byte, 1, MSG_DONTWAIT) == 1) {
        request.push_back(byte);
        any = true;
        if (request.size() == MpaFrameLength(request)) break;
      }
    } else {
      any |= Relay(a[1], b[1], from_client);
    }
    any |= Relay(b[1], a[1], from_server);
    idle = any ? 0 : idle + 1;
  }
  std::fprintf(stderr,
               "%-24s client: established %d, %u receives, %u requests; server: established %d, %u receives, %u "
               "requests; %zu + %zu bytes\n",
               scenario.name, client->established(), client->recvs_done(), client->requests_done(),
               server->established(), server->recvs_done(), server->requests_done(), from_client.size(),
               from_server.size());
  if (!client->established() || !server->established()) {
    std::fprintf(stderr, "capture_seeds: scenario %s never connected\n", scenario.name);
    std::exit(1);
  }
  const std::string name = scenario.name;
  Write(out / "connection" / (name + "-passive"), scenario.passive_flags, scenario.actions, scenario.cut, from_client, 0);
  std::vector<std::uint8_t> with_request = request;
  with_request.insert(with_request.end(), from_client.begin(), from_client.end());
  Write(out / "connection" / (name + "-passive-request"), scenario.passive_flags, scenario.actions, scenario.cut,
        with_request, 0);
  Write(out / "connection" / (name + "-active"), scenario.active_flags | input::kActive, scenario.actions, scenario.cut,
        from_server, 0);
  const std::size_t reply = std::min(MpaFrameLength(from_server), from_server.size());
  const std::vector<std::uint8_t> reply_frame(from_server.begin(), from_server.begin() + reply);
  if (frames_seen.insert(request).second) Write(out / "mpa" / (name + "-request"), 0xFF, 0, 0, request, 0);
  if (frames_seen.insert(reply_frame).second) Write(out / "mpa" / (name + "-reply"), 0xFF, 0, 0, reply_frame, 0);
  SplitFpdus(from_client, 0, out / "fpdu", fpdus_seen);
  SplitFpdus(from_server, reply, out / "fpdu", fpdus_seen);
  client.reset();
  server.reset();
  ::close(a[1]);
  ::close(b[1]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_FOLDER\n", argv[0]);
    return 2;
  }
  ::setenv("SOFTDAT_LOG", "error", 0);
  const fs::path out = argv[1];
  for (const char* folder : {"connection", "mpa", "fpdu"}) fs::create_directories(out / folder);
  std::set<std::string> fpdus_seen;
  std::set<std::vector<std::uint8_t>> frames_seen;
  for (const Scenario& scenario : kScenarios) Capture(scenario, out, fpdus_seen, frames_seen);
  return 0;
}
