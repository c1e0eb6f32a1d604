// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datperf's command line: what to run, where, and how to report it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace softdat::datperf {

enum class Test : std::uint8_t { kLat, kBw, kRate, kWrite, kRead, kWriteLat };
enum class Reap : std::uint8_t { kWait, kDequeue };
// write_lat: how a side learns that the peer's RDMA Write arrived: its last byte changes in
// memory, or a zero-byte Send after it completes a receive.
enum class Notify : std::uint8_t { kMemory, kSend };
// write_lat with memory notification: what the spin on memory does besides reading it.
enum class Spin : std::uint8_t { kMemory, kDequeue };

struct Options {
  bool server = false;             // no -h: serve clients
  std::string ia_name;             // -P
  std::string host;                // -h: the server's address or name
  std::uint16_t port = 18515;      // -p: the server's connection qualifier
  Test test = Test::kLat;          // -t
  std::vector<std::uint64_t> sizes = {8};  // -s / -a
  std::uint64_t iters = 0;         // -n (0: the test's default)
  double duration_s = 0;           // --duration: bound each size's run by time too
  std::uint32_t window = 0;        // -w (0: the test's default)
  bool srq = false;                // --srq: the server's EPs share one SRQ
  std::uint32_t srq_buffers = 0;   // --srq-buffers (0: window x clients, at most 256)
  std::uint32_t clients = 1;       // --clients N
  Reap reap = Reap::kWait;         // --reap
  Notify notify = Notify::kMemory;  // --notify (write_lat)
  Spin spin = Spin::kMemory;       // --spin (write_lat)
  bool json = false;               // --json
  bool csv = false;                // --csv
  std::string plot;                // --plot FILE.svg
  bool verify = false;             // --verify: every byte, not a sample
  bool one_buffer = false;         // --one-buffer: every message from and into one buffer per side
  bool once = false;               // server: exit after one client session
  bool quiet = false;              // -q: no progress line
};

const char* TestName(Test test);
const char* ReapName(Reap reap);
// lat and write_lat report latency; the others bandwidth and rate.
bool IsLatency(Test test);
std::uint64_t DefaultIters(Test test, std::uint64_t size);
std::uint32_t DefaultWindow(Test test);

// Parses argv. Returns 0 to run, 2 on a usage error (`error` says what), 3 for --help, 4 for
// --version.
int ParseOptions(int argc, char** argv, Options& out, std::string& error);
// The --help text.
const char* Usage();

}  // namespace softdat::datperf
