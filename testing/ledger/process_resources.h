// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test helper: what a process holds that a leak would grow — open file descriptors
// (/proc/self/fd) and resident memory (/proc/self/statm, peak from /proc/self/status VmHWM) — so a
// test can take a snapshot before a workload and compare after it.
#pragma once

#include <cstdint>
#include <string>

namespace softdat::testing {

struct ProcessResources {
  int fds = 0;                      // open descriptors, the one used to count them excluded
  std::uint64_t rss_bytes = 0;      // resident set now
  std::uint64_t peak_rss_bytes = 0;  // the high-water mark of the resident set (VmHWM)
};

// Whether resident memory says anything about leaks or allocation sizes: under ASan or TSan the
// allocator's quarantine and shadow memory make it grow by design (ASan's quarantine alone holds
// 256 MiB of freed blocks), so memory is judged in plain builds, and LeakSanitizer (a process
// exits non-zero on a leak) judges leaks in ASan builds.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kResidentMemoryIsMeaningful = false;
#else
inline constexpr bool kResidentMemoryIsMeaningful = true;
#endif

// This process's resources now; fields read as 0 where /proc cannot be read.
ProcessResources SampleProcessResources();

// "fds 12, rss 34.5 MiB, peak 40.1 MiB"
std::string Describe(const ProcessResources& resources);

}  // namespace softdat::testing
