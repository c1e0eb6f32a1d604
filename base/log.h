// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Diagnostics: one line per event on stderr, prefixed "softdat:", filtered by the SOFTDAT_LOG
// environment variable (error, warn, info, debug; default warn). Formatting happens only when the
// level is enabled, so a disabled debug line on a hot path costs one load and one compare.
#pragma once

#include <cstdarg>

namespace softdat {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// The level in force (read once from SOFTDAT_LOG).
LogLevel CurrentLogLevel();

// Writes "softdat: <level>: <message>\n" to stderr in one write(2) so lines of concurrent threads
// never interleave. Messages longer than 1 KiB are cut.
void LogLine(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace softdat

#define SOFTDAT_LOG(level, ...)                                                    \
  do {                                                                             \
    if (static_cast<int>(::softdat::LogLevel::level) <=                            \
        static_cast<int>(::softdat::CurrentLogLevel()))                            \
      ::softdat::LogLine(::softdat::LogLevel::level, __VA_ARGS__);                 \
  } while (0)
