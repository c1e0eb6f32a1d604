// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// ProcessResources from /proc/self.
#include "testing/ledger/process_resources.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace softdat::testing {
namespace {

int CountFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int count = 0;
  while (const dirent* entry = readdir(dir))
    if (entry->d_name[0] != '.') ++count;
  closedir(dir);
  return count - 1;  // the descriptor of the directory being read
}

std::uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

std::uint64_t PeakResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    std::uint64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}

}  // namespace

ProcessResources SampleProcessResources() {
  ProcessResources resources;
  resources.fds = CountFds();
  resources.rss_bytes = ResidentBytes();
  resources.peak_rss_bytes = PeakResidentBytes();
  return resources;
}

std::string Describe(const ProcessResources& resources) {
  char text[128];
  std::snprintf(text, sizeof text, "fds %d, rss %.1f MiB, peak %.1f MiB", resources.fds,
                static_cast<double>(resources.rss_bytes) / (1 << 20),
                static_cast<double>(resources.peak_rss_bytes) / (1 << 20));
  return text;
}

}  // namespace softdat::testing
