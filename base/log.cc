// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Implementation of the stderr logger described in log.h.
#include "base/log.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace softdat {
namespace {

LogLevel ReadLevel() {
  const char* env = std::getenv("SOFTDAT_LOG");
  if (env == nullptr) return LogLevel::kWarn;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  if (std::strcmp(env, "info") == 0) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  return LogLevel::kWarn;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "?";
}

}  // namespace

LogLevel CurrentLogLevel() {
  static const LogLevel level = ReadLevel();
  return level;
}

void LogLine(LogLevel level, const char* format, ...) {
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
  ssize_t ignored = ::write(STDERR_FILENO, line, length);
  (void)ignored;
}

}  // namespace softdat
