// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FpduTracker: the fault proxy aims its flips and truncations by it, so a tracker that numbered
// FPDUs wrong, or took a Read Request for data, would aim a fault test at the wrong bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "testing/faults/fault_proxy.h"

namespace softdat::testing::faults {
namespace {

struct Seen {
  std::uint64_t number, start, payload;
  std::uint8_t opcode;
  bool operator==(const Seen&) const = default;
};

// Appends one FPDU: ULPDU_Length, the DDP and RDMAP control bytes, the rest of the header
// (zeros), `payload` bytes, the pad to four and a (zero) CRC.
void AppendFpdu(std::vector<std::uint8_t>& stream, bool tagged, std::uint8_t opcode, std::size_t payload) {
  const std::size_t header = tagged ? 14 : 18;  // after ULPDU_Length (RFC 5041 section 4)
  const std::size_t ulpdu = header + payload;
  stream.push_back(std::uint8_t(ulpdu >> 8));
  stream.push_back(std::uint8_t(ulpdu));
  stream.push_back(tagged ? 0x81 : 0x01);  // T, L; DDP version 1
  stream.push_back(std::uint8_t(0x40 | opcode));  // RDMAP version 1
  stream.insert(stream.end(), header - 2 + payload, 0);
  stream.insert(stream.end(), (4 - ((2 + ulpdu) & 3)) & 3, 0);
  stream.insert(stream.end(), 4, 0);
}

TEST(FpduTracker, NumbersEachFpduAndNamesItsOpcodeAcrossAnySplit) {
  std::vector<std::uint8_t> stream(20, 0);  // an MPA frame without private data
  AppendFpdu(stream, false, kRdmapReadRequest, 28);
  AppendFpdu(stream, true, 0x0, 8);   // RDMA Write
  AppendFpdu(stream, false, 0x3, 5);  // Send
  const std::vector<Seen> want = {
      {1, 20 + 20, 28, kRdmapReadRequest},
      {2, 20 + 48 + 4 + 16, 8, 0x0},
      {3, 20 + 48 + 4 + 24 + 4 + 20, 5, 0x3},
  };
  for (std::size_t piece : {std::size_t{1}, std::size_t{3}, stream.size()}) {
    FpduTracker tracker;
    std::vector<Seen> seen;
    for (std::size_t at = 0; at < stream.size(); at += piece)
      tracker.Feed(stream.data() + at, std::min(piece, stream.size() - at),
                   [&](std::uint64_t n, std::uint64_t start, std::uint64_t payload, std::uint8_t opcode) {
                     seen.push_back({n, start, payload, opcode});
                   });
    EXPECT_EQ(seen, want) << "fed in pieces of " << piece;
  }
}

TEST(FpduTracker, OnlySendsWritesAndReadResponsesCarryData) {
  EXPECT_FALSE(CarriesData(kRdmapReadRequest));
  EXPECT_FALSE(CarriesData(kRdmapTerminate));
  for (std::uint8_t opcode : {0x0, 0x2, 0x3, 0x4, 0x5, 0x6}) EXPECT_TRUE(CarriesData(opcode)) << int(opcode);
}

}  // namespace
}  // namespace softdat::testing::faults
