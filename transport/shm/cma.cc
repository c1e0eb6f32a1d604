// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// process_vm_readv/writev with resumption and result classes; the probe; Yama (cma.h).
#include "transport/shm/cma.h"

#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace softdat::transport::shm {
namespace {

// A position in a list of pieces.
class Cursor {
 public:
  explicit Cursor(std::span<const iovec> list) : list_(list) {}

  // Fills `out` with the pieces from here, `limit` bytes at most (the last one trimmed): how many
  // were used, and their sum in `sum`.
  std::size_t Fill(std::span<iovec> out, std::uint64_t limit, std::uint64_t& sum) const {
    std::size_t used = 0;
    sum = 0;
    std::uint64_t offset = offset_;
    for (std::size_t i = index_; i < list_.size() && used < out.size() && sum < limit; ++i) {
      const std::uint64_t n = std::min<std::uint64_t>(list_[i].iov_len - offset, limit - sum);
      if (n == 0) continue;
      out[used++] = iovec{static_cast<char*>(list_[i].iov_base) + offset, static_cast<std::size_t>(n)};
      sum += n;
      offset = 0;
    }
    return used;
  }

  void Advance(std::uint64_t bytes) {
    while (bytes > 0 && index_ < list_.size()) {
      const std::uint64_t left = list_[index_].iov_len - offset_;
      if (bytes < left) {
        offset_ += bytes;
        return;
      }
      bytes -= left;
      ++index_;
      offset_ = 0;
    }
  }

 private:
  std::span<const iovec> list_;
  std::size_t index_ = 0;
  std::uint64_t offset_ = 0;
};

}  // namespace

bool ProbeCrossMemory(pid_t pid, std::uint64_t address, const void* expected, std::size_t n) {
  std::uint8_t buffer[64];
  if (pid <= 0 || n > sizeof buffer) return false;
  iovec local{buffer, n};
  iovec remote{reinterpret_cast<void*>(address), n};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n) &&
         std::memcmp(buffer, expected, n) == 0;
}

CmaResult CrossMemoryCopy(pid_t pid, bool write, std::span<const iovec> local_list, std::span<const iovec> remote_list,
                          std::uint64_t bytes) {
  constexpr std::size_t kBatch = 64;  // pieces per call, well under IOV_MAX
  iovec local[kBatch];
  iovec remote[kBatch];
  Cursor local_at(local_list);
  Cursor remote_at(remote_list);
  while (bytes > 0) {
    // Both sides of one call describe the same number of bytes.
    std::uint64_t local_sum = 0, remote_sum = 0;
    std::size_t nl = local_at.Fill(local, bytes, local_sum);
    const std::size_t nr = remote_at.Fill(remote, local_sum, remote_sum);
    if (remote_sum < local_sum) nl = local_at.Fill(local, remote_sum, local_sum);
    if (local_sum == 0) return CmaResult::kFault;  // the lists hold fewer bytes than asked
    const ssize_t n = write ? ::process_vm_writev(pid, local, nl, remote, nr, 0)
                            : ::process_vm_readv(pid, local, nl, remote, nr, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EPERM || errno == ESRCH ? CmaResult::kRefused : CmaResult::kFault;
    }
    if (n == 0) return CmaResult::kFault;
    local_at.Advance(static_cast<std::uint64_t>(n));
    remote_at.Advance(static_cast<std::uint64_t>(n));
    bytes -= std::min<std::uint64_t>(static_cast<std::uint64_t>(n), bytes);
  }
  return CmaResult::kDone;
}

std::size_t SegmentIovecs(std::span<const Segment> segments, std::uint64_t offset, std::uint64_t bytes,
                          std::span<iovec> out) {
  std::size_t used = 0;
  for (const Segment& s : segments) {
    if (bytes == 0) break;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    if (used == out.size()) return 0;
    const std::uint64_t n = std::min<std::uint64_t>(bytes, s.length - offset);
    out[used++] = iovec{reinterpret_cast<void*>(s.address + offset), static_cast<std::size_t>(n)};
    bytes -= n;
    offset = 0;
  }
  return bytes == 0 ? used : 0;
}

int YamaPtraceScope() {
  std::FILE* file = std::fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
  if (file == nullptr) return -1;
  int scope = -1;
  if (std::fscanf(file, "%d", &scope) != 1) scope = -1;
  std::fclose(file);
  return scope;
}

bool AllowAttachBy(pid_t pid) { return ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(pid), 0, 0, 0) == 0; }

}  // namespace softdat::transport::shm
