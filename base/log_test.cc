// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The logger's choices, each made in a child process of its own (SOFTDAT_LOG and
// SOFTDAT_LOG_FILE are read once per process): levels per subsystem, the file destination with
// %p, and the warnings for words it cannot use.
#include "base/log.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace softdat {
namespace {

static_assert(LogSubsystemOfPath("transport/tcp/connection_rx.cc") == LogSubsystem::kTcp);
static_assert(LogSubsystemOfPath("transport/shm/connection_rx.cc") == LogSubsystem::kShm);
static_assert(LogSubsystemOfPath("transport/verbs/verbs_transport.cc") == LogSubsystem::kVerbs);
static_assert(LogSubsystemOfPath("transport/ia_params.cc") == LogSubsystem::kTransport);
static_assert(LogSubsystemOfPath("core/ep.cc") == LogSubsystem::kCore);
static_assert(LogSubsystemOfPath("dat/status_map.cc") == LogSubsystem::kDat);
static_assert(LogSubsystemOfPath("/home/me/tools/softdat/srq/srq_pool.cc") == LogSubsystem::kSrq);
static_assert(LogSubsystemOfPath("tools/datperf/main.cc") == LogSubsystem::kTools);
static_assert(LogSubsystemOfPath("external/boost/x.hpp") == LogSubsystem::kOther);
static_assert(LogSubsystemOfPath("base/log_test.cc") == LogSubsystem::kOther);

class Log : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// Exits 0 when every subsystem's level is `expected` but for `tcp` (tcp_expected).
[[noreturn]] void CheckLevels(const char* setting, LogLevel expected, LogLevel tcp_expected) {
  ::setenv("SOFTDAT_LOG", setting, 1);
  for (int i = 0; i < static_cast<int>(LogSubsystem::kCount); ++i) {
    const LogSubsystem subsystem = static_cast<LogSubsystem>(i);
    if (LogLevelOf(subsystem) != (subsystem == LogSubsystem::kTcp ? tcp_expected : expected)) std::_Exit(10 + i);
  }
  std::_Exit(0);
}

TEST_F(Log, DefaultIsWarnEverywhere) {
  EXPECT_EXIT(
      {
        ::unsetenv("SOFTDAT_LOG");
        for (int i = 0; i < static_cast<int>(LogSubsystem::kCount); ++i)
          if (LogLevelOf(static_cast<LogSubsystem>(i)) != LogLevel::kWarn) std::_Exit(1);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(Log, OneLevelForAll) {
  EXPECT_EXIT(CheckLevels("debug", LogLevel::kDebug, LogLevel::kDebug), ::testing::ExitedWithCode(0), "");
}

TEST_F(Log, SubsystemLevelOverTheDefaultInEitherOrder) {
  EXPECT_EXIT(CheckLevels("warn,tcp:debug", LogLevel::kWarn, LogLevel::kDebug), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(CheckLevels("tcp:debug,error", LogLevel::kError, LogLevel::kDebug), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(CheckLevels(" info , tcp:error ", LogLevel::kInfo, LogLevel::kError), ::testing::ExitedWithCode(0), "");
}

TEST_F(Log, WordsItCannotUseAreSaidOnceAndIgnored) {
  EXPECT_EXIT(CheckLevels("tcp:debug,loud,nosuch:info", LogLevel::kWarn, LogLevel::kDebug),
              ::testing::ExitedWithCode(0),
              "softdat: warn: SOFTDAT_LOG: \"loud\" names no level .*\n"
              "softdat: warn: SOFTDAT_LOG: unknown subsystem \"nosuch\"");
}

TEST_F(Log, LinesFollowTheSubsystemLevel) {
  // This file is no subsystem's: it follows the default level.
  EXPECT_EXIT(
      {
        ::setenv("SOFTDAT_LOG", "error,tcp:debug", 1);
        SOFTDAT_LOG(kWarn, "hidden warning");
        SOFTDAT_LOG(kError, "shown error %d", 7);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "^softdat: error: shown error 7\n$");
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(Log, FileTakesTheLinesWithTheProcessIdInItsName) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/logs";
  ASSERT_EQ(::system(("rm -rf " + dir + " && mkdir " + dir).c_str()), 0);
  EXPECT_EXIT(
      {
        ::setenv("SOFTDAT_LOG", "info", 1);
        ::setenv("SOFTDAT_LOG_FILE", (dir + "/softdat-%p.log").c_str(), 1);
        SOFTDAT_LOG(kInfo, "into the file");
        SOFTDAT_LOG(kWarn, "and another line");
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      "^$");  // nothing on stderr
  DIR* folder = ::opendir(dir.c_str());
  ASSERT_NE(folder, nullptr);
  std::string found;
  while (const dirent* entry = ::readdir(folder))
    if (std::string(entry->d_name).rfind("softdat-", 0) == 0) found = entry->d_name;
  ::closedir(folder);
  ASSERT_NE(found, "") << "no softdat-PID.log in " << dir;
  EXPECT_TRUE(found.find_first_not_of("0123456789", 8) == found.size() - 4) << found;  // softdat-<digits>.log
  EXPECT_EQ(ReadAll(dir + "/" + found), "softdat: info: into the file\nsoftdat: warn: and another line\n");
}

TEST_F(Log, FileThatCannotBeOpenedSaysSoOnStderr) {
  EXPECT_EXIT(
      {
        ::setenv("SOFTDAT_LOG_FILE", "/nonexistent-folder/softdat.log", 1);
        SOFTDAT_LOG(kWarn, "still logged");
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0),
      "softdat: warn: SOFTDAT_LOG_FILE: cannot open /nonexistent-folder/softdat.log: No such file or directory; "
      "logging to stderr\nsoftdat: warn: still logged\n");
}

}  // namespace
}  // namespace softdat
