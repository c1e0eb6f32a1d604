// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The record ring: records round-trip in order across many wraps (one thread, then a producer
// and a consumer thread on two mappings of one memfd, as two processes see it), back-pressure
// when the consumer lags, the pad at the ring's end, and refusal of what a lying peer writes
// (bad sizes, a wrapping record, an unknown opcode, a consumed count that runs backwards or
// ahead).
#include "transport/shm/ring.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "transport/shm/shared_memory.h"

namespace softdat::transport::shm {
namespace {

constexpr std::uint32_t kBytes = 8192;

struct Shared {
  std::vector<std::uint8_t> storage = std::vector<std::uint8_t>(kBytes + 2 * kLine);
  std::uint8_t* ring() { return storage.data() + 2 * kLine; }
  std::uint64_t* consumed() { return reinterpret_cast<std::uint64_t*>(storage.data()); }
};

// Both ends of one ring in this thread's memory.
struct Pair {
  Pair() {
    writer.Attach(shared.ring(), kBytes, shared.consumed());
    reader.Attach(shared.ring(), kBytes, shared.consumed());
  }
  Shared shared;
  RingWriter writer;
  RingReader reader;
};

bool WriteOne(RingWriter& writer, std::uint32_t msn, std::uint32_t length) {
  RecordHeader* header = writer.Begin(length);
  if (header == nullptr) return false;
  header->opcode = Opcode::kSend;
  header->flags = kFlagLast;
  header->msn = msn;
  header->total = length;
  header->offset = 0;
  std::uint8_t* payload = RingWriter::Payload(header);
  for (std::uint32_t i = 0; i < length; ++i) payload[i] = static_cast<std::uint8_t>(msn + i);
  writer.Commit(header, length);
  return true;
}

// Reads one record; false when none is there. Fails the test on a wrong one.
bool ReadOne(RingReader& reader, std::uint32_t expect_msn, std::uint32_t expect_length) {
  RecordHeader header;
  const std::uint8_t* payload = nullptr;
  const RingReader::Next next = reader.Peek(header, payload);
  if (next == RingReader::Next::kEmpty) return false;
  EXPECT_EQ(next, RingReader::Next::kRecord);
  EXPECT_EQ(header.opcode, Opcode::kSend);
  EXPECT_EQ(header.msn, expect_msn);
  EXPECT_EQ(header.length, expect_length);
  for (std::uint32_t i = 0; i < header.length; ++i) {
    if (payload[i] != static_cast<std::uint8_t>(expect_msn + i)) {
      ADD_FAILURE() << "payload byte " << i << " of record " << expect_msn;
      break;
    }
  }
  reader.Consume(header);
  reader.Publish();
  return true;
}

std::uint32_t LengthOf(std::uint32_t i, std::uint32_t max) { return (i * 733u) % (max + 1); }

TEST(Ring, RecordsRoundTripInOrderAcrossWraps) {
  Pair pair;
  auto& [shared, writer, reader] = pair;
  std::uint32_t written = 0, read = 0;
  while (read < 5000) {
    while (written < 5000 && WriteOne(writer, written + 1, LengthOf(written, writer.max_payload()))) ++written;
    ASSERT_GT(written, read) << "an empty ring takes a record of any allowed size";
    while (ReadOne(reader, read + 1, LengthOf(read, writer.max_payload()))) ++read;
    ASSERT_EQ(read, written);
  }
  EXPECT_GT(writer.written(), 20u * kBytes) << "the test wrapped many times";
}

TEST(Ring, AFullRingRefusesUntilTheConsumerPublishes) {
  Pair pair;
  auto& [shared, writer, reader] = pair;
  int written = 0;
  while (WriteOne(writer, written + 1, 1000)) ++written;
  EXPECT_EQ(written, 7) << "8 records of 1088 bytes would leave no free line";
  // The next record does not fit the 576 bytes before the end: it needs a pad, itself and the
  // free line, so two records must go.
  for (int i = 0; i < 2; ++i) {
    RecordHeader header;
    const std::uint8_t* payload = nullptr;
    ASSERT_EQ(reader.Peek(header, payload), RingReader::Next::kRecord);
    reader.Consume(header);
    EXPECT_FALSE(WriteOne(writer, 8, 1000)) << "consumed but not published: no room yet";
  }
  reader.Publish();
  EXPECT_TRUE(WriteOne(writer, 8, 1000));
}

TEST(Ring, ARecordThatDoesNotFitBeforeTheEndFollowsAPad) {
  Pair pair;
  auto& [shared, writer, reader] = pair;
  // 6 records of 1088 bytes: 6528, leaving 1664 before the end; a 1900-byte record wraps.
  for (std::uint32_t i = 1; i <= 6; ++i) ASSERT_TRUE(WriteOne(writer, i, 1000));
  for (std::uint32_t i = 1; i <= 6; ++i) ASSERT_TRUE(ReadOne(reader, i, 1000));
  ASSERT_TRUE(WriteOne(writer, 7, 1900));
  EXPECT_EQ(writer.written(), 6u * 1088 + 1664 + RecordBytes(1900));
  ASSERT_TRUE(ReadOne(reader, 7, 1900));
  EXPECT_EQ(reader.head(), writer.written());
}

TEST(Ring, NothingIsReadBeforeItIsPublished) {
  Pair pair;
  auto& [shared, writer, reader] = pair;
  RecordHeader* header = writer.Begin(8);
  ASSERT_NE(header, nullptr);
  header->opcode = Opcode::kSend;
  header->msn = 1;
  EXPECT_FALSE(reader.Ready());
  RecordHeader copy;
  const std::uint8_t* payload = nullptr;
  EXPECT_EQ(reader.Peek(copy, payload), RingReader::Next::kEmpty);
  writer.Commit(header, 8);
  EXPECT_TRUE(reader.Ready());
}

// Stale payload bytes where the next record will start never read as a record: the writer
// zeroes the next size word before publishing.
TEST(Ring, StaleBytesAtTheNextRecordNeverLookPublished) {
  Pair pair;
  auto& [shared, writer, reader] = pair;
  std::memset(shared.ring(), 0xff, kBytes);  // as if a previous lap left payload everywhere
  std::memset(shared.ring(), 0, kLine);       // a fresh ring's first line is zero (the rule's base case)
  ASSERT_TRUE(WriteOne(writer, 1, 8));
  ASSERT_TRUE(ReadOne(reader, 1, 8));
  EXPECT_FALSE(reader.Ready()) << "the line after the record was zeroed";
}

TEST(Ring, TheWriterRefusesAConsumedCountThatLies) {
  Shared shared;
  RingWriter writer;
  writer.Attach(shared.ring(), kBytes, shared.consumed());
  ASSERT_TRUE(WriteOne(writer, 1, 8));
  *shared.consumed() = 4096;  // past what was written
  EXPECT_FALSE(writer.Refresh());
  EXPECT_TRUE(writer.broken());
  EXPECT_EQ(writer.Begin(8), nullptr) << "a broken ring takes nothing more";

  RingWriter second;
  *shared.consumed() = 0;
  second.Attach(shared.ring(), kBytes, shared.consumed());
  ASSERT_TRUE(WriteOne(second, 1, 8));
  *shared.consumed() = 64;
  ASSERT_TRUE(second.Refresh());
  *shared.consumed() = 0;  // backwards
  EXPECT_FALSE(second.Refresh());
}

// A hostile producer's headers, one at a time at the head of an empty ring.
TEST(Ring, TheReaderRefusesMalformedRecords) {
  struct Case {
    const char* what;
    std::uint32_t offset;  // where the reader's head is (records before it consumed)
    std::uint32_t size;
    Opcode opcode;
    std::uint32_t length;
  };
  const std::uint32_t max = MaxRecordPayload(kBytes);
  const Case cases[] = {
      {"size not a multiple of a line", 0, 100, Opcode::kSend, 8},
      {"size disagrees with the length", 0, 128, Opcode::kSend, 8},
      {"payload longer than a record may be", 0, RecordBytes(max + 64), Opcode::kSend, max + 64},
      {"record runs past the ring's end", kBytes - 64, 128, Opcode::kSend, 40},
      {"unknown opcode", 0, 64, static_cast<Opcode>(99), 8},
      {"opcode zero", 0, 64, static_cast<Opcode>(0), 8},
      {"pad at the ring's start", 0, kBytes, Opcode::kPad, 0},
      {"pad short of the end", 4096, 64, Opcode::kPad, 0},
  };
  for (const Case& c : cases) {
    Pair pair;
    auto& [shared, writer, reader] = pair;
    // Walk the head to the offset with well-formed records.
    while (writer.written() < c.offset) {
      const std::uint32_t left = c.offset - static_cast<std::uint32_t>(writer.written());
      ASSERT_TRUE(WriteOne(writer, 1, std::min<std::uint32_t>(left, 1024) - kHeaderBytes));
      ASSERT_TRUE(ReadOne(reader, 1, std::min<std::uint32_t>(left, 1024) - kHeaderBytes));
    }
    auto* header = reinterpret_cast<RecordHeader*>(shared.ring() + c.offset);
    header->opcode = c.opcode;
    header->length = c.length;
    header->size = c.size;
    RecordHeader copy;
    const std::uint8_t* payload = nullptr;
    EXPECT_EQ(reader.Peek(copy, payload), RingReader::Next::kCorrupt) << c.what;
  }
}

// The two sides on two mappings of one memfd, in two threads: what a pair of processes sees.
TEST(Ring, AProducerAndAConsumerThreadOnTwoMappings) {
  UniqueFd fd;
  Mapping producer_view;
  ASSERT_TRUE(CreateSharedMemory("ring_test", kPage + kBytes, false, fd, producer_view).ok());
  Mapping consumer_view;
  ASSERT_TRUE(MapPeerMemory(fd.get(), 0, 1 << 20, true, consumer_view).ok());
  ASSERT_NE(producer_view.data(), consumer_view.data());
  RingWriter writer;
  RingReader reader;
  writer.Attach(producer_view.data() + kPage, kBytes, reinterpret_cast<std::uint64_t*>(producer_view.data()));
  reader.Attach(consumer_view.data() + kPage, kBytes, reinterpret_cast<std::uint64_t*>(consumer_view.data()));
  constexpr std::uint32_t kCount = 50000;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  // Each side yields when it finds nothing to do: two spinning threads on a shared two-core
  // machine (and under TSan) would otherwise starve each other.
  std::thread consumer([&] {
    std::uint32_t read = 0;
    while (read < kCount && std::chrono::steady_clock::now() < deadline) {
      if (ReadOne(reader, read + 1, LengthOf(read, 300))) {
        ++read;
      } else {
        std::this_thread::yield();
      }
    }
    EXPECT_EQ(read, kCount);
  });
  std::uint32_t written = 0;
  while (written < kCount && std::chrono::steady_clock::now() < deadline) {
    if (WriteOne(writer, written + 1, LengthOf(written, 300))) {
      ++written;
    } else {
      std::this_thread::yield();
    }
  }
  consumer.join();
  EXPECT_EQ(written, kCount);
}

}  // namespace
}  // namespace softdat::transport::shm
