// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Cross-memory attach on ourselves (the kernel always lets a process attach to itself): scattered
// copies both ways with unequal cuts and more pieces than one call takes, the probe, the result
// classes (an unmapped address is a fault, a process we may not attach to is a refusal), and the
// iovecs of a segment list.
#include "transport/shm/cma.h"

#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace softdat::transport::shm {
namespace {

std::vector<iovec> Cut(std::vector<std::uint8_t>& bytes, std::size_t piece) {
  std::vector<iovec> list;
  for (std::size_t at = 0; at < bytes.size(); at += piece)
    list.push_back(iovec{bytes.data() + at, std::min(piece, bytes.size() - at)});
  return list;
}

TEST(Cma, CopiesBetweenScatteredPiecesBothWays) {
  std::vector<std::uint8_t> source(100000), sink(100000, 0);
  std::iota(source.begin(), source.end(), 0);
  // 7-byte pieces here, 1000-byte pieces there: many calls, partial pieces at every boundary.
  const std::vector<iovec> local = Cut(sink, 7);
  const std::vector<iovec> remote = Cut(source, 1000);
  ASSERT_EQ(CrossMemoryCopy(::getpid(), false, local, remote, source.size()), CmaResult::kDone);
  EXPECT_EQ(sink, source);
  std::vector<std::uint8_t> back(100000, 0);
  ASSERT_EQ(CrossMemoryCopy(::getpid(), true, Cut(source, 333), Cut(back, 64), 50000), CmaResult::kDone);
  EXPECT_TRUE(std::equal(back.begin(), back.begin() + 50000, source.begin()));
  EXPECT_EQ(back[50000], 0) << "no more than asked";
}

TEST(Cma, ListsShorterThanAskedAreAFault) {
  std::vector<std::uint8_t> a(100), b(50);
  const std::vector<iovec> la = Cut(a, 100), lb = Cut(b, 50);
  EXPECT_EQ(CrossMemoryCopy(::getpid(), false, la, lb, 100), CmaResult::kFault);
}

TEST(Cma, AnUnmappedAddressIsAFault) {
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  ::munmap(page, 4096);
  std::vector<std::uint8_t> local(64);
  const iovec l{local.data(), 64};
  const iovec r{page, 64};
  EXPECT_EQ(CrossMemoryCopy(::getpid(), false, {&l, 1}, {&r, 1}, 64), CmaResult::kFault);
  EXPECT_EQ(CrossMemoryCopy(::getpid(), true, {&l, 1}, {&r, 1}, 64), CmaResult::kFault);
}

TEST(Cma, AProcessThatIsNotThereIsARefusal) {
  // A pid that cannot exist (above pid_max's ceiling).
  std::vector<std::uint8_t> local(8);
  const iovec l{local.data(), 8};
  const iovec r{local.data(), 8};
  EXPECT_EQ(CrossMemoryCopy(4194304 + 7, false, {&l, 1}, {&r, 1}, 8), CmaResult::kRefused);
}

TEST(Cma, TheProbeComparesWhatItReads) {
  const std::uint64_t here[2] = {0x1234, 0x5678};
  const std::uint64_t same[2] = {0x1234, 0x5678};
  const std::uint64_t other[2] = {0x1234, 0x5679};
  EXPECT_TRUE(ProbeCrossMemory(::getpid(), reinterpret_cast<std::uint64_t>(here), same, sizeof same));
  EXPECT_FALSE(ProbeCrossMemory(::getpid(), reinterpret_cast<std::uint64_t>(here), other, sizeof other));
  EXPECT_FALSE(ProbeCrossMemory(0, reinterpret_cast<std::uint64_t>(here), same, sizeof same));
  EXPECT_FALSE(ProbeCrossMemory(::getpid(), 8, same, sizeof same)) << "an address nobody maps";
}

TEST(Cma, SegmentIovecsCoverTheAskedRange) {
  const Segment segments[] = {{0x1000, 100, 1}, {0x2000, 50, 1}, {0x3000, 200, 1}};
  iovec out[4];
  ASSERT_EQ(SegmentIovecs(segments, 120, 100, out), 2u);
  EXPECT_EQ(reinterpret_cast<std::uint64_t>(out[0].iov_base), 0x2000u + 20);
  EXPECT_EQ(out[0].iov_len, 30u);
  EXPECT_EQ(reinterpret_cast<std::uint64_t>(out[1].iov_base), 0x3000u);
  EXPECT_EQ(out[1].iov_len, 70u);
  EXPECT_EQ(SegmentIovecs(segments, 0, 351, out), 0u) << "more than the segments hold";
  iovec one[1];
  EXPECT_EQ(SegmentIovecs(segments, 0, 150, one), 0u) << "more pieces than room";
  EXPECT_EQ(SegmentIovecs(segments, 0, 0, one), 0u);
}

}  // namespace
}  // namespace softdat::transport::shm
