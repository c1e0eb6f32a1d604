// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// SpareCpu: reading the runnable count out of /proc/loadavg's text, and the live file.
#include "transport/tcp/spare_cpu.h"

#include <gtest/gtest.h>

namespace softdat::transport::tcp {
namespace {

TEST(SpareCpu, TheRunnableCountIsTheFourthFieldBeforeTheSlash) {
  EXPECT_EQ(SpareCpu::RunnableIn("0.50 0.40 0.30 3/244 21378\n"), 3u);
  EXPECT_EQ(SpareCpu::RunnableIn("12.00 9.10 8.00 17/1022 1"), 17u);
}

TEST(SpareCpu, TextWithoutTheFieldIsNoAnswer) {
  EXPECT_EQ(SpareCpu::RunnableIn(""), std::nullopt);
  EXPECT_EQ(SpareCpu::RunnableIn("0.50 0.40 0.30"), std::nullopt);
  EXPECT_EQ(SpareCpu::RunnableIn("0.50 0.40 0.30 x/244 1"), std::nullopt);
  EXPECT_EQ(SpareCpu::RunnableIn("0.50 0.40 0.30 3"), std::nullopt);
}

// The answer is cached for kRefreshNs: asking again within it reads nothing and says the same.
TEST(SpareCpu, AnAnswerHoldsForTheRefreshPeriod) {
  SpareCpu spare;
  const bool first = spare.Available(1'000'000'000);
  EXPECT_EQ(spare.Available(1'000'000'000 + SpareCpu::kRefreshNs - 1), first);
}

}  // namespace
}  // namespace softdat::transport::tcp
