// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// main() of a fuzz target built without libFuzzer (the normal GCC build): runs each file given
// (folders: every file in them) once through the target, so a saved crash input can be replayed
// under any --config (asan, ubsan, tsan, a debugger). libFuzzer's own flags (-foo=bar) are ignored.
#include <cstdio>
#include <string>
#include <vector>

#include "testing/fuzz/replay.h"

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') paths.emplace_back(argv[i]);
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...  (runs each input once; no fuzzing in this build)\n", argv[0]);
    return 2;
  }
  int failed = 0;
  std::size_t ran = 0;
  for (const std::string& file : softdat::fuzz::InputFiles(paths)) {
    std::string why;
    if (!softdat::fuzz::ReplayFile(file, why)) {
      std::fprintf(stderr, "%s\n", why.c_str());
      ++failed;
      continue;
    }
    ++ran;
  }
  std::fprintf(stderr, "replayed %zu inputs\n", ran);
  return failed == 0 && ran > 0 ? 0 : 1;
}
