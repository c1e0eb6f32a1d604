// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A descriptor that closes itself: the shared-memory path holds a socket and memfds per
// connection and passes them between processes, and every error path must give them back. Every
// descriptor it opens or receives is close-on-exec (a program the consumer starts must not keep a
// connection, or a segment, alive).
#pragma once

#include <unistd.h>

#include <utility>

namespace softdat::transport::shm {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace softdat::transport::shm
