// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Shared memory between two processes: memfds sealed so that neither side can ever shrink or
// grow them (a shrunk file would turn the other side's next load into SIGBUS), mapped whole.
// The creator may also forbid writable mappings from then on (F_SEAL_FUTURE_WRITE): the peer of
// a key table can only map it read-only, while the owner keeps the writable mapping it made
// first. A memfd received from a peer is mapped only after its seals and size are checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/status.h"
#include "transport/shm/unique_fd.h"

namespace softdat::transport::shm {

// One mmap of a whole memfd, unmapped on destruction.
class Mapping {
 public:
  Mapping() = default;
  Mapping(Mapping&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  Mapping& operator=(Mapping&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { Reset(); }

  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool valid() const { return data_ != nullptr; }
  void Reset();

 private:
  friend Status CreateSharedMemory(const char*, std::size_t, bool, UniqueFd&, Mapping&);
  friend Status MapPeerMemory(int, std::size_t, std::size_t, bool, Mapping&);
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// A zero-filled memfd of `bytes` (a multiple of the page size), mapped read-write, sealed
// against shrinking, growing and further sealing; with `peers_read_only` also against any new
// writable mapping or write(2), so the fd can be handed to a peer that may only read.
// kInsufficientResources (kMemory) when the kernel refuses, with a log line saying why.
Status CreateSharedMemory(const char* name, std::size_t bytes, bool peers_read_only, UniqueFd& fd, Mapping& mapping);

// Maps `fd`, a peer's memfd, read-write when `writable`, else read-only. Refused
// (kInvalidParameter, with a log line) unless the file carries the seals that fix its size for
// good (shrink, grow, seal) and its size is a multiple of the page size between `min_bytes` and
// `max_bytes`.
Status MapPeerMemory(int fd, std::size_t min_bytes, std::size_t max_bytes, bool writable, Mapping& mapping);

}  // namespace softdat::transport::shm
