// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// iwarp-dump: prints an iWARP (MPA/DDP/RDMAP) conversation one line per frame, every header field
// and a CRC verdict per FPDU, from a pcap/pcapng capture (tcpdump -w) or from a raw byte stream
// of one direction (what one side wrote to its socket). Used by testing/interop to explain a
// failure on the wire; docs/WIRE.md describes the fields.
//
//   iwarp-dump [--crc=auto|on|off] [--payload=N] [--port=P] FILE
//
//   --crc      whether FPDUs carry a CRC; auto (default) takes it from the MPA Request and Reply
//              when the capture has them
//   --payload  show the first N payload bytes of each FPDU in hex
//   --port     only connections with this TCP port at either end (and decode them even when
//              they do not start with an MPA frame)
// Output: per connection a header, then lines "time from>to @offset frame" in capture order; a
// raw stream gives "@offset frame". A summary closes: connections, FPDUs, bad CRCs.
// Exit status: 0 decoded, 1 unreadable input, 2 usage.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tools/iwarp_dump/capture.h"
#include "tools/iwarp_dump/decoder.h"

namespace {

using softdat::tools::iwarp_dump::Connection;
using softdat::tools::iwarp_dump::CrcMode;
using softdat::tools::iwarp_dump::Direction;
using softdat::tools::iwarp_dump::Line;
using softdat::tools::iwarp_dump::Options;
using softdat::tools::iwarp_dump::PeekMpa;
using softdat::tools::iwarp_dump::StreamDecoder;

int Usage() {
  std::fprintf(stderr, "usage: iwarp-dump [--crc=auto|on|off] [--payload=N] [--port=P] FILE\n");
  return 2;
}

struct Totals {
  std::uint64_t connections = 0, fpdus = 0, bad_crcs = 0;
};

int DumpRaw(const std::string& path, const Options& options, Totals& totals) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "iwarp-dump: cannot read %s\n", path.c_str());
    return 1;
  }
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StreamDecoder decoder(options, [](const Line& line) {
    std::printf("@%" PRIu64 " %s\n", line.offset, line.text.c_str());
  });
  decoder.Feed(bytes.data(), bytes.size());
  decoder.Finish();
  totals.connections = 1;
  totals.fpdus = decoder.fpdus();
  totals.bad_crcs = decoder.bad_crcs();
  return 0;
}

bool HasPort(const Direction& d, const std::string& port) {
  auto ends_with = [&](const std::string& e) { return e.size() > port.size() && e.ends_with(":" + port); };
  return ends_with(d.from) || ends_with(d.to);
}

void DumpConnection(std::size_t number, const Connection& c, const Options& options, bool forced, Totals& totals) {
  const auto mpa_forward = PeekMpa(c.forward.bytes.data(), c.forward.bytes.size());
  const auto mpa_backward = PeekMpa(c.backward.bytes.data(), c.backward.bytes.size());
  if (!forced && !mpa_forward && !mpa_backward) {
    std::printf("connection %zu %s <-> %s: no MPA frame at the start, skipped (--port decodes it anyway)\n", number,
                c.forward.from.c_str(), c.forward.to.c_str());
    return;
  }
  struct Printed {
    double time;
    int direction;
    Line line;
  };
  std::vector<Printed> lines;
  std::uint64_t fpdus = 0, bad = 0;
  const Direction* directions[] = {&c.forward, &c.backward};
  for (int i = 0; i < 2; ++i) {
    const Direction& d = *directions[i];
    if (d.from.empty()) continue;
    StreamDecoder decoder(options, [&](const Line& line) {
      lines.push_back({d.TimeAt(line.end > 0 ? line.end - 1 : 0), i, line});
    });
    // Either side asking for CRC means both use it (RFC 5044 §7.1); unknown without a C bit.
    if ((mpa_forward && mpa_forward->crc) || (mpa_backward && mpa_backward->crc)) decoder.SetNegotiatedCrc(true);
    else if (mpa_forward && mpa_backward) decoder.SetNegotiatedCrc(false);
    decoder.Feed(d.bytes.data(), d.bytes.size());
    decoder.Finish(d.gap ? "then a gap in the capture" : "capture ends");
    if (d.gap && !decoder.lost()) {
      Line gap;
      gap.offset = gap.end = d.bytes.size();
      gap.text = "the capture misses bytes here (tcpdump dropped packets?): nothing after is decoded";
      lines.push_back({d.TimeAt(d.bytes.empty() ? 0 : d.bytes.size() - 1), i, gap});
    }
    fpdus += decoder.fpdus();
    bad += decoder.bad_crcs();
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Printed& a, const Printed& b) { return a.time < b.time; });
  std::printf("connection %zu %s <-> %s: %" PRIu64 " FPDUs, %" PRIu64 " bad CRC\n", number, c.forward.from.c_str(),
              c.forward.to.c_str(), fpdus, bad);
  for (const Printed& p : lines) {
    const Direction& d = *directions[p.direction];
    std::printf("%11.6f %s>%s @%" PRIu64 " %s\n", p.time, d.from.c_str(), d.to.c_str(), p.line.offset,
                p.line.text.c_str());
  }
  ++totals.connections;
  totals.fpdus += fpdus;
  totals.bad_crcs += bad;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::string port, path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--crc=auto") options.crc = CrcMode::kAuto;
    else if (arg == "--crc=on") options.crc = CrcMode::kOn;
    else if (arg == "--crc=off") options.crc = CrcMode::kOff;
    else if (arg.starts_with("--payload=")) options.payload_bytes = std::strtoul(arg.c_str() + 10, nullptr, 10);
    else if (arg.starts_with("--port=")) port = arg.substr(7);
    else if (arg == "-h" || arg == "--help") return Usage();
    else if (arg.starts_with("-") || !path.empty()) return Usage();
    else path = arg;
  }
  if (path.empty()) return Usage();
  Totals totals;
  if (!softdat::tools::iwarp_dump::LooksLikeCapture(path)) {
    if (const int rc = DumpRaw(path, options, totals); rc != 0) return rc;
  } else {
    std::vector<Connection> connections;
    std::string error;
    if (!softdat::tools::iwarp_dump::ReadCapture(path, connections, error)) {
      std::fprintf(stderr, "iwarp-dump: %s: %s\n", path.c_str(), error.c_str());
      return 1;
    }
    for (std::size_t i = 0; i < connections.size(); ++i) {
      const Connection& c = connections[i];
      if (!port.empty() && !HasPort(c.forward, port)) continue;
      DumpConnection(i + 1, c, options, !port.empty(), totals);
    }
  }
  std::printf("iwarp-dump: %" PRIu64 " connection(s), %" PRIu64 " FPDU(s), %" PRIu64 " bad CRC\n", totals.connections,
              totals.fpdus, totals.bad_crcs);
  return 0;
}
