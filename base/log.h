// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Diagnostics: one line per event, "softdat: <level>: <message>", on stderr or in the file
// SOFTDAT_LOG_FILE names, filtered per subsystem by SOFTDAT_LOG.
//
// SOFTDAT_LOG is a comma-separated list of LEVEL (the default for every subsystem) and
// SUBSYSTEM:LEVEL words, the later word winning: "debug", "warn,tcp:debug", "error,core:info".
// Levels: error, warn (the default), info, debug. Subsystems (kLogSubsystems): dat, core, srq,
// evd, transport, tcp, shm, verbs, tools. A line's subsystem is the folder of the file that logs it, worked
// out when the file is compiled, so choosing costs nothing at run time; a disabled line costs one
// load and one compare, and is never formatted.
//
// SOFTDAT_LOG_FILE names a file the lines are appended to instead of stderr; "%p" in it becomes
// the process id and "%h" the host name, so two processes of one run keep separate files. When
// it cannot be opened, lines go to stderr after one warning saying why.
#pragma once

#include <cstdarg>
#include <cstdint>

namespace softdat {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

enum class LogSubsystem : std::uint8_t { kOther, kDat, kCore, kSrq, kEvd, kTransport, kTcp, kShm, kVerbs, kTools, kCount };

// The subsystem names SOFTDAT_LOG accepts, indexed by LogSubsystem (kOther has none: it follows
// the default level).
inline constexpr const char* kLogSubsystems[] = {"", "dat", "core", "srq", "evd", "transport", "tcp", "shm", "verbs", "tools"};
static_assert(sizeof kLogSubsystems / sizeof kLogSubsystems[0] == static_cast<int>(LogSubsystem::kCount));

// The subsystem of a source file, from its path as the compiler was given it ("transport/tcp/
// wire.cc" or "/home/me/tools/softdat/core/ep.cc"): the last of our folders that starts a path
// component.
constexpr LogSubsystem LogSubsystemOfPath(const char* path) {
  struct Folder {
    const char* prefix;
    LogSubsystem subsystem;
  };
  // Longest first: transport/tcp/ before transport/.
  constexpr Folder kFolders[] = {{"transport/tcp/", LogSubsystem::kTcp}, {"transport/shm/", LogSubsystem::kShm},
                                 {"transport/verbs/", LogSubsystem::kVerbs},
                                 {"transport/", LogSubsystem::kTransport}, {"core/", LogSubsystem::kCore},
                                 {"dat/", LogSubsystem::kDat},            {"srq/", LogSubsystem::kSrq},
                                 {"evd/", LogSubsystem::kEvd},            {"tools/", LogSubsystem::kTools}};
  LogSubsystem found = LogSubsystem::kOther;
  for (const char* start = path; *start != '\0'; ++start) {
    if (start != path && start[-1] != '/') continue;  // folder names start a path component
    for (const Folder& folder : kFolders) {
      const char* p = start;
      const char* q = folder.prefix;
      while (*q != '\0' && *p == *q) ++p, ++q;
      if (*q == '\0') {
        found = folder.subsystem;
        break;
      }
    }
  }
  return found;
}

// The level in force for `subsystem` (SOFTDAT_LOG, read once).
LogLevel LogLevelOf(LogSubsystem subsystem);

// Writes "softdat: <level>: <message>\n" in one write(2), so lines of concurrent threads (and
// processes sharing a log file) never interleave. Messages longer than 1 KiB are cut.
void LogLine(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

// The environment variables the logger reads, for datinfo -e.
struct LogVariable {
  const char* name;
  const char* default_value;
  const char* meaning;
};
inline constexpr LogVariable kLogVariables[] = {
    {"SOFTDAT_LOG", "warn",
     "log levels: LEVEL or SUBSYSTEM:LEVEL words, comma-separated (warn,tcp:debug); levels error, warn, info, "
     "debug; subsystems dat, core, srq, evd, transport, tcp, shm, verbs, tools"},
    {"SOFTDAT_LOG_FILE", "(stderr)",
     "append log lines to this file instead of stderr; %p is replaced by the process id, %h by the host name"},
};

}  // namespace softdat

#define SOFTDAT_LOG(level, ...)                                                                       \
  do {                                                                                                \
    constexpr ::softdat::LogSubsystem softdat_log_subsystem = ::softdat::LogSubsystemOfPath(__FILE__); \
    if (static_cast<int>(::softdat::LogLevel::level) <=                                               \
        static_cast<int>(::softdat::LogLevelOf(softdat_log_subsystem)))                               \
      ::softdat::LogLine(::softdat::LogLevel::level, __VA_ARGS__);                                    \
  } while (0)
