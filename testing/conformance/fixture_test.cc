// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The fixture's own rules, the ones that keep the suite from going green by skipping: a softdat IA
// without SRQs fails, and asking for a provider attribute the IA does not report fails.
#include <gtest/gtest-spi.h>

#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

TEST(RequireSrqSupport, ASoftdatIaWithoutSrqsFailsTheTest) {
  EXPECT_FATAL_FAILURE(RequireSrqSupport("softdat", DAT_FALSE), "srq_supported FALSE");
}

TEST(RequireSrqSupport, AnIaWithSrqsPasses) {
  RequireSrqSupport("softdat", DAT_TRUE);
  EXPECT_FALSE(::testing::Test::HasFailure());
  EXPECT_FALSE(::testing::Test::IsSkipped());
}

using ProviderAttributes = ConformanceTest;

TEST_F(ProviderAttributes, AnAttributeTheIaDoesNotReportFailsTheTest) {
  EXPECT_NONFATAL_FAILURE(EXPECT_FALSE(ProviderSays("SOFTDAT_NO_SUCH_ATTRIBUTE")), "SOFTDAT_NO_SUCH_ATTRIBUTE");
  EXPECT_NONFATAL_FAILURE(EXPECT_FALSE(ProviderSays("SOFTDAT_NO_SUCH_ATTRIBUTE", "tcp")), "SOFTDAT_NO_SUCH_ATTRIBUTE");
}

TEST_F(ProviderAttributes, TheAttributesTheSuiteAsksForAreReported) {
  EXPECT_TRUE(ProviderSays("SOFTDAT_TRANSPORT", SuiteIsTcp() ? "tcp" : "verbs"));
  EXPECT_FALSE(ProviderSays("SOFTDAT_TRANSPORT", "no such transport"));
  // Reported (TRUE or FALSE): a missing one fails inside ProviderSays.
  (void)ProviderSays("SOFTDAT_SRQ_RESIZE");
  (void)ProviderSays("SOFTDAT_RNR_WAITS");
}

}  // namespace
}  // namespace softdat::conformance
