// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// SpareCpu: /proc/loadavg read with one pread on a descriptor kept open.
#include "transport/tcp/spare_cpu.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <charconv>

namespace softdat::transport::tcp {

SpareCpu::SpareCpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  // A process held to one CPU shares it with its consumer's thread: never spin there.
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return;
  cpus_ = static_cast<std::uint32_t>(get_nprocs());
  fd_ = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
}

SpareCpu::~SpareCpu() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::uint32_t> SpareCpu::RunnableIn(std::string_view loadavg) {
  std::size_t at = 0;
  for (int field = 0; field < 3; ++field) {
    at = loadavg.find(' ', at);
    if (at == std::string_view::npos) return std::nullopt;
    ++at;
  }
  std::uint32_t runnable = 0;
  const char* end = loadavg.data() + loadavg.size();
  const auto [next, error] = std::from_chars(loadavg.data() + at, end, runnable);
  if (error != std::errc() || next == end || *next != '/') return std::nullopt;
  return runnable;
}

bool SpareCpu::Available(std::uint64_t now_ns) {
  if (fd_ < 0) return false;
  if (read_ns_ != 0 && now_ns - read_ns_ < kRefreshNs) return available_;
  read_ns_ = now_ns;
  char text[128];
  const ssize_t n = ::pread(fd_, text, sizeof text, 0);
  const std::optional<std::uint32_t> runnable =
      n > 0 ? RunnableIn(std::string_view(text, static_cast<std::size_t>(n))) : std::nullopt;
  available_ = runnable.has_value() && *runnable <= cpus_;
  return available_;
}

}  // namespace softdat::transport::tcp
