// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Fuzz target: a live softdat-tcp connection's receive path, with its state. Each input is one
// connection (connection_world.h: an EP through core, with posted receives or an SRQ and
// registered memory, over a socketpair) whose peer sends the input's bytes, cut as the input
// says (connection_input.h: a flags byte, a cut byte, the peer's bytes). Unless the input says
// otherwise, the harness writes the right CRC into every FPDU it can frame, so the fuzzer gets
// past the check and into the state behind it. Meanwhile our side may disconnect, gracefully
// or not, or find nobody reading what it sends.
//
// Checks: no crash, leak or undefined behaviour (sanitizers); no byte written outside the receive
// buffers, the window and the Read sink (guards); no receive completion longer than its buffer
// or naming a buffer never posted; every input ends in bounded time (rounds, not clocks).
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "testing/fuzz/connection_input.h"
#include "testing/fuzz/connection_world.h"
#include "transport/tcp/crc32c.h"
#include "transport/tcp/wire.h"

namespace {

using softdat::fuzz::World;
using softdat::fuzz::WorldConfig;
namespace input = softdat::fuzz::input;
namespace wire = softdat::transport::tcp::wire;

constexpr std::string_view kRequestKey = "MPA ID Req Frame";
constexpr std::size_t kMaxRounds = 512;   // writes of the input, at most
constexpr std::size_t kIdleRounds = 24;   // rounds with nothing happening before we give up
// SOFTDAT_FUZZ_VERBOSE=1: one line per input saying how far the connection got (seed checks).
bool verbose = false;

// Writes the right CRC into each FPDU that the bytes frame whole from `at` on.
void FixCrcs(std::vector<std::uint8_t>& bytes, std::size_t at) {
  while (at + wire::kLengthFieldSize <= bytes.size()) {
    const std::size_t ulpdu = std::size_t{bytes[at]} << 8 | bytes[at + 1];
    const std::size_t covered = wire::kLengthFieldSize + ulpdu + wire::PadSize(ulpdu);
    if (at + covered + wire::kCrcSize > bytes.size()) return;
    const std::uint32_t crc = softdat::transport::tcp::Crc32c(bytes.data() + at, covered);
    for (int i = 0; i < 4; ++i) bytes[at + covered + i] = static_cast<std::uint8_t>(crc >> (8 * i));
    at += covered + wire::kCrcSize;
  }
}

// Reads and drops whatever our side sent (MPA frames, FPDUs, Terminates), so it never blocks.
void DrainPeer(int fd) {
  std::uint8_t sink[65536];
  while (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Every refused input logs a warning: keep the fuzzer's output to errors.
  ::setenv("SOFTDAT_LOG", "error", 0);
  const char* v = std::getenv("SOFTDAT_FUZZ_VERBOSE");
  verbose = v != nullptr && v[0] == '1';
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < input::kHeaderSize) return 0;
  const std::uint8_t flags = data[0], actions = data[1];
  const WorldConfig config = input::ConfigOf(flags, actions);
  const bool fin = (flags & input::kNoFin) == 0;
  std::vector<std::uint8_t> bytes(data + input::kHeaderSize, data + size);
  // Passive, bytes that start with an MPA Request: the listener's part, done with its parser.
  wire::MpaFrame request;
  std::vector<std::uint8_t> request_data;
  const bool own_request = !config.active && bytes.size() >= kRequestKey.size() &&
                           std::equal(kRequestKey.begin(), kRequestKey.end(), bytes.begin());
  if (own_request) {
    std::uint16_t pd_length = 0;
    const char* why = nullptr;
    // What the listener closes without a Reply (a bad or short frame) reaches no connection.
    if (bytes.size() < wire::kMpaFrameHeaderSize ||
        !wire::DecodeMpaHeader(bytes.data(), false, request, pd_length, why) ||
        bytes.size() < wire::kMpaFrameHeaderSize + pd_length)
      return 0;
    const std::size_t block = request.enhanced ? wire::kMpaEnhancedBlockSize : 0;
    if (request.enhanced) wire::DecodeMpaBlock(bytes.data() + wire::kMpaFrameHeaderSize, request);
    request_data.assign(bytes.begin() + wire::kMpaFrameHeaderSize + block,
                        bytes.begin() + wire::kMpaFrameHeaderSize + pd_length);
    bytes.erase(bytes.begin(), bytes.begin() + wire::kMpaFrameHeaderSize + pd_length);
  }
  std::size_t chunk = input::ChunkOf(data[2], bytes.size());
  if (chunk == 0) chunk = 1;
  // Where the FPDUs start (after the MPA Reply on the active side), and where the peer's setup
  // ends: the Reply, or the ready-to-receive FPDU.
  std::size_t first_fpdu = 0;
  if (config.active && bytes.size() >= wire::kMpaFrameHeaderSize) {
    first_fpdu = wire::kMpaFrameHeaderSize + (std::size_t{bytes[18]} << 8 | bytes[19]);
  }
  std::size_t setup_end = first_fpdu;
  if (!config.active && bytes.size() >= wire::kLengthFieldSize) {
    const std::size_t ulpdu = std::size_t{bytes[0]} << 8 | bytes[1];
    setup_end = wire::kLengthFieldSize + ulpdu + wire::PadSize(ulpdu) + wire::kCrcSize;
  }
  if ((flags & input::kRawCrc) == 0) FixCrcs(bytes, first_fpdu);
  // With our own operations posted, the peer's answers (a Read Response) come after its setup
  // has established us and we have posted: hold the rest back until then, as a real peer would
  // (it cannot answer a Read it has not seen).
  const std::size_t hold = (flags & input::kPostOps) != 0 ? setup_end : SIZE_MAX;
  if (bytes.size() / chunk > kMaxRounds) chunk = (bytes.size() + kMaxRounds - 1) / kMaxRounds;

  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) std::abort();
  const int peer = fds[1];
  std::unique_ptr<World> world = World::Open(config);
  world->SetPeerWindow(0x1234, 0x10000);  // the fuzzer's side: any key it likes
  world->Start(fds[0], own_request ? &request : nullptr, request_data);

  std::size_t sent = 0;
  std::size_t idle = 0;
  bool fin_sent = false, disconnected = false, aborted = false;
  while (!world->ended()) {
    bool any = false;
    if ((actions & input::kAbortHalfway) != 0 && !aborted && sent >= bytes.size() / 2) {
      world->Disconnect(false);
      aborted = true;
    }
    if ((actions & input::kDisconnectAfter) != 0 && !disconnected && sent == bytes.size()) {
      world->Disconnect(true);
      disconnected = true;
    }
    const std::size_t limit = world->established() ? bytes.size() : std::min(bytes.size(), hold);
    if (sent < limit) {
      const std::size_t n = std::min(chunk, limit - sent);
      const ssize_t w = ::send(peer, bytes.data() + sent, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        sent += static_cast<std::size_t>(w);
        any = true;
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        sent = bytes.size();  // our side closed: nothing more can arrive
      }
    } else if (sent == bytes.size() && fin && !fin_sent) {
      ::shutdown(peer, SHUT_WR);
      fin_sent = true;
      any = true;
    }
    any |= world->Step();
    if ((actions & input::kNoDrain) == 0) DrainPeer(peer);
    if (any) {
      idle = 0;
      continue;
    }
    // Nothing moves: a message may wait for a receive buffer; give it one, else give up.
    if (world->PostSpareBuffer()) continue;
    if (++idle > kIdleRounds) break;
  }
  if (verbose) {
    std::fprintf(stderr, "connection: %zu of %zu bytes sent, established %d, %u receives, %u requests done, end event %#x\n",
                 sent, bytes.size(), world->established(), world->recvs_done(), world->requests_done(),
                 static_cast<unsigned>(world->end_event()));
  }
  const std::uintptr_t base = world->base();
  world.reset();
  World::CheckGuards(base, config.read_bytes);
  ::close(peer);
  return 0;
}
