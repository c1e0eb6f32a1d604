// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test helper for running stock DAT consumers (dapl2-utils' dtest, dtestsrq, dapltest), unchanged,
// against softdat-tcp: a server process, then its clients once the server listens, each bounded
// in time, with both outputs kept for the assertions and for failure messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "testing/subprocess.h"

namespace softdat::testing {

using Environment = std::vector<std::pair<std::string, std::string>>;

// Moves this test process, and so every consumer it starts later, into a network namespace of
// its own with only loopback up: the consumers' fixed ports (dtest's 45248 and 15828) then
// cannot meet another test's or another checkout's, and the fixed ones in the ephemeral range
// are reserved there (ReservedInThisNamespace), so that no connection takes one as its source
// port. Call from the main thread before starting any process or thread; later calls return the
// first answer. False where namespaces cannot be created (no privilege): the shared loopback is
// used then.
bool EnterPrivateLoopback();

// Whether `port` is in this network namespace's ip_local_reserved_ports.
bool ReservedInThisNamespace(std::uint16_t port);

// DAT_OVERRIDE naming a dat.conf in $TEST_TMPDIR with one IA, "softdat-tcp" on 127.0.0.1.
// Under ThreadSanitizer (--config=tsan), consumers keep running after a report instead of
// halting: the stock consumers race on their own (dtest compares buffers that RDMA writes
// land in; dapltest destroys a mutex its thread used), so reports are judged per line by
// SoftdatSanitizerReports.
const Environment& SoftdatTcpEnvironment();

// The sanitizer SUMMARY lines in `output` that are not the consumer's own: every one except a
// ThreadSanitizer report located in the consumer binary (/usr/bin/...). Empty when clean.
std::string SoftdatSanitizerReports(const std::string& output);

// Whether a TCP socket (IPv4 or IPv6, any local address) listens on `port`, read from the
// kernel's socket table in this process's network namespace. It never connects: dtest's server
// hands its parameters to the first connection on its one-shot listener, so a probe would be
// taken for the client.
bool Listening(std::uint16_t port);

struct ConsumerPairSpec {
  std::vector<std::string> server;
  // The server is ready for its first client once this port listens.
  std::uint16_t ready_port = 0;
  // Run in turn once the server is ready; a later client runs even when an earlier one failed,
  // so a trailing "quit" client (dapltest -T Q) still stops the server.
  std::vector<std::vector<std::string>> clients;
  std::chrono::seconds server_bound{60};
  std::chrono::seconds client_bound{30};
  // dtest's hand-off: its server writes handoff_bytes to the first connection on ready_port and
  // only then listens on handoff_then_port (its PSP). When set, the harness takes the hand-off
  // and gives it to the client once handoff_then_port listens (HandoffRelay), so the client never
  // connects before the server is ready.
  std::size_t handoff_bytes = 0;
  std::uint16_t handoff_then_port = 0;
  // dtestx's hand-off goes both ways: what the relay answers the server with (DtestxReply).
  std::string handoff_reply;
};

struct ConsumerPairResult {
  ConsumerPairSpec spec;
  bool port_was_free = false;   // nobody listened on ready_port before the server started
  bool server_listened = false;  // ready_port listened within the bound
  std::string handoff_error;     // why the hand-off could not be relayed (no client ran then)
  SubprocessResult server;
  std::vector<SubprocessResult> clients;  // one per client that ran

  // Every process's command line, how it ended and its output, for SCOPED_TRACE.
  std::string Describe() const;
};

// Starts the server, waits (bounded) for its port, runs the clients, then waits for the server
// to exit; processes still running at their bound are killed with their process group.
ConsumerPairResult RunConsumerPair(const ConsumerPairSpec& spec, const Environment& environment);

// `output` without the sanitizer reports in it (the "=====" delimited blocks and the runtime's
// closing count), for checks on the consumer's own text.
std::string WithoutSanitizerReports(const std::string& output);

// Whether this test runs under ThreadSanitizer (--config=tsan), where moving gigabytes through
// instrumented copies takes minutes.
bool UnderThreadSanitizer();

// True when the process exited by itself with status 0 (no signal, no time bound reached) and
// printed no sanitizer report of softdat's (SoftdatSanitizerReports).
bool ExitedCleanly(const SubprocessResult& result);

// How many times `needle` occurs in `haystack`.
std::size_t Occurrences(std::string_view haystack, std::string_view needle);

}  // namespace softdat::testing
