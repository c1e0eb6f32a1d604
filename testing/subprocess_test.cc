// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The child of SpawnProcess/RunSubprocess makes no allocation between fork and exec. Regression
// test of TwoProcesses.SendFromAnotherProcessLandsInSrqBuffersInSendOrder failing under
// --config=asan with "the peer process never connected": RunSubprocess called setenv (for the
// sanitizer's LD_PRELOAD) in the forked child, and a fork that caught another thread (softdat's
// progress thread) holding the ASan allocator's lock left the child hung in malloc before exec
// (reproduced outside Bazel: 5 hung children in 2000 forks). The race is made deterministic here:
// this binary replaces malloc, and a fork handler marks the child, whose first allocation before
// exec then ends it with status 86 instead of running the program.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "testing/subprocess.h"

// Sanitizer runtimes own malloc: the replacement exists only in plain builds, where the test
// checks the rule; under a sanitizer it still runs the programs.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define SOFTDAT_REPLACE_MALLOC 1
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
}

namespace {
// Set in the child of a fork until exec replaces the image.
volatile sig_atomic_t g_forked_child = 0;
void CheckNotForkedChild() {
  if (g_forked_child) _exit(86);
}
}  // namespace

extern "C" {
void* malloc(size_t n) {
  CheckNotForkedChild();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  CheckNotForkedChild();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  CheckNotForkedChild();
  return __libc_realloc(p, n);
}
void free(void* p) { __libc_free(p); }
}
#endif

namespace softdat::testing {
namespace {

using namespace std::chrono_literals;

class Subprocess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
#ifdef SOFTDAT_REPLACE_MALLOC
    pthread_atfork(nullptr, nullptr, [] { g_forked_child = 1; });
#endif
  }
};

// The child is this binary again (main below), not a shell: under a sanitizer the child gets
// the runtime preloaded, which an uninstrumented shell does not survive (ThreadSanitizer).
std::vector<std::string> PrintEnv(const char* name) { return {"/proc/self/exe", "--print-env", name}; }

TEST_F(Subprocess, TheChildAllocatesNothingBeforeExecEvenWithExtraEnvironment) {
  const SubprocessResult result =
      RunSubprocess(PrintEnv("SOFTDAT_SUBPROCESS_TEST"), {{"SOFTDAT_SUBPROCESS_TEST", "seen"}}, 20s);
  EXPECT_NE(result.exit_code, 86) << "the child allocated between fork and exec";
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "1 seen\n");
}

TEST_F(Subprocess, AnExtraVariableReplacesTheInheritedOne) {
  setenv("SOFTDAT_SUBPROCESS_TEST", "inherited", 1);
  const SubprocessResult result =
      RunSubprocess(PrintEnv("SOFTDAT_SUBPROCESS_TEST"), {{"SOFTDAT_SUBPROCESS_TEST", "given"}}, 20s);
  unsetenv("SOFTDAT_SUBPROCESS_TEST");
  EXPECT_EQ(result.output, "1 given\n") << "one entry, the given value";
}

TEST_F(Subprocess, AMissingProgramExits127AndABoundKillsASleeper) {
  EXPECT_EQ(RunSubprocess({"softdat-no-such-program"}, {}, 20s).exit_code, 127);
  const SubprocessResult slow = RunSubprocess({"sleep", "30"}, {}, 200ms);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.signal, SIGKILL);
}

// What a child writes to stdout reaches the output even when it never flushes: a stock consumer
// killed at its time bound still says how far it got. The child writes a line and ends with
// _exit, which flushes nothing, as a kill would.
TEST_F(Subprocess, AChildsStdoutIsLineBufferedSoALineSurvivesAnEndWithoutFlush) {
  const SubprocessResult result = RunSubprocess({"/proc/self/exe", "--print-and-vanish"}, {}, 20s);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, "before the end\n") << "the line was left in the child's stdio buffer";
}

}  // namespace
}  // namespace softdat::testing

// `--print-env NAME`: prints how many entries of the environment are NAME, and its value;
// `--print-and-vanish`: see the last test.
int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--print-env") {
    const std::string prefix = std::string(argv[2]) + "=";
    int entries = 0;
    for (char** e = environ; *e != nullptr; ++e) entries += std::string(*e).rfind(prefix, 0) == 0 ? 1 : 0;
    const char* value = std::getenv(argv[2]);
    std::printf("%d %s\n", entries, value != nullptr ? value : "");
    return 0;
  }
  // `--print-and-vanish`: a line to stdout, then an end that flushes nothing.
  if (argc == 2 && std::string(argv[1]) == "--print-and-vanish") {
    std::printf("before the end\n");
    _exit(0);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
