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

// This process's resources now; fields read as 0 where /proc cannot be read.
ProcessResources SampleProcessResources();

// "fds 12, rss 34.5 MiB, peak 40.1 MiB"
std::string Describe(const ProcessResources& resources);

}  // namespace softdat::testing
