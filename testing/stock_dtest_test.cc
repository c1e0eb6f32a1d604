// Starts the stock `dtest` from dapl2-utils, unchanged, against softdat through DAT_OVERRIDE, and
// shows that libdat2 loads our library and enters our provider. Until the data path exists, dtest
// itself cannot pass; this test asserts on our provider being entered, in a bounded time.
#include <gtest/gtest.h>

#include <chrono>

#include "testing/dat_conf.h"
#include "testing/subprocess.h"

namespace softdat::testing {
namespace {

TEST(StockDtest, LoadsSoftdatAndOpensItsIa) {
  const std::string conf = InstallDatConf({{"softdat-tcp", "tcp 127.0.0.1"}});
  const SubprocessResult result =
      RunSubprocess({"dtest", "-P", "softdat-tcp"},
                    {{"DAT_OVERRIDE", conf}, {"SOFTDAT_LOG", "info"}}, std::chrono::seconds(30));
  SCOPED_TRACE(result.output);
  EXPECT_NE(result.exit_code, 127) << "dtest not found: install dapl2-utils (tools/dev does)";
  EXPECT_NE(result.output.find("softdat: info: dat_provider_init(softdat-tcp): registered"),
            std::string::npos);
  EXPECT_NE(result.output.find("softdat: info: dat_ia_open(softdat-tcp): opened"),
            std::string::npos);
  EXPECT_EQ(result.signal, 0) << "dtest must not crash inside softdat";
}

}  // namespace
}  // namespace softdat::testing
