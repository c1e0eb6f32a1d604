// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Every saved input of one fuzz target — its seed corpus and the inputs of the crashes it found —
// runs once through the target in the normal build (and under --config=asan, ubsan, tsan). A
// crash fixed once stays fixed: the target's own checks abort on a regression. The folders come
// as arguments (BUILD.bazel); each must hold at least one input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/fuzz/replay.h"

namespace {

std::vector<std::string>& Folders() {
  static std::vector<std::string> folders;
  return folders;
}

TEST(FuzzCorpus, EverySavedInputRunsClean) {
  ASSERT_FALSE(Folders().empty()) << "no corpus folder given";
  for (const std::string& folder : Folders()) {
    const std::vector<std::string> files = softdat::fuzz::InputFiles({folder});
    EXPECT_FALSE(files.empty()) << folder << " holds no input";
    for (const std::string& file : files) {
      SCOPED_TRACE(file);
      std::string why;
      EXPECT_TRUE(softdat::fuzz::ReplayFile(file, why)) << why;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int fake_argc = 1;
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&fake_argc, &argv);
  for (int i = 1; i < argc; ++i) Folders().emplace_back(argv[i]);
  return RUN_ALL_TESTS();
}
