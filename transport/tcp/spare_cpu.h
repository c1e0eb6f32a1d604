// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Whether this machine has a CPU that no runnable task waits for, as the progress thread asks
// before it busy-polls: a spin on a CPU someone else needs takes it from them (two processes that
// spin on memory on a 2-CPU machine wait for the spinner's time slice, milliseconds), while a
// sleeping thread is run at once when an arrival wakes it. The kernel's count of runnable tasks
// (/proc/loadavg's fourth field, this thread included) against the online CPUs, read at most
// once per kRefreshNs.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace softdat::transport::tcp {

class SpareCpu {
 public:
  static constexpr std::uint64_t kRefreshNs = 1'000'000;

  SpareCpu();  // without /proc/loadavg, or with one usable CPU, it never says yes
  ~SpareCpu();
  SpareCpu(const SpareCpu&) = delete;
  SpareCpu& operator=(const SpareCpu&) = delete;

  // Whether a busy-poll now costs nobody a CPU (the answer read within the last kRefreshNs).
  bool Available(std::uint64_t now_ns);

  // The runnable count in /proc/loadavg's text ("0.50 0.40 0.30 3/244 21378": 3).
  static std::optional<std::uint32_t> RunnableIn(std::string_view loadavg);

 private:
  int fd_ = -1;
  std::uint32_t cpus_ = 0;
  std::uint64_t read_ns_ = 0;
  bool available_ = false;
};

}  // namespace softdat::transport::tcp
