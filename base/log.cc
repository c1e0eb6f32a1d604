// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The logger of log.h: SOFTDAT_LOG's levels per subsystem and SOFTDAT_LOG_FILE's destination,
// both read once, on the first line any subsystem considers.
#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace softdat {
namespace {

constexpr int kSubsystems = static_cast<int>(LogSubsystem::kCount);

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "?";
}

bool ParseLevel(std::string_view word, LogLevel& out) {
  for (LogLevel level : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug}) {
    if (word == LevelName(level)) {
      out = level;
      return true;
    }
  }
  return false;
}

// What the environment asked for, and the complaints to log once the destination is known.
struct Config {
  LogLevel levels[kSubsystems];
  int fd = STDERR_FILENO;
  std::string complaints;  // whole "softdat: warn: ..." lines
};

void Complain(Config& config, const std::string& text) { config.complaints += "softdat: warn: " + text + "\n"; }

void ReadLevels(Config& config) {
  for (LogLevel& level : config.levels) level = LogLevel::kWarn;
  const char* env = std::getenv("SOFTDAT_LOG");
  if (env == nullptr) return;
  // Defaults first, then the subsystems: "tcp:debug,warn" keeps tcp at debug.
  LogLevel fallback = LogLevel::kWarn;
  LogLevel specific[kSubsystems] = {};
  bool set[kSubsystems] = {};
  std::string_view rest(env);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view word = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
    while (!word.empty() && word.back() == ' ') word.remove_suffix(1);
    if (word.empty()) continue;
    const size_t colon = word.find(':');
    LogLevel level;
    if (!ParseLevel(colon == std::string_view::npos ? word : word.substr(colon + 1), level)) {
      Complain(config, "SOFTDAT_LOG: \"" + std::string(word) + "\" names no level (error, warn, info, debug); ignored");
      continue;
    }
    if (colon == std::string_view::npos) {
      fallback = level;
      continue;
    }
    const std::string_view name = word.substr(0, colon);
    int found = 0;
    for (int i = 1; i < kSubsystems && found == 0; ++i)
      if (name == kLogSubsystems[i]) found = i;
    if (found == 0) {
      Complain(config, "SOFTDAT_LOG: unknown subsystem \"" + std::string(name) +
                           "\" (dat, core, srq, evd, transport, tcp, shm, verbs, tools); ignored");
      continue;
    }
    specific[found] = level;
    set[found] = true;
  }
  for (int i = 0; i < kSubsystems; ++i) config.levels[i] = set[i] ? specific[i] : fallback;
}

// SOFTDAT_LOG_FILE with %p and %h replaced.
std::string LogFilePath(const char* pattern) {
  std::string path;
  for (const char* p = pattern; *p != '\0'; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      path += std::to_string(::getpid());
      ++p;
    } else if (p[0] == '%' && p[1] == 'h') {
      char host[256] = "";
      ::gethostname(host, sizeof host - 1);
      path += host;
      ++p;
    } else {
      path += *p;
    }
  }
  return path;
}

void OpenDestination(Config& config) {
  const char* pattern = std::getenv("SOFTDAT_LOG_FILE");
  if (pattern == nullptr || *pattern == '\0') return;
  const std::string path = LogFilePath(pattern);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    Complain(config, "SOFTDAT_LOG_FILE: cannot open " + path + ": " + std::strerror(errno) + "; logging to stderr");
    return;
  }
  config.fd = fd;  // held for the life of the process: lines may come from any thread until exit
}

const Config& GetConfig() {
  static const Config config = [] {
    Config made;
    const int saved_errno = errno;  // a caller may log between a failed call and reading errno
    ReadLevels(made);
    OpenDestination(made);
    if (!made.complaints.empty()) {
      const ssize_t ignored = ::write(made.fd, made.complaints.data(), made.complaints.size());
      (void)ignored;
    }
    errno = saved_errno;
    return made;
  }();
  return config;
}

}  // namespace

LogLevel LogLevelOf(LogSubsystem subsystem) {
  const int index = static_cast<int>(subsystem);
  return GetConfig().levels[index >= 0 && index < kSubsystems ? index : 0];
}

void LogLine(LogLevel level, const char* format, ...) {
  const int saved_errno = errno;
  char line[1024];
  int used = std::snprintf(line, sizeof line, "softdat: %s: ", LevelName(level));
  if (used < 0) return;
  va_list args;
  va_start(args, format);
  int body = std::vsnprintf(line + used, sizeof line - static_cast<size_t>(used) - 1, format, args);
  va_end(args);
  size_t length = static_cast<size_t>(used) + (body < 0 ? 0 : static_cast<size_t>(body));
  if (length > sizeof line - 2) length = sizeof line - 2;
  line[length++] = '\n';
  ssize_t ignored = ::write(GetConfig().fd, line, length);
  (void)ignored;
  errno = saved_errno;
}

}  // namespace softdat
